"""Ray versus the local pool versus serial: calibration wall time and per-task dispatch overhead.

``python benchmarks/bench_executors.py [target] [workers]`` needs the ``ray``
extra. It starts one local Ray of ``workers`` CPUs (default: every core) and
keeps it for the whole run, as a cluster is kept between jobs; the start-up
time is printed apart. Then, ``REPEATS`` times in turn:

- calibration of ``ale/breakout`` (``native/2048`` without ale-py) serially
  in this process, on the local pool and on Ray; each pool and Ray run is
  compared with the serial run just before it (a shared machine's speed
  drifts), and every report must be identical;
- ``DISPATCH_TASKS`` empty tasks on each backend: wall time per task is the
  backend's own cost of sending one call and reading its answer back.

Targets (issue: scale past one machine): Ray at least 1.6x serial, and
within 10% of the local pool.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import time
from concurrent.futures import Executor

from bench_calibrate import serial_calibration, timed_calibration
from playproof.exec import (
    SerialExecutor,
    calibrate_target,
    default_workers,
    open_executor,
)

REPEATS = 3
DISPATCH_TASKS = 400
"""Empty tasks per dispatch measurement (after a warm-up of the same size)."""


def _noop() -> None:
    """An empty task."""


def _dispatch(executor: Executor, tasks: int) -> float:
    """Seconds per empty task, all submitted at once and all read back."""
    start = time.perf_counter()
    futures = [executor.submit(_noop) for _ in range(tasks)]
    for future in futures:
        future.result()
    return (time.perf_counter() - start) / tasks


def main() -> None:
    """Print wall times, ratios and per-task overheads."""
    import ray

    default = "ale/breakout" if importlib.util.find_spec("ale_py") else "native/2048"
    name = sys.argv[1] if len(sys.argv) > 1 else default
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else default_workers()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = time.perf_counter()
    # Started here, so every Ray executor below joins it and leaves it running.
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - started

    rows: list[tuple[float, float, float]] = []
    identical = True
    for _ in range(REPEATS):
        serial_time, serial_report = timed_calibration(lambda: serial_calibration(name))
        pool_time, pool_report = timed_calibration(lambda: calibrate_target(name, workers=workers))
        ray_time, ray_report = timed_calibration(
            lambda: calibrate_target(name, executor="ray", workers=workers)
        )
        identical &= serial_report == pool_report == ray_report
        rows.append((serial_time, pool_time, ray_time))

    serial_exec = SerialExecutor()
    pool, _ = open_executor("local", workers)
    on_ray, _ = open_executor("ray", workers)
    overheads: dict[str, list[float]] = {"serial": [], "local": [], "ray": []}
    try:
        for executor in (pool, on_ray):
            _dispatch(executor, DISPATCH_TASKS)  # warm: processes started, code imported
        for _ in range(REPEATS):
            overheads["serial"].append(_dispatch(serial_exec, DISPATCH_TASKS))
            overheads["local"].append(_dispatch(pool, DISPATCH_TASKS))
            overheads["ray"].append(_dispatch(on_ray, DISPATCH_TASKS))
    finally:
        pool.shutdown()
        on_ray.shutdown()
        ray.shutdown()

    episodes = 1 + len(serial_report.baselines)
    print(f"target {name}: {episodes} episodes per calibration, {workers} workers")
    print(f"local Ray started in {ray_start:.2f} s (once; not in the times below)")
    print("serial, s     " + "  ".join(f"{s:6.2f}" for s, _, _ in rows))
    print(f"pool x{workers}, s    " + "  ".join(f"{p:6.2f}" for _, p, _ in rows))
    print(f"ray x{workers}, s     " + "  ".join(f"{r:6.2f}" for _, _, r in rows))
    pool_speedup = statistics.median(s / p for s, p, _ in rows)
    ray_speedup = statistics.median(s / r for s, _, r in rows)
    ray_vs_pool = statistics.median(r / p for _, p, r in rows)
    print(f"speedup over serial: pool {pool_speedup:.2f}x, ray {ray_speedup:.2f}x (median)")
    print(f"ray time / pool time: {ray_vs_pool:.2f} (median; target <= 1.10)")
    print(f"ray at least 1.6x serial: {ray_speedup >= 1.6}; within 10% of the pool: "
          f"{ray_vs_pool <= 1.10}")  # fmt: skip
    print(f"reports identical: {identical}")
    for backend, values in overheads.items():
        print(f"dispatch overhead {backend:<7}{statistics.median(values) * 1e6:9.0f} us per task")


if __name__ == "__main__":
    main()
