"""Signed grade records: a grading run as an in-toto statement in a DSSE envelope.

Subjects: the record itself (``grade-record``), the corpus (``corpus``: the
corpus digest) and the candidate build (``candidate``: its build digest).
A record says whether its corpus was signed by a trusted controller key
(``trust``); an untrusted grade's ``reward`` is zero.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from playproof.core.canonical import validate_strict
from playproof.core.report import CheckResult, VerificationReport
from playproof.corpus._cgroup import MemoryCgroup
from playproof.corpus._grader import CaseResult, Grade
from playproof.corpus._jail import Isolation, JailLimits, Sandbox
from playproof.corpus._manifest import CorpusManifest
from playproof.corpus._trust import CorpusTrust, SignedClaim, Trust
from playproof.corpus._variants import VariantPin
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
    sandbox: Sandbox | None = None
    """Under bubblewrap: ``per-process`` (a new sandbox for every candidate process) or
    ``per-slot`` (the warm jail: one sandbox per grading slot, each process in namespaces and
    a uid of its own). None under rlimits, and in records written before it was kept."""
    memory_cgroup: MemoryCgroup | None = None
    """What bounded each candidate process's memory in total: control groups (``v2`` or
    ``v1``), or ``none`` (only the per-process limits). None in records written before it
    was kept."""
    limits: dict[str, float]
    cases_per_process: Annotated[int, Field(ge=1)] = 1
    """How many cases one candidate process served (groups fixed by the manifest)."""
    results: Annotated[list[CaseResult], Field(min_length=1)]
    passed: Annotated[int, Field(ge=0)]
    denominator: Annotated[int, Field(ge=1)]
    started_at: datetime
    finished_at: datetime
    grader: dict[str, str] = Field(default_factory=dict)
    trust: Trust = "untrusted"
    """``trusted`` only when a trusted controller key signed the corpus graded."""
    controller_key: Annotated[str, Field(max_length=128)] | None = None
    """The id of the controller key that signed the corpus (a trusted grade only)."""
    reward: Annotated[int, Field(ge=0)] = 0
    """The pass count for a trusted grade; zero for an untrusted one."""
    variants: tuple[VariantPin, ...] = ()
    """The ROM variants graded besides the cases (by digest; the seed is never written)."""
    variant_seed_sha256: Sha256 | None = None
    """SHA-256 of the secret seed that chose the variants (a commitment, not the seed)."""

    @model_validator(mode="after")
    def _counts_follow_results(self) -> Self:
        ids = [r.case_id for r in self.results]
        if len(set(ids)) != len(ids):
            raise ValueError("case ids repeat in the results")
        if self.denominator != len(self.results):
            raise ValueError(f"denominator {self.denominator} but {len(self.results)} results")
        if self.passed != sum(r.passed for r in self.results):
            raise ValueError(f"passed {self.passed} does not count the passing results")
        if self.reward != (self.passed if self.trust == "trusted" else 0):
            raise ValueError(f"reward {self.reward} on a {self.trust} grade of {self.passed}")
        if self.isolation == "rlimits" and self.sandbox is not None:
            raise ValueError(f"a grade under rlimits names a {self.sandbox} sandbox")
        if (self.trust == "trusted") != (self.controller_key is not None):
            raise ValueError("a trusted grade names its controller key, an untrusted one none")
        _variants_follow_results(self)
        return self

    @property
    def score(self) -> float:
        """Passes over the denominator."""
        return self.passed / self.denominator

    def to_json(self) -> dict[str, Any]:
        """The record as JSON."""
        return self.model_dump(mode="json")


def _variants_follow_results(record: GradeRecord) -> None:
    """Every variant names a graded case; a case with a failing variant does not pass."""
    if record.variants and record.variant_seed_sha256 is None:
        raise ValueError("variants were graded but the record commits to no variant seed")
    passing = {r.case_id for r in record.results if r.passed}
    cases = {r.case_id for r in record.results}
    for pin in record.variants:
        if pin.case_id not in cases:
            raise ValueError(f"a variant names {pin.case_id[:80]!r}, which is no graded case")
        if not pin.passed and pin.case_id in passing:
            raise ValueError(f"case {pin.case_id[:80]!r} passes although a variant of it failed")


def grade_record(
    manifest: CorpusManifest,
    result: Grade,
    candidate: CandidatePin,
    isolation: Isolation,
    limits: JailLimits,
    started_at: datetime,
    cases_per_process: int = 1,
    trust: CorpusTrust | None = None,
    variants: tuple[VariantPin, ...] = (),
    variant_seed_sha256: str | None = None,
    sandbox: Sandbox | None = None,
    memory_cgroup: MemoryCgroup | None = None,
) -> GradeRecord:
    """The record of grading ``candidate`` on ``manifest`` (untrusted unless ``trust`` says)."""
    from importlib.metadata import version

    trusted = trust is not None and trust.trusted
    return GradeRecord(
        corpus_id=manifest.corpus_id,
        corpus_version=manifest.version,
        corpus_digest=manifest.digest,
        candidate=candidate,
        isolation=isolation,
        sandbox=sandbox,
        memory_cgroup=memory_cgroup,
        limits={
            "cpu_seconds": limits.cpu_seconds,
            "address_space_bytes": limits.address_space_bytes,
            "file_size_bytes": limits.file_size_bytes,
            "open_files": limits.open_files,
            "processes": limits.processes,
            "total_memory_bytes": limits.total_memory_bytes,
            "wall_seconds": limits.wall_seconds,
        },
        cases_per_process=max(1, cases_per_process),
        results=result.results,
        passed=result.passed,
        denominator=result.denominator,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        grader={"playproof": version("playproof"), "python": platform.python_version()},
        trust="trusted" if trusted else "untrusted",
        controller_key=trust.key_id if trust is not None and trusted else None,
        reward=result.passed if trusted else 0,
        variants=variants,
        variant_seed_sha256=variant_seed_sha256,
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
    signed_corpus: SignedClaim | None = None,
) -> tuple[VerificationReport, GradeRecord | None]:
    """Check a signed grade record; never raises. With ``manifest``, also its corpus pin.

    Checks: the four signature checks, ``grade-consistent`` (pass count and
    denominator follow the results; the record parsed at all) and, when a
    manifest is given, ``corpus-pinned`` (same corpus id, version and digest,
    same case ids; a record claiming a trusted corpus also needs
    ``signed_corpus``, the manifest's corpus signature as verified under a
    trusted controller key, to name that same corpus and to be made by the
    controller key the record names).
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
                reason=f"{record.passed} of {record.denominator} cases passed, counts follow"
                + (
                    f"; {len(record.variants)} variants bound by digest, "
                    f"{sum(not v.passed for v in record.variants)} failed"
                    if record.variants
                    else ""
                ),
            )
        )
    if manifest is not None:
        checks.append(_corpus_check(record, manifest, signed_corpus))
    report = VerificationReport.from_checks(checks, key_id=verdict.key_id)
    return report, record


