"""Public documents of grades: every field listed by hand."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from playproof.core.report import CheckResult

__all__ = ["GradeDocument", "GradeProofDocument", "GradeStatusDocument"]


class _Public(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class GradeStatusDocument(_Public):
    """Where the service is with a grade record."""

    id: str
    status: Literal["pending", "verified", "rejected", "failed"]
    failed_checks: list[str]
    error_kind: str | None
    submitted_at: datetime
    finished_at: datetime | None
    proof_url: str


class GradeDocument(_Public):
    """What the signed grade record states."""

    corpus_id: str
    corpus_version: str
    corpus_digest: str
    candidate_build_digest: str
    isolation: str
    sandbox: str | None
    """``per-process`` or ``per-slot`` under bubblewrap; null under rlimits or when not kept."""
    passed: int
    denominator: int
    trust: Literal["trusted", "untrusted"]
    """What the record says; on a ``verified`` grade of a shipped corpus the server checked it
    (``corpus-pinned``), and a trusted claim about any other corpus is rejected."""
    controller_key: str | None
    """The controller key that signed the corpus (a trusted grade only)."""
    reward: int
    """The pass count for a trusted grade; zero for an untrusted one."""
    started_at: datetime
    finished_at: datetime


class GradeProofDocument(_Public):
    """The public proof of a grade: its status, the record's public fields and the checks."""

    verifier_version: str
    grade: GradeStatusDocument
    record: GradeDocument | None
    record_digest: str
    signer_key_id: str
    checks: list[CheckResult]
