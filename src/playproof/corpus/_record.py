"""Signed grade records: a grading run as an in-toto statement in a DSSE envelope.

Subjects: the record itself (``grade-record``), the corpus (``corpus``: the
corpus digest) and the candidate build (``candidate``: its build digest).
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from playproof.core.canonical import validate_strict
from playproof.core.report import CheckResult, VerificationReport
from playproof.corpus._grader import CaseResult, Grade
from playproof.corpus._jail import Isolation, JailLimits
from playproof.corpus._manifest import CorpusManifest
from playproof.sign import (
    Envelope,
    PredicateKind,
    SigningKey,
    VerifyingKey,
    sign_predicate,
    verify_statement,
)

__all__ = [
    "GRADE_PREDICATE_TYPE",
    "GRADE_RECORD",
    "CandidatePin",
    "GradeRecord",
    "grade_record",
    "sign_grade",
    "verify_grade",
]

GRADE_PREDICATE_TYPE = "https://playproof.dev/grade/v1"
"""The predicate type URI of a signed grade record."""

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class CandidatePin(BaseModel):
    """The candidate graded: its command line and the digest of its build."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: Annotated[list[Annotated[str, Field(max_length=4096)]], Field(max_length=64)]
    build_digest: Sha256


class GradeRecord(BaseModel):
    """One grading run: corpus pin, candidate pin, isolation used, limits, per-case results."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    corpus_id: str
    corpus_version: str
    corpus_digest: Sha256
    candidate: CandidatePin
    isolation: Isolation
    limits: dict[str, float]
    cases_per_process: Annotated[int, Field(ge=1)] = 1
    """How many cases one candidate process served (groups fixed by the manifest)."""
    results: Annotated[list[CaseResult], Field(min_length=1)]
    passed: Annotated[int, Field(ge=0)]
    denominator: Annotated[int, Field(ge=1)]
    started_at: datetime
    finished_at: datetime
    grader: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _counts_follow_results(self) -> Self:
        ids = [r.case_id for r in self.results]
        if len(set(ids)) != len(ids):
            raise ValueError("case ids repeat in the results")
        if self.denominator != len(self.results):
            raise ValueError(f"denominator {self.denominator} but {len(self.results)} results")
        if self.passed != sum(r.passed for r in self.results):
            raise ValueError(f"passed {self.passed} does not count the passing results")
        return self

    @property
    def score(self) -> float:
        """Passes over the denominator."""
        return self.passed / self.denominator

    def to_json(self) -> dict[str, Any]:
        """The record as JSON."""
        return self.model_dump(mode="json")


def grade_record(
    manifest: CorpusManifest,
    result: Grade,
    candidate: CandidatePin,
    isolation: Isolation,
    limits: JailLimits,
    started_at: datetime,
    cases_per_process: int = 1,
) -> GradeRecord:
    """The record of grading ``candidate`` on ``manifest``."""
    from importlib.metadata import version

    return GradeRecord(
        corpus_id=manifest.corpus_id,
        corpus_version=manifest.version,
        corpus_digest=manifest.digest,
        candidate=candidate,
        isolation=isolation,
        limits={
            "cpu_seconds": limits.cpu_seconds,
            "address_space_bytes": limits.address_space_bytes,
            "file_size_bytes": limits.file_size_bytes,
            "open_files": limits.open_files,
            "processes": limits.processes,
            "wall_seconds": limits.wall_seconds,
        },
        cases_per_process=max(1, cases_per_process),
        results=result.results,
        passed=result.passed,
        denominator=result.denominator,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        grader={"playproof": version("playproof"), "python": platform.python_version()},
    )


def _pins(record: GradeRecord) -> dict[str, str]:
    return {"corpus": record.corpus_digest, "candidate": record.candidate.build_digest}


def _read(text: bytes) -> GradeRecord:
    return validate_strict(GradeRecord, text, what="grade record")


GRADE_RECORD: PredicateKind[GradeRecord] = PredicateKind(
    predicate_type=GRADE_PREDICATE_TYPE,
    write=GradeRecord.to_json,
    read=_read,
    self_subject="grade-record",
    pins=_pins,
)
"""The grade-record predicate kind."""


def sign_grade(record: GradeRecord, key: SigningKey | Sequence[SigningKey]) -> Envelope:
    """Sign ``record`` as a DSSE envelope carrying its in-toto statement."""
    return sign_predicate(GRADE_RECORD, record, key)


def verify_grade(
    data: bytes | str | Any,
    trusted: VerifyingKey | Sequence[VerifyingKey] | None,
    manifest: CorpusManifest | None = None,
) -> tuple[VerificationReport, GradeRecord | None]:
    """Check a signed grade record; never raises. With ``manifest``, also its corpus pin.

    Checks: the four signature checks, ``grade-consistent`` (pass count and
    denominator follow the results; the record parsed at all) and, when a
    manifest is given, ``corpus-pinned`` (same corpus digest, same case ids).
    """
    verdict = verify_statement(GRADE_RECORD, data, trusted)
    checks = list(verdict.checks)
    record = verdict.value
    if record is None:
        checks.append(
            CheckResult(id="grade-consistent", passed=False, reason="the record could not be read")
        )
    else:
        checks.append(
            CheckResult(
                id="grade-consistent",
                passed=True,
                reason=f"{record.passed} of {record.denominator} cases passed, counts follow",
            )
        )
    if manifest is not None:
        checks.append(_corpus_check(record, manifest))
    report = VerificationReport.from_checks(checks, key_id=verdict.key_id)
    return report, record


def _corpus_check(record: GradeRecord | None, manifest: CorpusManifest) -> CheckResult:
    if record is None:
        return CheckResult(id="corpus-pinned", passed=False, reason="no record to compare")
    if record.corpus_digest != manifest.digest:
        return CheckResult(
            id="corpus-pinned",
            passed=False,
            reason=f"record corpus {record.corpus_digest[:16]}..., "
            f"manifest {manifest.digest[:16]}...",
        )
    if [r.case_id for r in record.results] != [c.id for c in manifest.cases]:
        return CheckResult(
            id="corpus-pinned", passed=False, reason="the results do not list the manifest's cases"
        )
    return CheckResult(
        id="corpus-pinned", passed=True, reason=f"{manifest.corpus_id} {manifest.version}"
    )
