"""Deterministic replay of an input log on a game session (pure; no I/O of its own).

This loop is the single definition of "what an input log earned". Workers run
it inside their child process; verification runs it in-process for pure
Python games. It computes evidence only: no observations, no images.
"""

from __future__ import annotations

from collections.abc import Sequence

from playproof.core.contract import Contract
from playproof.core.game import BatchReplaying, Game, ReplayResult
from playproof.core.tracker import MilestoneTracker

__all__ = ["replay", "replay_in_session"]


def replay_in_session(
    game: Game, seed: int, inputs: Sequence[str], contract: Contract, *, trace: bool = False
) -> ReplayResult:
    """Reset ``game`` with ``seed``, apply ``inputs`` one by one and track ``contract``.

    Snapshot 0 is the state right after reset; snapshot ``i`` follows input ``i``.
    The game is left in the state after the last input.
    """
    tracker = MilestoneTracker(contract)
    game.reset(seed)
    evidence = game.evidence()
    snapshots = [evidence] if trace else None
    tracker.observe(evidence, 0)
    over_at = 0 if game.over() else None
    step, read, observe, over = game.step, game.evidence, tracker.observe, game.over
    events: dict[str, None] = dict.fromkeys(evidence.events)
    turn = 0
    for turn, word in enumerate(inputs, start=1):
        step(word)
        evidence = read()
        observe(evidence, turn)
        if evidence.events:
            events.update(dict.fromkeys(evidence.events))
        if snapshots is not None:
            snapshots.append(evidence)
        if over_at is None and over():
            over_at = turn
    return ReplayResult(
        verified=tracker.verified,
        turns=turn,
        over_at=over_at,
        trace=tuple(snapshots) if snapshots is not None else None,
        events=tuple(events),
    )


def replay(
    game: Game, seed: int, inputs: Sequence[str], contract: Contract, *, trace: bool = False
) -> ReplayResult:
    """Replay through the game's batch ``replay`` when it has one, else step by step."""
    if isinstance(game, BatchReplaying):
        return game.replay(seed, inputs, contract, trace=trace)
    return replay_in_session(game, seed, inputs, contract, trace=trace)
