"""Resume cost of a campaign ledger, as a ratio to batch-replaying the same inputs.

Builds a 10,000-decision ledger on ``ale/breakout`` when that target is
registered (else ``native/2048`` without stopping at game over), then measures
in one run: batch replay of the input log (``playproof.core.replay.replay``,
the verifier's path) and a full resume (load + check the ledger, replay the
inputs on the live game, rebuild the loop state). Target: at most 1.2x.

    python benchmarks/bench_campaign.py [decisions] [target]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playproof.core.replay import replay
from playproof.drivers import BaselineDriver
from playproof.engine import EpisodeConfig, load_ledger, run_campaign
from playproof.errors import TargetError
from playproof.targets import Target, get_target


def _target() -> Target:
    if len(sys.argv) > 2:
        return get_target(sys.argv[2])
    try:
        return get_target("ale/breakout")
    except TargetError:
        return get_target("native/2048")


def _best(fn: Any, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(decisions: int = 10_000, worker: bool | None = None) -> dict[str, float]:
    """Measure and return seconds and the resume / batch-replay ratio."""
    target = _target()
    driver = BaselineDriver("random-walk", seed=1)
    config = EpisodeConfig(max_turns=decisions + 1, stop_at_game_over=False, history=32)
    folder = Path(tempfile.mkdtemp(prefix="bench-campaign-"))
    path = folder / "ledger.json"
    game = target.open(worker=worker)
    try:
        asyncio.run(
            run_campaign(
                game,
                target.contract,
                driver,
                config,
                segment_turns=decisions,
                ledger=path,
                segments=1,
            )
        )
        ledger = load_ledger(path)
        inputs = [d.input for d in ledger.decisions]

        def batch() -> None:
            replay(game, 0, inputs, target.contract)

        def resume() -> None:
            # segments=0: resume (load, check, replay, rebuild) and pause at once.
            asyncio.run(
                run_campaign(
                    game,
                    target.contract,
                    driver,
                    config,
                    segment_turns=decisions,
                    ledger=path,
                    segments=0,
                )
            )

        def load_only() -> None:
            load_ledger(path)

        times = {
            "batch_replay_s": _best(batch),
            "resume_s": _best(resume),
            "ledger_load_s": _best(load_only),
        }
    finally:
        game.close()
    times["resume_vs_batch_replay"] = times["resume_s"] / times["batch_replay_s"]
    times["decisions"] = float(len(inputs))
    times["ledger_bytes"] = float(path.stat().st_size)
    return times


def main() -> None:
    """Print the measurements (in-process, then with the game in a worker)."""
    decisions = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    print(f"campaign resume on {_target().name}, {decisions} decisions (best of 3)")
    for label, worker in (("in-process", False), ("worker", True)):
        r = run(decisions, worker)
        print(f"  [{label}] ledger {r['ledger_bytes'] / 1e6:.2f} MB")
        print(f"  [{label}] batch replay      {r['batch_replay_s'] * 1e3:9.1f} ms")
        print(f"  [{label}] ledger load+check {r['ledger_load_s'] * 1e3:9.1f} ms")
        print(f"  [{label}] full resume       {r['resume_s'] * 1e3:9.1f} ms")
        print(
            f"  [{label}] resume / replay   {r['resume_vs_batch_replay']:9.2f}x   (target <= 1.2x)"
        )


if __name__ == "__main__":
    main()
