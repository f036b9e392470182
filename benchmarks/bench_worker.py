"""Worker protocol throughput, as ratios against a bare in-process loop measured in the same run.

``python benchmarks/bench_worker.py [n_inputs]`` prints:

- the bare loop (``step`` + ``evidence`` per input, in-process): the baseline;
- ``replay_in_session`` in-process, and batch ``replay`` through a worker, as
  throughput ratios to the baseline (1.0 = as fast as the bare loop);
- the live per-decision round trip of ``advance()`` through the worker versus
  in-process, in microseconds.

The game is the seeded 2048 when importable, else the toy walker of the tests.
Each timing is the best of a few repeats (the machine is shared; the minimum is
the least disturbed).
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playproof.core.contract import Contract, parse_contract
from playproof.core.game import Game, advance
from playproof.core.replay import replay_in_session
from playproof.workers import WorkerGame

REPEATS = 5
LIVE_DECISIONS = 2000
SEED = 7
_TOY_FOLDER = Path(__file__).resolve().parent.parent / "tests" / "workers"


def _target() -> tuple[str, Callable[[], Game], dict[str, str], Contract, tuple[str, ...]]:
    """Factory spec, in-process factory, child env, contract and vocabulary of the game."""
    try:
        from playproof.adapters.native import game2048
    except ImportError:
        sys.path.insert(0, str(_TOY_FOLDER))
        import toygames

        env = {
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(_TOY_FOLDER), os.environ.get("PYTHONPATH")])
            )
        }
        contract = parse_contract(
            {
                "game": "toy-walker",
                "milestones": [
                    {
                        "id": "coin",
                        "check": {"kind": "state", "key": "score", "op": ">=", "value": 1},
                    }
                ],
            }
        )
        length = 10**9
        return (
            "toygames:make_toy",
            lambda: toygames.make_toy(length=length),
            env,
            contract,
            toygames.WORDS,
        )
    contract = parse_contract(
        {
            "game": "2048",
            "milestones": [
                {
                    "id": "tile-64",
                    "check": {"kind": "state", "key": "max_tile", "op": ">=", "value": 64},
                },
                {
                    "id": "score-500",
                    "check": {"kind": "state", "key": "score", "op": ">=", "value": 500},
                },
            ],
        }
    )
    return (
        "playproof.adapters.native.game2048:make_game",
        game2048.make_game,
        {},
        contract,
        game2048.DIRECTIONS,
    )


def _best_interleaved(actions: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Best time of each action over REPEATS rounds, interleaved so load drifts hit all alike."""
    best = dict.fromkeys(actions, float("inf"))
    for _ in range(REPEATS):
        for name, action in actions.items():
            start = time.perf_counter()
            action()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def run(n_inputs: int = 10_000) -> dict[str, Any]:
    """Measure the bare loop, in-process replay, worker replay and live round trips."""
    spec, make, env, contract, words = _target()
    rng = random.Random(SEED)
    inputs = [rng.choice(words) for _ in range(n_inputs)]
    live = inputs[:LIVE_DECISIONS]
    game = make()

    def bare() -> None:
        game.reset(SEED)
        step, read = game.step, game.evidence
        read()
        for word in inputs:
            step(word)
            read()

    def local_live() -> None:
        game.reset(SEED)
        for word in live:
            advance(game, word, observe=False)

    started = time.perf_counter()
    with WorkerGame(spec, env=env) as worker:
        start_s = time.perf_counter() - started

        def worker_live() -> None:
            worker.reset(SEED)
            for word in live:
                worker.advance(word, observe=False)

        t = _best_interleaved(
            {
                "bare": bare,
                "in_process": lambda: replay_in_session(game, SEED, inputs, contract),
                "worker": lambda: worker.replay(SEED, inputs, contract),
                "worker_trace": lambda: worker.replay(SEED, inputs, contract, trace=True),
                "worker_live": worker_live,
                "local_live": local_live,
            }
        )
    return {
        "game": spec,
        "n_inputs": n_inputs,
        "bare_loop_s": t["bare"],
        "in_process_replay_s": t["in_process"],
        "worker_replay_s": t["worker"],
        "worker_replay_trace_s": t["worker_trace"],
        "in_process_replay_ratio": t["bare"] / t["in_process"],
        "worker_replay_ratio": t["bare"] / t["worker"],
        "worker_replay_trace_ratio": t["bare"] / t["worker_trace"],
        "worker_start_s": start_s,
        "advance_worker_us": t["worker_live"] / len(live) * 1e6,
        "advance_in_process_us": t["local_live"] / len(live) * 1e6,
    }


def main() -> None:
    """Print the measurements of :func:`run`."""
    n_inputs = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    r = run(n_inputs)
    print(f"game: {r['game']}  inputs: {r['n_inputs']}  (best of {REPEATS})")
    print(f"bare loop (step + evidence)    {r['bare_loop_s'] * 1e3:9.1f} ms   1.00x")
    print(
        f"in-process replay_in_session   {r['in_process_replay_s'] * 1e3:9.1f} ms   "
        f"{r['in_process_replay_ratio']:.2f}x"
    )
    print(
        f"worker batch replay            {r['worker_replay_s'] * 1e3:9.1f} ms   "
        f"{r['worker_replay_ratio']:.2f}x"
    )
    print(
        f"worker batch replay + trace    {r['worker_replay_trace_s'] * 1e3:9.1f} ms   "
        f"{r['worker_replay_trace_ratio']:.2f}x"
    )
    print(f"worker start (spawn + ready)   {r['worker_start_s'] * 1e3:9.1f} ms")
    print(
        f"live advance() round trip      worker {r['advance_worker_us']:.1f} us, "
        f"in-process {r['advance_in_process_us']:.1f} us"
    )


if __name__ == "__main__":
    main()
