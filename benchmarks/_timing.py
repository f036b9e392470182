"""Timing shared by the benchmarks: phases interleaved round by round, best round kept.

Imported by the ``bench_*.py`` scripts beside it (each runs as a script, so
this folder is on ``sys.path``).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping


def best_interleaved(
    phases: Mapping[str, Callable[[], object]],
    rounds: int,
    clock: Callable[[], float] = time.process_time,
) -> dict[str, float]:
    """The best ``clock`` seconds of each phase over ``rounds`` rounds.

    Every round runs each phase once, in order, so a load drift hits all phases
    alike; a collection before each phase keeps the garbage one phase left from
    being collected inside another.
    """
    best = dict.fromkeys(phases, float("inf"))
    for _ in range(rounds):
        for name, fn in phases.items():
            gc.collect()
            start = clock()
            fn()
            best[name] = min(best[name], clock() - start)
    return best
