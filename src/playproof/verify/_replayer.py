"""Replayers: run many independent input logs through the attestation replay path.

Calibration, sweeps and exploration only ever need "replay this whole log
from this seed and tell me what it earned". :class:`Replayer` is that one
operation over a batch, so the analysis here stays pure while an executor
(``playproof.exec``) decides whether the batch runs serially or on a pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from playproof.core.contract import Contract, EventCheck, Milestone
from playproof.core.game import Game, GameDescriptor, ReplayResult
from playproof.core.replay import replay

__all__ = ["ReplayJob", "Replayer", "SerialReplayer", "trace_contract"]


@dataclass(frozen=True, slots=True)
class ReplayJob:
    """One whole episode to replay: a seed, the input log and whether to keep the trace."""

    seed: int
    inputs: tuple[str, ...]
    trace: bool = False


@runtime_checkable
class Replayer(Protocol):
    """Replays batches of independent episodes of one game build."""

    @property
    def descriptor(self) -> GameDescriptor:
        """The descriptor of the game every job runs on."""
        ...

    def replay_many(self, jobs: Sequence[ReplayJob], contract: Contract) -> list[ReplayResult]:
        """Replay every job against ``contract``; results in job order."""
        ...


class SerialReplayer:
    """A :class:`Replayer` that runs every job, in order, on one game from ``factory``."""

    def __init__(
        self,
        factory: Callable[[], Game],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self._factory = factory
        self._progress = progress
        game = factory()
        try:
            self._descriptor = game.descriptor
        finally:
            game.close()

    @property
    def descriptor(self) -> GameDescriptor:
        """The descriptor of the factory's game."""
        return self._descriptor

    def replay_many(self, jobs: Sequence[ReplayJob], contract: Contract) -> list[ReplayResult]:
        """Replay every job on one fresh game session (batch replay when it has one)."""
        results: list[ReplayResult] = []
        game = self._factory()
        try:
            for job in jobs:
                results.append(replay(game, job.seed, job.inputs, contract, trace=job.trace))
                if self._progress is not None:
                    self._progress(len(results), len(jobs))
        finally:
            game.close()
        return results


def trace_contract(game_id: str) -> Contract:
    """A contract that never passes: used when only the evidence trace of a replay matters."""
    never = EventCheck(kind="event", event="playproof:never")
    return Contract(game=game_id, milestones=(Milestone(id="never", check=never),))
