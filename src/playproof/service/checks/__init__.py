"""Check groups: named groups of checks recomputed from stored evidence by fixed code.

Each check has a stable id and a fixed explanation for pass and for fail; a
check whose precondition failed fails too, saying which one. The groups read
only a run record and a verification report (no database, no network).
"""

from playproof.service.checks.framework import (
    CheckGroup,
    CheckOutcome,
    CheckSpec,
    GroupResult,
    StoredEvidence,
    run_group,
)
from playproof.service.checks.groups import GROUPS, group_named

__all__ = [
    "GROUPS",
    "CheckGroup",
    "CheckOutcome",
    "CheckSpec",
    "GroupResult",
    "StoredEvidence",
    "group_named",
    "run_group",
]
