"""The verification report: one shape for every verifier (ARCHITECTURE 3.7).

A verifier runs named checks from a small fixed vocabulary (:data:`CHECK_IDS`),
each pass/fail with a short reason. The verdict is ``clean`` only when there is
at least one check and every check passed; otherwise it is ``rejected``.

>>> ok = CheckResult(id="signature-valid", passed=True, reason="signed by key 3f2a")
>>> verdict_of([ok])
'clean'
>>> verdict_of([])
'rejected'
>>> VerificationReport.from_checks([ok], verified=["m1"], milestones_total=3).verdict
'clean'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CHECK_IDS",
    "CheckId",
    "CheckResult",
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
    "claims-reproduced",
    "grade-consistent",
    "corpus-pinned",
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


class VerificationReport(BaseModel):
    """What a verifier concluded: the verdict, every check, and the verified milestones.

    ``verified`` lists the milestones the verifier itself reproduced (graded,
    never all-or-nothing); ``milestones_total`` is the contract's total when
    known. ``key_id`` names the key whose signature verified, if any.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: Verdict
    checks: list[CheckResult]
    verified: list[str] = Field(default_factory=list)
    milestones_total: Annotated[int, Field(ge=0)] | None = None
    key_id: str | None = None

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
        key_id: str | None = None,
    ) -> VerificationReport:
        """Build a report whose verdict is derived from ``checks``."""
        results = list(checks)
        return cls(
            verdict=verdict_of(results),
            checks=results,
            verified=list(verified),
            milestones_total=milestones_total,
            key_id=key_id,
        )

    @property
    def clean(self) -> bool:
        """True when the verdict is ``clean``."""
        return self.verdict == "clean"

    def failed(self) -> list[CheckResult]:
        """The checks that did not pass."""
        return [c for c in self.checks if not c.passed]
