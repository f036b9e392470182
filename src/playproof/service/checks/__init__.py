"""The service's check groups, recomputed from stored evidence by fixed code.

The framework is :mod:`playproof.checks` (pure: no database, no HTTP); the
groups here read only a run record, a verification report and, for a
policy-bound run, its stored artifacts (:class:`StoredEvidence`).
"""

from playproof.checks import CheckGroup, CheckOutcome, CheckSpec, GroupResult, run_group
from playproof.service.checks.evidence import StoredEvidence
from playproof.service.checks.groups import (
    GROUPS,
    decide_group,
    decide_groups,
    group_named,
    is_group_name,
)
from playproof.service.checks.policy import PolicyEvidence

__all__ = [
    "GROUPS",
    "CheckGroup",
    "CheckOutcome",
    "CheckSpec",
    "GroupResult",
    "PolicyEvidence",
    "StoredEvidence",
    "decide_group",
    "decide_groups",
    "group_named",
    "is_group_name",
    "run_group",
]
