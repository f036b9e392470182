"""What the service's check groups read: a stored signed record, its report, its artifacts."""

from __future__ import annotations

from dataclasses import dataclass

from playproof.core.record import RunRecord
from playproof.core.report import VerificationReport
from playproof.service.checks.policy import PolicyEvidence

__all__ = ["StoredEvidence"]


@dataclass(frozen=True)
class StoredEvidence:
    """What a group may read: the signed record and the stored verification report.

    ``policy`` is set for a run of a policy-bound target only: its artifacts
    (possibly none stored), which the policy groups read.
    """

    record: RunRecord | None
    report: VerificationReport | None
    policy: PolicyEvidence | None = None
