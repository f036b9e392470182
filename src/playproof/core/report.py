"""The verification report: one shape for every verifier (ARCHITECTURE 3.7).

A verifier runs named checks from a small fixed vocabulary (:data:`CHECK_IDS`),
each pass/fail with a short reason. The verdict is ``clean`` only when there is
at least one check and every check passed; otherwise it is ``rejected``.

>>> ok = CheckResult(id="signature-valid", passed=True, reason="signed by key 3f2a")
>>> verdict_of([ok])
'clean'
>>> verdict_of([])
'rejected'
>>> report = VerificationReport.from_checks([ok], verified=["m1"], milestones_total=3)
>>> report.verdict, str(report.score)
('clean', '1 of 3')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from playproof.core.score import Score

__all__ = [
    "CHECK_IDS",
    "CheckId",
    "CheckResult",
    "LibraryDifference",
    "Verdict",
    "VerificationReport",
    "verdict_of",
]

CheckId = Literal[
    "envelope-well-formed",
    "signature-valid",
    "statement-well-formed",
    "subjects-match",
    "record-well-formed",
    "decision-chain-intact",
    "accounting-consistent",
    "limits-respected",
    "target-pinned",
    "mode-supported",
    "transcript-signed",
    "transcript-consistent",
    "receipts-intact",
    "claims-reproduced",
    "grade-consistent",
    "corpus-pinned",
    "variants-reproduced",
]
"""The stable check ids; docs/signing.md says what each one checks."""

CHECK_IDS: tuple[CheckId, ...] = get_args(CheckId)
"""Every check id, in the order a full verification runs them."""

Verdict = Literal["clean", "rejected"]

MAX_REASON_CHARS = 2048
"""Reasons are short; one that quotes hostile input is cut, never rejected."""


class CheckResult(BaseModel):
    """One named check: whether it passed and a short reason either way."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: CheckId
    passed: bool
    reason: str

    @field_validator("reason")
    @classmethod
    def _short_reason(cls, value: str) -> str:
        # A reason may quote attacker-controlled text; keep reports small.
        if len(value) > MAX_REASON_CHARS:
            return value[: MAX_REASON_CHARS - 3] + "..."
        return value


def verdict_of(checks: Iterable[CheckResult]) -> Verdict:
    """``clean`` iff there is at least one check and all of them passed."""
    results = list(checks)
    return "clean" if results and all(c.passed for c in results) else "rejected"


class LibraryDifference(BaseModel):
    """A library whose version differs between the recorder and the verifier (None: absent)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    recorded: str | None
    verifier: str | None

    @property
    def text(self) -> str:
        """``"numpy 2.1.0 here, 1.26.4 when recorded"``."""
        here = self.verifier or "not installed"
        then = self.recorded or "absent"
        return f"{self.name} {here} here, {then} when recorded"


class VerificationReport(BaseModel):
    """What a verifier concluded: the verdict, every check, and the verified milestones.

    ``verified`` lists the milestones the verifier itself reproduced (graded,
    never all-or-nothing); ``milestones_total`` is the contract's total when
    known, ``milestones_identity`` how many of those are identity milestones
    and ``identity_verified`` which reproduced ones are (both recomputed from
    the contract the verifier pinned, never read from the record).
    ``key_id`` names the key whose signature verified, if any. ``target`` is
    the target's label and ``calibrated`` whether its contract went through
    calibration. ``library_differences`` lists libraries whose versions differ
    from the recorder's; ``warnings`` says so loudly when replay diverged.
    ``trust`` says in words what the verdict relied on beyond the verifier's
    own computation (e.g. which recorder key attested a transcript; None for
    replay, which relies on nothing but the record and the game).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: Verdict
    checks: list[CheckResult]
    verified: list[str] = Field(default_factory=list)
    milestones_total: Annotated[int, Field(ge=0)] | None = None
    milestones_identity: Annotated[int, Field(ge=0)] | None = None
    identity_verified: list[str] = Field(default_factory=list)
    key_id: str | None = None
    target: str | None = None
    calibrated: bool | None = None
    library_differences: list[LibraryDifference] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    trust: str | None = None

    @model_validator(mode="after")
    def _verdict_follows_checks(self) -> Self:
        if self.verdict != verdict_of(self.checks):
            raise ValueError(f"verdict {self.verdict!r} does not follow from the checks")
        return self

    @classmethod
    def from_checks(
        cls,
        checks: Iterable[CheckResult],
        *,
        verified: Iterable[str] = (),
        milestones_total: int | None = None,
        milestones_identity: int | None = None,
        identity_verified: Iterable[str] = (),
        key_id: str | None = None,
        target: str | None = None,
        calibrated: bool | None = None,
        library_differences: Iterable[LibraryDifference] = (),
        warnings: Iterable[str] = (),
        trust: str | None = None,
    ) -> VerificationReport:
        """Build a report whose verdict is derived from ``checks``."""
        results = list(checks)
        return cls(
            verdict=verdict_of(results),
            checks=results,
            verified=list(verified),
            milestones_total=milestones_total,
            milestones_identity=milestones_identity,
            identity_verified=list(identity_verified),
            key_id=key_id,
            target=target,
            calibrated=calibrated,
            library_differences=list(library_differences),
            warnings=list(warnings),
            trust=trust,
        )

    @property
    def earned(self) -> int:
        """Earnable (legible) milestones replay reproduced."""
        return len(self.verified) - len(self.identity_verified)

    @property
    def earnable(self) -> int | None:
        """The contract's milestones that are not identity milestones (None: unknown)."""
        if self.milestones_total is None:
            return None
        return self.milestones_total - (self.milestones_identity or 0)

    @property
    def score(self) -> Score | None:
        """Earned over earnable, identity milestones apart; None when the total is unknown."""
        earnable = self.earnable
        if earnable is None:
            return None
        return Score(
            earned=self.earned,
            earnable=earnable,
            identity_reached=len(self.identity_verified),
            identity_total=self.milestones_identity or 0,
        )

    @property
    def clean(self) -> bool:
        """True when the verdict is ``clean``."""
        return self.verdict == "clean"

    def failed(self) -> list[CheckResult]:
        """The checks that did not pass."""
        return [c for c in self.checks if not c.passed]