def _corpus_check(
    record: GradeRecord | None, manifest: CorpusManifest, signed: SignedClaim | None
) -> CheckResult:
    if record is None:
        return CheckResult(id="corpus-pinned", passed=False, reason="no record to compare")
    if record.corpus_digest != manifest.digest:
        return CheckResult(
            id="corpus-pinned",
            passed=False,
            reason=f"record corpus {record.corpus_digest[:16]}..., "
            f"manifest {manifest.digest[:16]}...",
        )
    if (record.corpus_id, record.corpus_version) != (manifest.corpus_id, manifest.version):
        return CheckResult(
            id="corpus-pinned",
            passed=False,
            reason=f"record corpus {record.corpus_id[:100]!r} version "
            f"{record.corpus_version[:64]!r}, manifest {manifest.corpus_id!r} {manifest.version!r}",
        )
    if [r.case_id for r in record.results] != [c.id for c in manifest.cases]:
        return CheckResult(
            id="corpus-pinned", passed=False, reason="the results do not list the manifest's cases"
        )
    if record.trust == "trusted":
        if signed is None:
            return CheckResult(
                id="corpus-pinned",
                passed=False,
                reason="the record claims a trusted corpus, but the manifest has no corpus "
                "signature by a trusted controller key",
            )
        claim = signed.claim
        if (claim.corpus_id, claim.version, claim.manifest_digest) != (
            manifest.corpus_id,
            manifest.version,
            manifest.digest,
        ):
            return CheckResult(
                id="corpus-pinned",
                passed=False,
                reason="the record claims a trusted corpus, but the corpus signature is "
                "about another manifest",
            )
        if record.controller_key != signed.key_id:
            # The record's own words name the controller; only the signature that checked
            # out may, or a grade could borrow the trust of a key that never signed it.
            return CheckResult(
                id="corpus-pinned",
                passed=False,
                reason=f"the record names controller key {str(record.controller_key)[:16]}..., "
                f"but the corpus signature is by {signed.key_id[:16]}...",
            )
    return CheckResult(
        id="corpus-pinned",
        passed=True,
        reason=f"{manifest.corpus_id} {manifest.version}, {record.trust}",
    )
