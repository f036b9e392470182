"""Calibration on a process pool versus serially, as a wall-time ratio measured in the same run.

``python benchmarks/bench_calibrate.py [target] [workers]`` calibrates ``ale/breakout``
(reference plus every baseline at reference length; ``native/2048`` when ale-py is
missing) twice: serially in this process (one game, every episode in turn) and on
the local process pool (default: every core). It prints both wall times, the
speedup (serial / pool) and checks that both reports are identical. Serial and
pool runs alternate ``REPEATS`` times and each pool run is compared with the
serial run just before it: on a shared machine whose speed drifts, comparing
runs from different moments would measure the drift. The median ratio is
reported with every pair's.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from collections.abc import Callable

from playproof.exec import GameSpec, calibrate_target, default_workers, resolve_target
from playproof.verify import CalibrationReport, SerialReplayer, calibrate

REPEATS = 5


def serial_calibration(name: str) -> CalibrationReport:
    """Every episode in this process on one in-process game (no pool, no worker hop)."""
    target = resolve_target(name)
    return calibrate(
        SerialReplayer(GameSpec.of_target(target).open),
        target.contract,
        target.reference,
        seed=target.spec.reference_seed,
        opaque=target.spec.opaque,
    )


def timed_calibration(run: Callable[[], CalibrationReport]) -> tuple[float, CalibrationReport]:
    """Wall seconds of one calibration, and its report."""
    start = time.perf_counter()
    report = run()
    return time.perf_counter() - start, report


def main() -> None:
    """Print serial and pool wall times and their ratio."""
    default = "ale/breakout" if importlib.util.find_spec("ale_py") else "native/2048"
    name = sys.argv[1] if len(sys.argv) > 1 else default
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else default_workers()
    pairs: list[tuple[float, float]] = []
    for _ in range(REPEATS):
        serial_time, serial_report = timed_calibration(lambda: serial_calibration(name))
        pool_time, pool_report = timed_calibration(lambda: calibrate_target(name, workers=workers))
        pairs.append((serial_time, pool_time))
    inputs = serial_report.length * (1 + len(serial_report.baselines))
    ratios = [serial / pool for serial, pool in pairs]
    print(f"target {name}: {1 + len(serial_report.baselines)} episodes, {inputs} inputs")
    print("serial, s       " + "  ".join(f"{serial:6.2f}" for serial, _ in pairs))
    print(f"pool x{workers:<2}, s     " + "  ".join(f"{pool:6.2f}" for _, pool in pairs))
    print(
        f"speedup         {statistics.median(ratios):.2f}x median "
        f"(pairs: {', '.join(f'{r:.2f}' for r in ratios)})"
    )
    print(f"reports identical: {serial_report == pool_report}")


if __name__ == "__main__":
    main()
