"""The check-group framework: specs with fixed explanations, preconditions, evaluation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from playproof.core.record import RunRecord
from playproof.core.report import VerificationReport

__all__ = [
    "CheckGroup",
    "CheckOutcome",
    "CheckSpec",
    "GroupResult",
    "StoredEvidence",
    "run_group",
]


@dataclass(frozen=True)
class StoredEvidence:
    """What a group may read: the signed record and the stored verification report."""

    record: RunRecord | None
    report: VerificationReport | None


@dataclass(frozen=True)
class CheckSpec:
    """One check: a stable id, what a pass and a fail mean, the checks it depends on."""

    id: str
    passed: str
    failed: str
    requires: tuple[str, ...] = ()


Evaluator = Callable[[StoredEvidence], Mapping[str, bool]]
"""Fixed code that decides every check of a group from the evidence."""


@dataclass(frozen=True)
class CheckGroup:
    """A named group of checks and the code that decides them."""

    name: str
    title: str
    checks: tuple[CheckSpec, ...]
    evaluate: Evaluator

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for spec in self.checks:
            missing = [r for r in spec.requires if r not in seen]
            if missing:
                raise ValueError(f"{self.name}/{spec.id} requires {missing}, not checked before it")
            seen.add(spec.id)


class CheckOutcome(BaseModel):
    """A decided check: id, pass or fail, its fixed explanation."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    id: str
    passed: bool
    explanation: str


class GroupResult(BaseModel):
    """A decided group: ``pass`` when every check passed, else ``fail``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    group: str
    title: str
    result: Literal["pass", "fail"]
    checks: list[CheckOutcome]


def run_group(group: CheckGroup, evidence: StoredEvidence) -> GroupResult:
    """Decide every check of ``group``; a failed precondition fails the checks that need it."""
    decided = group.evaluate(evidence)
    outcomes: list[CheckOutcome] = []
    passed: dict[str, bool] = {}
    for spec in group.checks:
        blocked = next((r for r in spec.requires if not passed[r]), None)
        if blocked is not None:
            ok, why = False, f"not checked: it needs {blocked}, which failed"
        else:
            ok = bool(decided.get(spec.id, False))
            why = spec.passed if ok else spec.failed
        passed[spec.id] = ok
        outcomes.append(CheckOutcome(id=spec.id, passed=ok, explanation=why))
    verdict: Literal["pass", "fail"] = "pass" if all(o.passed for o in outcomes) else "fail"
    return GroupResult(group=group.name, title=group.title, result=verdict, checks=outcomes)
