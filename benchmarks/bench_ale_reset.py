"""ALE reset by post-load snapshot vs by ROM reload, and what it does to a batch replay.

Measures, in one run on ``ale/breakout``:

- ``reset``: CPU seconds per reset with a seed the session has seen, restoring its
  post-load snapshot vs reloading the ROM (the reload is what every reset did
  before); and the first reset with a new seed (load + keeping its snapshot)
  vs a plain reload;
- ``replay``: wall seconds of a worker's batch replay (``WorkerGame.replay``,
  the verifier's path) of a short log that ends in game over, and of the
  packaged reference, with the worker resetting by snapshot vs by reload;
  the same in-process (CPU time, no worker).

In-process figures are this process's CPU time; a worker's replay runs in
its child, so wall time is used there. Each figure is the median of ROUNDS
rounds, and the two sides of every ratio are measured alternately within each
round, so a burst of load on a shared machine lands on both. The reload side
runs the same adapter built with ``reset_by_snapshot=False`` (in the worker
through this file's factory).

    .venv/bin/python benchmarks/bench_ale_reset.py
"""

from __future__ import annotations

import os
import random
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playproof.adapters.ale import AleGame, AleOptions
from playproof.core.replay import replay
from playproof.targets import get_target
from playproof.workers import WorkerGame

ROUNDS = 9
"""Interleaved rounds per measurement; the median round counts."""
SNAPSHOT_RESETS = 200
"""Snapshot resets are timed in batches of this many (one takes well under a millisecond)."""
SEEDS = (0, 1, 7, 123)
WALK_SEED = 4
"""Seeds the random walk whose log (cut at its game over) is the short replayed log."""
WALK_LIMIT = 2000
FACTORY = "playproof.adapters.ale:make_game"
RELOADING_FACTORY = "bench_ale_reset:reloading_game"


def reloading_game(**options: Any) -> AleGame:
    """The ALE adapter resetting by ROM reload (the behaviour before snapshots)."""
    return AleGame(AleOptions.parse(options), reset_by_snapshot=False)


def _median_interleaved(
    runs: dict[str, Callable[[], float]], rounds: int = ROUNDS
) -> dict[str, float]:
    """Median of each run's returned seconds, the runs alternating within every round."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()  # warm up
    for _ in range(rounds):
        for name, run in runs.items():
            samples[name].append(run())
    return {name: statistics.median(values) for name, values in samples.items()}


def _timed(fn: Callable[[], object], clock: Callable[[], float] = time.process_time) -> float:
    start = clock()
    fn()
    return clock() - start


def _short_log(options: dict[str, Any], contract: Any) -> list[str]:
    """A seeded random walk cut where it reaches game over (a few hundred inputs)."""
    game = reloading_game(**options)
    walk = random.Random(WALK_SEED).choices(["noop", "fire", "right", "left"], k=WALK_LIMIT)
    over_at = replay(game, 0, walk, contract).over_at
    game.close()
    if over_at is None:
        raise SystemExit(f"the walk with seed {WALK_SEED} does not reach game over")
    return walk[:over_at]


def bench_reset(options: dict[str, Any]) -> dict[str, float]:
    """Seconds per reset: snapshot restore vs reload, seen seeds and a new seed."""
    snap = AleGame(AleOptions.parse(options))
    reload = reloading_game(**options)
    for seed in SEEDS:
        snap.reset(seed)
    fresh_seeds = iter(range(10_000, 20_000))

    def snapshot_resets() -> float:
        start = time.process_time()
        for index in range(SNAPSHOT_RESETS):
            snap.reset(SEEDS[index % len(SEEDS)])
        return (time.process_time() - start) / SNAPSHOT_RESETS

    def reload_reset() -> float:
        return _timed(lambda: reload.reset(SEEDS[1]))

    def new_seed() -> float:  # a seed never seen: load, then keep the snapshot
        return _timed(lambda: snap.reset(next(fresh_seeds)))

    out = _median_interleaved(
        {"snapshot": snapshot_resets, "reload": reload_reset, "new": new_seed}
    )
    snap.close()
    reload.close()
    return out


def bench_replay(name: str, inputs: list[str], options: dict[str, Any], contract: Any) -> None:
    """Print batch replay seconds, reset by snapshot vs by reload, in a worker and in-process."""
    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    with (
        WorkerGame(FACTORY, options) as snap_worker,
        WorkerGame(RELOADING_FACTORY, options, env={"PYTHONPATH": path}) as reload_worker,
    ):
        wall = time.perf_counter  # the child does the work: wall time is the only fair clock
        before = reload_worker.replay(0, inputs, contract, trace=True).trace
        assert snap_worker.replay(0, inputs, contract, trace=True).trace == before
        worker = _median_interleaved(
            {
                "snapshot": lambda: _timed(lambda: snap_worker.replay(0, inputs, contract), wall),
                "reload": lambda: _timed(lambda: reload_worker.replay(0, inputs, contract), wall),
            }
        )
    snap, reload = AleGame(AleOptions.parse(options)), reloading_game(**options)
    local = _median_interleaved(
        {
            "snapshot": lambda: _timed(lambda: replay(snap, 0, inputs, contract)),
            "reload": lambda: _timed(lambda: replay(reload, 0, inputs, contract)),
        }
    )
    snap.close()
    reload.close()
    for label, r in (("worker", worker), ("in-process", local)):
        print(
            f"  replay {name:<22} [{label:>10}] snapshot {r['snapshot'] * 1e3:8.1f} ms   "
            f"reload {r['reload'] * 1e3:8.1f} ms   after/before {r['snapshot'] / r['reload']:5.2f}x"
        )


def main() -> None:
    """Print the reset and replay measurements."""
    warnings.simplefilter("ignore")
    target = get_target("ale/breakout")
    options, contract = dict(target.spec.options), target.contract
    short = _short_log(options, contract)
    print(f"ALE reset on {target.name} (median of {ROUNDS} interleaved rounds)")
    r = bench_reset(options)
    print(
        f"  reset, seen seed    snapshot {r['snapshot'] * 1e3:8.3f} ms   "
        f"reload {r['reload'] * 1e3:8.1f} ms   reload/snapshot {r['reload'] / r['snapshot']:7.0f}x"
    )
    print(
        f"  reset, new seed     load+keep {r['new'] * 1e3:7.1f} ms   "
        f"reload {r['reload'] * 1e3:8.1f} ms"
    )
    bench_replay(f"short ({len(short)} inputs)", short, options, contract)
    bench_replay(f"reference ({len(target.reference)})", list(target.reference), options, contract)


if __name__ == "__main__":
    main()
