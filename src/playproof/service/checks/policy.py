"""The policy check groups of a policy-bound run, decided from its stored artifacts.

The groups themselves are :mod:`playproof.policy`'s fixed code; this module
hands them what the server's replay regenerated (the run events and, for a
rebalance run, the rebalance evidence document) and the deployed envelope
(and allocation) as the authority, all read from the run's artifacts, and
turns their result into the service's :class:`GroupResult`. Which groups a
run has is :func:`playproof.policy.applicable_groups` of its target. A
missing artifact fails every check that reads it with "input missing".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from playproof import policy
from playproof.checks import CheckOutcome, GroupResult
from playproof.core.canonical import parse_json
from playproof.errors import FormatError, PolicyError
from playproof.policy.envelope import PolicyEnvelope, parse_envelope
from playproof.service.artifacts.roles import (
    MAX_ARTIFACT_BYTES,
    POLICY_ENVELOPE,
    REBALANCE_ALLOCATION,
    REBALANCE_EVIDENCE,
    RUN_EVENTS,
)

__all__ = [
    "POLICY_GROUPS",
    "PolicyEvidence",
    "PolicyGroup",
    "decide_policy_group",
    "policy_group_named",
]

MAX_EVENTS = 100_000
"""The most event strings read from a stored run events artifact."""


class _Outcome(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def explanation(self) -> str: ...


class _Result(Protocol):
    @property
    def checks(self) -> Sequence[_Outcome]: ...


def _json(data: bytes | None) -> Any:
    """The artifact's JSON value (None: missing, or not plain JSON within the artifact limit:
    too large, nested too deeply, NaN, a repeated key)."""
    if data is None:
        return None
    try:
        return parse_json(data, limit=MAX_ARTIFACT_BYTES, what="a policy artifact")
    except FormatError:
        return None


@dataclass(frozen=True)
class PolicyEvidence:
    """What the policy groups read: the run's target and its artifacts' bytes by role."""

    target: str | None
    artifacts: Mapping[str, bytes] = field(default_factory=dict)

    def events(self) -> tuple[str, ...] | None:
        """The replay's run event strings (None: not stored or not a JSON list of strings)."""
        value = _json(self.artifacts.get(RUN_EVENTS.name))
        if not isinstance(value, list) or len(value) > MAX_EVENTS:
            return None
        if not all(isinstance(item, str) for item in value):
            return None
        return tuple(value)

    def envelope(self) -> PolicyEnvelope | None:
        """The deployed envelope (None: not stored or not a valid policy envelope)."""
        value = _json(self.artifacts.get(POLICY_ENVELOPE.name))
        if value is None:
            return None
        try:
            return parse_envelope(value)
        except FormatError:
            return None

    def applies(self, group: str) -> bool:
        """True when ``group`` is one of the policy groups of the run's target."""
        if self.target is None:
            return False
        try:
            return group in policy.applicable_groups(self.target)
        except PolicyError:
            return False


@dataclass(frozen=True)
class PolicyGroup:
    """A policy check group as the service publishes it."""

    name: str
    title: str
    check_ids: tuple[str, ...]
    decide: Callable[[PolicyEvidence, PolicyEnvelope], _Result]


def _wallet_safety(evidence: PolicyEvidence, envelope: PolicyEnvelope) -> _Result:
    return policy.wallet_safety(evidence.events(), envelope)


def _rebalance_policy(evidence: PolicyEvidence, envelope: PolicyEnvelope) -> _Result:
    allocation = _json(evidence.artifacts.get(REBALANCE_ALLOCATION.name))
    return policy.rebalance_policy(
        evidence.events(),
        envelope,
        evidence.artifacts.get(REBALANCE_EVIDENCE.name),
        allocation if isinstance(allocation, dict) else None,
    )


POLICY_GROUPS: tuple[PolicyGroup, ...] = (
    PolicyGroup(
        name=policy.WALLET_SAFETY,
        title="Every action kept within the deployed policy envelope (recomputed from replay)",
        check_ids=tuple(policy.WALLET_SAFETY_CHECKS),
        decide=_wallet_safety,
    ),
    PolicyGroup(
        name=policy.REBALANCE_POLICY,
        title="The rebalance kept its target weights and limits (recomputed from replay)",
        check_ids=tuple(policy.REBALANCE_POLICY_CHECKS),
        decide=_rebalance_policy,
    ),
)
"""Every policy group, in the order a proof document lists them."""


def policy_group_named(name: str) -> PolicyGroup | None:
    """The policy group called ``name``, or None."""
    return next((g for g in POLICY_GROUPS if g.name == name), None)


def _all_fail(group: PolicyGroup, why: str) -> GroupResult:
    return GroupResult(
        group=group.name,
        title=group.title,
        result="fail",
        checks=[CheckOutcome(id=c, passed=False, explanation=why) for c in group.check_ids],
    )


def decide_policy_group(group: PolicyGroup, evidence: PolicyEvidence) -> GroupResult:
    """``group`` decided on ``evidence``; every check fails when the envelope is missing.

    The result lists exactly the group's check ids, in order: a check the
    group's code did not report fails. Other missing inputs (the run events,
    the rebalance evidence) fail the checks that read them, as the group's
    code reports.
    """
    envelope = evidence.envelope()
    if envelope is None:
        return _all_fail(group, "input missing: no valid deployed policy envelope is stored")
    decided = {c.id: c for c in group.decide(evidence, envelope).checks}
    outcomes = []
    for check_id in group.check_ids:
        found = decided.get(check_id)
        if found is None:
            outcomes.append(
                CheckOutcome(id=check_id, passed=False, explanation="input missing: not decided")
            )
        else:
            passed = found.passed is True
            outcomes.append(CheckOutcome(id=check_id, passed=passed, explanation=found.explanation))
    verdict: Literal["pass", "fail"] = "pass" if all(o.passed for o in outcomes) else "fail"
    return GroupResult(group=group.name, title=group.title, result=verdict, checks=outcomes)
