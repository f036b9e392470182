"""The check-group framework: specs with fixed explanations, preconditions, evaluation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["CheckGroup", "CheckOutcome", "CheckSpec", "Evaluator", "GroupResult", "run_group"]

E = TypeVar("E")
"""The evidence a group decides from (a stored run, a policy-bound run's trace, ...)."""


@dataclass(frozen=True)
class CheckSpec:
    """One check: a stable id, what a pass and a fail mean, the checks it depends on."""

    id: str
    passed: str
    failed: str
    requires: tuple[str, ...] = ()


Evaluator = Callable[[E], Mapping[str, bool]]
"""Fixed code that decides every check of a group from the evidence."""


@dataclass(frozen=True)
class CheckGroup(Generic[E]):
    """A named group of checks and the code that decides them."""

    name: str
    title: str
    checks: tuple[CheckSpec, ...]
    evaluate: Callable[[E], Mapping[str, bool]]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for spec in self.checks:
            if spec.id in seen:
                raise ValueError(f"{self.name}/{spec.id} is listed twice")
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


def run_group(group: CheckGroup[E], evidence: E) -> GroupResult:
    """Decide every check of ``group``; a failed precondition fails the checks that need it.

    A check the evaluator does not decide fails: only a decided ``True`` passes.
    """
    decided = group.evaluate(evidence)
    outcomes: list[CheckOutcome] = []
    passed: dict[str, bool] = {}
    for spec in group.checks:
        blocked = next((r for r in spec.requires if not passed[r]), None)
        if blocked is not None:
            ok, why = False, f"not checked: it needs {blocked}, which failed"
        else:
            ok = decided.get(spec.id, False) is True
            why = spec.passed if ok else spec.failed
        passed[spec.id] = ok
        outcomes.append(CheckOutcome(id=spec.id, passed=ok, explanation=why))
    verdict: Literal["pass", "fail"] = "pass" if all(o.passed for o in outcomes) else "fail"
    return GroupResult(group=group.name, title=group.title, result=verdict, checks=outcomes)
