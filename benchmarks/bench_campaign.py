"""Resume cost of a campaign ledger, as a ratio to batch-replaying the same inputs.

Builds a 10,000-decision ledger on ``ale/breakout`` when that target is
registered (else ``native/2048`` without stopping at game over), then measures
in one run: batch replay of the input log (``playproof.core.replay.replay``,
the verifier's path) and a full resume (load + check the ledger, replay the
inputs on the live game, rebuild the loop state). Target: at most 1.2x.

The phases are interleaved round by round (best round of each kept, after a
collection), so a burst of load on a shared machine does not land on one
phase only. In-process timing is this process's CPU time; with a worker the
child does the replay, so wall time is the only fair clock there.

    python benchmarks/bench_campaign.py [decisions] [target]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from _timing import best_interleaved
from playproof.core.replay import replay
from playproof.drivers import BaselineDriver
from playproof.engine import EpisodeConfig, load_ledger, run_campaign
from playproof.errors import TargetError
from playproof.sign import SigningKey
from playproof.targets import Target, get_target


def _target() -> Target:
    if len(sys.argv) > 2:
        return get_target(sys.argv[2])
    try:
        return get_target("ale/breakout")
    except TargetError:
        return get_target("native/2048")


ROUNDS = 9
"""Interleaved rounds per phase; the best round of each phase counts."""


def run(decisions: int = 10_000, worker: bool | None = None) -> dict[str, float]:
    """Measure and return seconds and the resume / batch-replay ratio."""
    target = _target()
    driver = BaselineDriver("random-walk", seed=1)
    config = EpisodeConfig(max_turns=decisions + 1, stop_at_game_over=False, history=32)
    scratch = tempfile.TemporaryDirectory(prefix="bench-campaign-")
    path = Path(scratch.name) / "ledger.json"
    key = SigningKey.generate()
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
                ledger_key=key,
                segments=1,
            )
        )
        ledger = load_ledger(path, key.verifying_key)
        inputs = list(ledger.decisions.inputs)
        # Reported, not timed: after game over every input is a no-op, so the
        # share of the log that really plays sets how big the replay is.
        over_at = replay(game, 0, inputs, target.contract).over_at

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
                    ledger_key=key,
                    segments=0,
                )
            )

        def load_only() -> None:
            load_ledger(path, key.verifying_key)

        clock = time.process_time if worker is False else time.perf_counter
        times = best_interleaved(
            {"batch_replay_s": batch, "resume_s": resume, "ledger_load_s": load_only}, ROUNDS, clock
        )
        ledger_bytes = path.stat().st_size
    finally:
        game.close()
        scratch.cleanup()
    times["resume_vs_batch_replay"] = times["resume_s"] / times["batch_replay_s"]
    times["decisions"] = float(len(inputs))
    times["ledger_bytes"] = float(ledger_bytes)
    times["over_at"] = float("nan") if over_at is None else float(over_at)
    return times


def main() -> None:
    """Print the measurements (in-process, then with the game in a worker)."""
    decisions = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    print(
        f"campaign resume on {_target().name}, {decisions} decisions "
        f"(best of {ROUNDS} interleaved rounds; CPU time in-process, wall time with a worker)"
    )
    for label, worker in (("in-process", False), ("worker", True)):
        r = run(decisions, worker)
        print(
            f"  [{label}] ledger {r['ledger_bytes'] / 1e6:.2f} MB, game over at turn "
            f"{r['over_at']:.0f} of {r['decisions']:.0f}"
        )
        print(f"  [{label}] batch replay      {r['batch_replay_s'] * 1e3:9.1f} ms")
        print(f"  [{label}] ledger load+check {r['ledger_load_s'] * 1e3:9.1f} ms")
        print(f"  [{label}] full resume       {r['resume_s'] * 1e3:9.1f} ms")
        print(
            f"  [{label}] resume / replay   {r['resume_vs_batch_replay']:9.2f}x   (target <= 1.2x)"
        )


if __name__ == "__main__":
    main()
