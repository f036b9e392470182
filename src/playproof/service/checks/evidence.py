"""What the service's check groups read: a stored signed record and its verification report."""

from __future__ import annotations

from dataclasses import dataclass

from playproof.core.record import RunRecord
from playproof.core.report import VerificationReport

__all__ = ["StoredEvidence"]


@dataclass(frozen=True)
class StoredEvidence:
    """What a group may read: the signed record and the stored verification report."""

    record: RunRecord | None
    report: VerificationReport | None
