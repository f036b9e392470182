"""Engine overhead per decision on 2048, as a ratio to the bare game step.

Measured in one run: the bare loop (reset + step over the same inputs), the
game's own per-turn work the engine must do (step + evidence + observe), the
driver call alone, and a full engine episode with a zero-cost driver over the
same inputs. Overhead = engine time - game work - driver time; reported as a
ratio to the bare step (target: at most 1.0x).

Timing is process CPU time (everything measured runs in this process), so
time the machine gives to other processes is not charged to whichever phase
it happened to interrupt; the phases are interleaved round by round and the
best round of each is kept, with a collection before each so garbage one phase
left is not collected inside another.

    python benchmarks/bench_engine.py [episodes]
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from _timing import best_interleaved
from playproof.adapters.native import Game2048
from playproof.core.agent import Action, DecisionContext, HistoryEntry
from playproof.core.observation import Observation
from playproof.engine import EpisodeConfig, play
from playproof.targets import get_target


class Replayer:
    """A zero-cost driver that answers from a precomputed list."""

    kind = "bench"
    id = "bench"

    def __init__(self, inputs: Sequence[str]) -> None:
        self.inputs = inputs

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        return Action(self.inputs[context.turn - 1], 0.0)


ROUNDS = 9
"""Interleaved rounds per phase; the best round of each phase counts."""


def run(episodes: int = 25) -> dict[str, float]:
    """Measure and return per-decision microseconds and the overhead ratio.

    Each episode replays the packaged reference (216 moves to game over), so
    every step does real sliding and spawning; per-episode costs (reset, the
    record) are amortized into the per-decision figure.
    """
    target = get_target("native/2048")
    vocabulary = target.open().descriptor.vocabulary
    inputs = target.reference
    decisions = episodes * len(inputs)
    game = Game2048()

    def bare() -> None:
        for _ in range(episodes):
            game.reset(0)
            for word in inputs:
                game.step(word)

    def game_work() -> None:
        for _ in range(episodes):
            game.reset(0)
            for word in inputs:
                game.step(word)
                game.evidence()
                game.over()
                game.observe()

    driver = Replayer(inputs)
    context = DecisionContext(1, decisions, 0, 0.0, None, vocabulary)
    observation = Observation(text="x")

    async def calls() -> None:
        for _ in range(decisions):
            await driver.act(observation, (), context)

    def driver_only() -> None:
        asyncio.run(calls())

    config = EpisodeConfig(max_turns=len(inputs), history=0)

    async def episodes_loop() -> None:
        for _ in range(episodes):
            await play(game, target.contract, driver, config)

    def engine() -> None:
        asyncio.run(episodes_loop())

    times = best_interleaved(
        {
            "bare_step_us": bare,
            "game_work_us": game_work,
            "driver_us": driver_only,
            "engine_us": engine,
        },
        ROUNDS,
    )
    per = {k: v / decisions * 1e6 for k, v in times.items()}
    overhead = per["engine_us"] - per["game_work_us"] - per["driver_us"]
    per["engine_overhead_us"] = overhead
    per["overhead_vs_bare_step"] = overhead / per["bare_step_us"]
    return per


def main() -> None:
    """Print the measurements."""
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    result = run(episodes)
    print(
        f"engine overhead on native/2048, {episodes} reference episodes "
        f"(CPU time, best of {ROUNDS} interleaved rounds)"
    )
    print(f"  bare game step               {result['bare_step_us']:8.2f} us")
    print(
        f"  game work per turn           {result['game_work_us']:8.2f} us"
        " (step+evidence+over+observe)"
    )
    print(f"  driver call alone            {result['driver_us']:8.2f} us")
    print(f"  engine per decision          {result['engine_us']:8.2f} us")
    print(f"  engine overhead              {result['engine_overhead_us']:8.2f} us")
    print(
        f"  overhead / bare step         {result['overhead_vs_bare_step']:8.2f}x   (target <= 1.0x)"
    )


if __name__ == "__main__":
    main()
