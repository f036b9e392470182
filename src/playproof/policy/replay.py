"""Regenerate a policy-bound run's evidence by replay and run its check groups.

The verifier never reads events from a record: it replays the seed and the
inputs on a fresh game and checks what the replay produced, with the envelope
(and, for a rebalance target, the allocation) the target deploys as the
authority.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from playproof.core.canonical import plain_json_problem
from playproof.core.game import Game
from playproof.errors import FormatError, PolicyError
from playproof.policy.checks import CheckGroupResult, wallet_safety
from playproof.policy.envelope import PolicyEnvelope, example_envelope, parse_envelope
from playproof.policy.groups import policy_groups, template_of
from playproof.policy.rebalance import REBALANCE_TEMPLATE, Allocation, RebalanceEvidence
from playproof.policy.rebalance_checks import MAX_ALLOCATION_BYTES

if TYPE_CHECKING:
    from playproof.core.record import RunRecord
    from playproof.targets import Target

__all__ = [
    "MAX_DEPLOYED_ENVELOPE_BYTES",
    "PolicyReplay",
    "deployed_allocation",
    "deployed_envelope",
    "policy_groups_of_record",
    "replay_events",
    "replay_record",
    "wallet_safety_of_record",
]


def replay_events(game: Game, seed: int, inputs: Sequence[str]) -> tuple[str, ...]:
    """Every evidence event of ``inputs`` replayed from ``seed`` (reset snapshot included).

    A policy game's ``step_events`` gives the same strings as ``evidence().events``
    without the account digest and counters, which the check groups do not read.
    """
    fast = getattr(game, "step_events", None)
    read: Callable[[], tuple[str, ...]] = (
        fast if callable(fast) else (lambda: tuple(game.evidence().events))
    )
    game.reset(seed)
    events = list(read())
    for word in inputs:
        game.step(word)
        events.extend(read())
    return tuple(events)


MAX_DEPLOYED_ENVELOPE_BYTES = 1 << 20
"""The largest envelope option read, as JSON (compact, UTF-8)."""


def _plain(data: Any, limit: int, what: str) -> None:
    """FormatError unless ``data`` is plain JSON of at most ``limit`` bytes."""
    problem = plain_json_problem(data, limit)
    if problem is not None:
        raise FormatError(f"{what} is not readable: {problem}")


def deployed_envelope(target: Target) -> PolicyEnvelope:
    """The envelope a policy-bound target deploys (its ``envelope`` option).

    FormatError when the option is not plain JSON of at most
    :data:`MAX_DEPLOYED_ENVELOPE_BYTES` or not an envelope.
    """
    data = target.spec.options.get("envelope", example_envelope())
    _plain(data, MAX_DEPLOYED_ENVELOPE_BYTES, "the policy envelope")
    return parse_envelope(data)


def deployed_allocation(target: Target) -> Allocation | None:
    """The target weights and drift threshold a rebalance target deploys (None for others).

    FormatError, naming the field, when the option is not plain JSON of at most
    :data:`MAX_ALLOCATION_BYTES` or not an allocation.
    """
    data = target.spec.options.get("allocation")
    if data is None:
        if target.spec.factory.startswith("playproof.policy.rebalance_game:"):
            from playproof.policy.rebalance_game import example_allocation

            return Allocation.model_validate(example_allocation())
        return None
    _plain(data, MAX_ALLOCATION_BYTES, "the allocation")
    try:
        return Allocation.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "allocation"
        raise FormatError(f"allocation field {where}: {first['msg']}") from exc


@dataclass(frozen=True, slots=True)
class PolicyReplay:
    """What replaying a record produced: the template, the events, the rebalance evidence."""

    template: str
    events: tuple[str, ...]
    rebalance_evidence: RebalanceEvidence | None

    def difference(
        self,
        events: Sequence[str],
        rebalance_evidence: RebalanceEvidence | Mapping[str, Any] | None = None,
    ) -> str | None:
        """Where claimed evidence differs from this replay (None when it is the same)."""
        for i, (claimed, replayed) in enumerate(zip(events, self.events, strict=False)):
            if claimed != replayed:
                return f"event {i} differs from the replay"
        if len(events) != len(self.events):
            return f"{len(events)} events claimed, {len(self.events)} replayed"
        if self.rebalance_evidence is None:
            return None if rebalance_evidence is None else "no rebalance evidence was replayed"
        claimed_doc = (
            rebalance_evidence.model_dump(mode="json", by_alias=True)
            if isinstance(rebalance_evidence, RebalanceEvidence)
            else rebalance_evidence
        )
        if claimed_doc != self.rebalance_evidence.model_dump(mode="json", by_alias=True):
            return "the rebalance evidence differs from the replay"
        return None


def replay_record(record: RunRecord, target: Target) -> PolicyReplay:
    """Replay ``record`` on a fresh game of ``target``: events and rebalance evidence."""
    game = target.open(worker=False)
    try:
        build = game.descriptor.build.id
        template = template_of(build.removeprefix("solana/"))
        events = replay_events(game, record.seed, [d.input for d in record.decisions])
        evidence: RebalanceEvidence | None = None
        if template == REBALANCE_TEMPLATE:
            produce = getattr(game, "rebalance_evidence", None)
            if produce is None:
                raise PolicyError(f"target {target.name} does not produce rebalance evidence")
            evidence = produce()
    finally:
        game.close()
    return PolicyReplay(template, events, evidence)


def policy_groups_of_record(
    record: RunRecord,
    target: Target,
    envelope: PolicyEnvelope | None = None,
    allocation: Allocation | None = None,
) -> tuple[CheckGroupResult, ...]:
    """Replay ``record`` on ``target`` and compute every check group that applies to it.

    ``envelope`` and ``allocation`` default to what the target deploys; pass
    the deployment's own to judge the run against those.
    """
    replayed = replay_record(record, target)
    return policy_groups(
        replayed.template,
        replayed.events,
        envelope if envelope is not None else deployed_envelope(target),
        rebalance_evidence=replayed.rebalance_evidence,
        allocation=allocation if allocation is not None else deployed_allocation(target),
    )


def wallet_safety_of_record(record: RunRecord, target: Target) -> CheckGroupResult:
    """Replay ``record`` on ``target`` and compute ``wallet_safety`` from what replay produced."""
    game = target.open(worker=False)
    try:
        events = replay_events(game, record.seed, [d.input for d in record.decisions])
    finally:
        game.close()
    return wallet_safety(events, deployed_envelope(target))
