"""Calibration on a process pool versus serially, as a wall-time ratio measured in the same run.

``python benchmarks/bench_calibrate.py [target] [workers]`` calibrates ``ale/breakout``
(reference plus every baseline at reference length; ``native/2048`` when ale-py is
missing) twice: serially in this process (one game, every episode in turn) and on
the local process pool (default: every core). It prints both wall times, the
speedup (serial / pool) and checks that both reports are identical. Each timing is
the best of ``REPEATS`` (the machine is shared; the minimum is the least disturbed).
"""

from __future__ import annotations

import importlib.util
import sys
import time

from playproof.exec import GameSpec, calibrate_target, default_workers, resolve_target
from playproof.verify import CalibrationReport, SerialReplayer, calibrate

REPEATS = 3


def _serial(name: str) -> CalibrationReport:
    """Every episode in this process on one in-process game (no pool, no worker hop)."""
    target = resolve_target(name)
    return calibrate(
        SerialReplayer(GameSpec.of_target(target).open),
        target.contract,
        target.reference,
        seed=target.spec.reference_seed,
        opaque=target.spec.opaque,
    )


def _best(run: object) -> tuple[float, CalibrationReport]:
    best, report = float("inf"), None
    for _ in range(REPEATS):
        start = time.perf_counter()
        report = run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    assert isinstance(report, CalibrationReport)
    return best, report


def main() -> None:
    """Print serial and pool wall times and their ratio."""
    default = "ale/breakout" if importlib.util.find_spec("ale_py") else "native/2048"
    name = sys.argv[1] if len(sys.argv) > 1 else default
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else default_workers()
    serial_time, serial_report = _best(lambda: _serial(name))
    pool_time, pool_report = _best(lambda: calibrate_target(name, workers=workers))
    inputs = serial_report.length * (1 + len(serial_report.baselines))
    print(f"target {name}: {1 + len(serial_report.baselines)} episodes, {inputs} inputs")
    print(f"serial          {serial_time:8.2f} s  ({inputs / serial_time:8.0f} inputs/s)")
    print(f"pool x{workers:<2}        {pool_time:8.2f} s  ({inputs / pool_time:8.0f} inputs/s)")
    print(f"speedup         {serial_time / pool_time:8.2f}x")
    print(f"reports identical: {serial_report == pool_report}")


if __name__ == "__main__":
    main()
