"""Regenerate a policy-bound run's events by replay and run its check groups.

The verifier never reads events from a record: it replays the seed and the
inputs on a fresh game and checks what the replay produced, with the envelope
the target deploys as the authority.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from playproof.core.game import Game
from playproof.policy.checks import CheckGroupResult, wallet_safety
from playproof.policy.envelope import PolicyEnvelope, example_envelope, parse_envelope

if TYPE_CHECKING:
    from playproof.core.record import RunRecord
    from playproof.targets import Target

__all__ = ["deployed_envelope", "replay_events", "wallet_safety_of_record"]


def replay_events(game: Game, seed: int, inputs: Sequence[str]) -> tuple[str, ...]:
    """Every evidence event of ``inputs`` replayed from ``seed`` (reset snapshot included)."""
    game.reset(seed)
    events = list(game.evidence().events)
    for word in inputs:
        game.step(word)
        events.extend(game.evidence().events)
    return tuple(events)


def deployed_envelope(target: Target) -> PolicyEnvelope:
    """The envelope a policy-bound target deploys (its ``envelope`` option)."""
    return parse_envelope(target.spec.options.get("envelope", example_envelope()))


def wallet_safety_of_record(record: RunRecord, target: Target) -> CheckGroupResult:
    """Replay ``record`` on ``target`` and compute ``wallet_safety`` from what replay produced."""
    game = target.open(worker=False)
    try:
        events = replay_events(game, record.seed, [d.input for d in record.decisions])
    finally:
        game.close()
    return wallet_safety(events, deployed_envelope(target))
