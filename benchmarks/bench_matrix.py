"""The matrix runner's own overhead per cell, against playing the same episodes in a bare loop.

A 1,000-cell matrix of cheap cells: ``native/2048`` with two baseline agents
(random walk and round robin), 250 seeds, 2 repetitions, 10 turns each.
Measured in the same run, wall time (the runner's work includes writing and
flushing files):

- ``bare loop``: the same 1,000 episodes through :func:`playproof.run`, one
  after another in this process, nothing signed or written;
- ``runner, serial``: :func:`playproof.matrix.run_matrix` with the serial
  executor into an empty folder (plays, signs, writes each record atomically
  with an fsync); its overhead per cell is (runner - bare) / cells;
- ``resume``: the same call again, every cell already recorded (each record
  read and its signature checked, nothing played);
- ``runner, pool``: the local process pool (every core) into an empty folder,
  for the speed-up it buys on cells this cheap.

Target: at most 5 ms of runner overhead per cell.

    python benchmarks/bench_matrix.py [cells-per-agent-and-repetition]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import playproof
from playproof.cli._matrix import build_agent
from playproof.matrix import MatrixSpec, parse_spec, run_matrix
from playproof.sign import SigningKey
from playproof.targets import get_target

SEEDS = int(sys.argv[1]) if len(sys.argv) > 1 else 250
TURNS = 10
ROUNDS = 2
"""Rounds per phase; the best one counts."""
OVERHEAD_TARGET_MS = 5.0


def _spec() -> MatrixSpec:
    seeds = ", ".join(str(s) for s in range(SEEDS))
    return parse_spec(
        f"""
        name = "bench"
        targets = ["native/2048"]
        seeds = [{seeds}]
        repetitions = 2
        max_turns = {TURNS}

        [[agents]]
        name = "walk"
        agent = "baseline:random-walk"

        [[agents]]
        name = "robin"
        agent = "baseline:round-robin"
        """
    )


def _bare(spec: MatrixSpec) -> float:
    target = get_target("native/2048")
    start = time.perf_counter()
    for cell in spec.cells():
        profile = spec.profile(cell.agent)
        agent = build_agent(profile, target, profile.agent_seed + cell.repetition)
        playproof.run(
            target, agent.driver, seed=cell.seed, max_turns=TURNS, worker=False,
            settings=agent.settings,
        )  # fmt: skip
    return time.perf_counter() - start


def _runner(spec: MatrixSpec, folder: Path, key: SigningKey, executor: str) -> tuple[float, int]:
    start = time.perf_counter()
    outcome = run_matrix(spec, folder, key, build_agent, executor=executor)
    return time.perf_counter() - start, outcome.played


def main() -> None:
    spec = _spec()
    cells = len(spec.cells())
    key = SigningKey.generate()
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(ROUNDS):
            folder = Path(scratch) / f"serial-{round_}"
            timings = {"bare loop": _bare(spec)}
            timings["runner, serial"], played = _runner(spec, folder, key, "serial")
            assert played == cells
            timings["resume"], played = _runner(spec, folder, key, "serial")
            assert played == 0
            timings["runner, pool"], played = _runner(
                spec, Path(scratch) / f"pool-{round_}", key, "local"
            )
            assert played == cells
            for name, seconds in timings.items():
                best[name] = min(best.get(name, seconds), seconds)
    bare = best["bare loop"]
    print(f"{cells} cells of native/2048, {TURNS} turns each; best of {ROUNDS} rounds (wall time)")
    for name, seconds in best.items():
        print(f"  {name:15s} {seconds * 1000 / cells:7.3f} ms/cell  {seconds / bare:5.2f}x bare")
    overhead = (best["runner, serial"] - bare) * 1000 / cells
    verdict = "ok" if overhead <= OVERHEAD_TARGET_MS else "OVER TARGET"
    print(f"runner overhead: {overhead:.3f} ms/cell (target <= {OVERHEAD_TARGET_MS} ms): {verdict}")
    print(f"resume check: {best['resume'] * 1000 / cells:.3f} ms/cell")


if __name__ == "__main__":
    main()
