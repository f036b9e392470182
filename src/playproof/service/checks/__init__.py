"""The service's check groups, recomputed from stored evidence by fixed code.

The framework is :mod:`playproof.checks` (pure: no database, no HTTP); the
groups here read only a run record and a verification report
(:class:`StoredEvidence`).
"""

from playproof.checks import CheckGroup, CheckOutcome, CheckSpec, GroupResult, run_group
from playproof.service.checks.evidence import StoredEvidence
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
