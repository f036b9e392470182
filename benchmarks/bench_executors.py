"""Ray versus the local pool versus serial, and the per-task costs of the wall-time model.

``.venv/bin/python benchmarks/bench_executors.py [target] [workers]`` (an
interpreter path without ``..``: the grading jail shows the interpreter at the
path it was started by) needs the ``ray`` extra. It starts one local Ray
cluster of two nodes (a head and a second node, ``workers // 2`` CPUs each, at
least one, on this machine) and keeps it for the whole run, as a cluster is
kept between jobs; the start-up time is printed apart. Then, ``REPEATS`` times in turn:

- calibration of ``ale/breakout`` (``native/2048`` without ale-py) serially
  in this process, on the local pool and on Ray; each pool and Ray run is
  compared with the serial run just before it (a shared machine's speed
  drifts), and every report must be identical;
- grading of two shipped corpora by their reference, in one lane, on the
  local pool and on Ray: CHIP-8 (8 short cases, a fresh process each: one task
  per case) and Mooneye (66 cases, 8 per process: one task per group of 8);
  every grade of a corpus must be the same;
- ``DISPATCH_TASKS`` empty tasks on each backend: wall time per task is the
  backend's own cost of sending one call and reading its answer back;
- ``TRANSFER_TASKS`` tasks each sent ``TRANSFER_BYTES`` of arguments: the
  extra time per task over an empty one, per MiB, is the transfer cost;
- ``FRESH_TASKS`` empty Ray tasks that each need a new worker process
  (``max_calls=1``): the extra time over a warm task is a worker's start.

These are the inputs of the wall-time model in ``docs/scale.md``.
Targets (issue: scale past one machine): Ray at least 1.6x serial, and
within 10% of the local pool.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from bench_calibrate import serial_calibration, timed_calibration
from playproof.corpus import (
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    shipped_paths,
)
from playproof.exec import (
    SerialExecutor,
    calibrate_target,
    default_workers,
    open_executor,
)

REPEATS = 3
DISPATCH_TASKS = 400
"""Empty tasks per dispatch measurement (after a warm-up of the same size)."""
TRANSFER_TASKS = 40
TRANSFER_BYTES = 8 * 1024 * 1024
"""Bytes of arguments each transfer task is sent (fresh bytes for every task)."""
FRESH_TASKS = 20
"""Ray tasks that each start a new worker process."""


def _noop() -> None:
    """An empty task."""


def _size(data: bytes) -> int:
    """A task that reads its argument."""
    return len(data)


def _dispatch(executor: Executor, tasks: int) -> float:
    """Seconds per empty task, all submitted at once and all read back."""
    start = time.perf_counter()
    futures = [executor.submit(_noop) for _ in range(tasks)]
    for future in futures:
        future.result()
    return (time.perf_counter() - start) / tasks


def _transfer(executor: Executor, tasks: int, size: int) -> float:
    """Seconds per task sent ``size`` fresh bytes of argument."""
    payloads = [os.urandom(size) for _ in range(tasks)]
    start = time.perf_counter()
    futures = [executor.submit(_size, payload) for payload in payloads]
    for future in futures:
        future.result()
    return (time.perf_counter() - start) / tasks


def _fresh_workers(tasks: int) -> tuple[float, float]:
    """Seconds per empty Ray task on a warm worker, and on a worker started for it."""
    import ray

    warm = ray.remote(num_cpus=1)(_noop)
    fresh = ray.remote(num_cpus=1, max_calls=1)(_noop)
    ray.get([warm.remote() for _ in range(tasks)])  # warm workers exist
    times = []
    for remote in (warm, fresh):
        start = time.perf_counter()
        for _ in range(tasks):  # one after another: the latency of one task, not throughput
            ray.get(remote.remote())
        times.append((time.perf_counter() - start) / tasks)
    return times[0], times[1]


GRADINGS = (("chip8", 1), ("mooneye", 8))
"""Shipped corpora graded, with the cases each candidate process serves."""


def _grading(
    name: str, reuse: int
) -> Callable[[Executor | None, int], tuple[float, dict[str, Any]]]:
    """Grade a shipped corpus by its reference: wall seconds and the timeless record."""
    manifest_path, answers_path, roms = shipped_paths(name)
    manifest = load_manifest(manifest_path)
    corpus = load_corpus(manifest, roms)
    answers = load_answers(answers_path, manifest)
    spec = dataclasses.replace(
        reference_candidate_spec(manifest.platform),
        hidden=(roms.resolve(),),
        secret=(answers_path,),
    )

    def grade(executor: Executor | None, jobs: int) -> tuple[float, dict[str, Any]]:
        start = time.perf_counter()
        run = grade_candidate(
            corpus,
            answers,
            spec,
            jobs=jobs,
            cases_per_process=reuse,
            executor=executor,
            isolation="auto" if executor is None else "bubblewrap",
        )
        seconds = time.perf_counter() - start
        crashed = [seen for seen in run.observations if seen.outcome == "crash"]
        if crashed:  # the shipped references never crash: the timing would be meaningless
            first = crashed[0]
            raise SystemExit(
                f"{name}: {len(crashed)} cases crashed, e.g. {first.case_id}: {first.detail}; "
                f"{first.stderr_tail[-300:]!r} (run this benchmark with an interpreter "
                "path without '..': the jail shows the interpreter at the path it was started by)"
            )
        return seconds, run.record.model_dump(exclude={"started_at", "finished_at"})

    return grade


def _difference(first: dict[str, Any], second: dict[str, Any]) -> str:
    """The first field (or case result) in which two timeless grade records differ."""
    for field, value in first.items():
        if value != second.get(field):
            if field == "results":
                for one, other in zip(value, second["results"], strict=False):
                    if one != other:
                        return f"case {one['case_id']}: {one} against {other}"
            return f"{field}: {value} against {second.get(field)}"
    return "nothing"


def _start_cluster(workers: int) -> tuple[Any, str, float]:
    """A two-node local Ray cluster of ``workers`` CPUs (at least one each), its folder, and
    how long it took to start."""
    import ray
    from ray.cluster_utils import Cluster

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    folder = tempfile.mkdtemp(prefix="ppray")  # short: Ray's socket paths live under it
    per_node = max(1, workers // 2)
    common = {"num_cpus": per_node, "temp_dir": folder}
    # Ray's cluster helper writes the head's address under Ray's default temporary
    # folder whatever ``temp_dir`` says; on a fresh machine that folder is missing.
    os.makedirs(os.path.join(tempfile.gettempdir(), "ray"), exist_ok=True)
    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={**common, "include_dashboard": False})
    cluster.add_node(**common)
    # Started here, so every Ray executor below joins it and leaves it running.
    ray.init(address=cluster.address, log_to_driver=False)
    return cluster, folder, time.perf_counter() - started


def main() -> None:
    """Print wall times, ratios and per-task overheads."""
    import ray

    default = "ale/breakout" if importlib.util.find_spec("ale_py") else "native/2048"
    name = sys.argv[1] if len(sys.argv) > 1 else default
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else default_workers()
    cluster, folder, ray_start = _start_cluster(workers)

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
    transfers: dict[str, list[float]] = {"local": [], "ray": []}
    gradings = {name: _grading(name, reuse) for name, reuse in GRADINGS}
    grades: dict[str, list[tuple[float, float, float]]] = {name: [] for name in gradings}
    passed: dict[str, int] = {}
    same_grade = True
    fresh: list[tuple[float, float]] = []
    try:
        for executor in (pool, on_ray):
            _dispatch(executor, DISPATCH_TASKS)  # warm: processes started, code imported
        for grading in gradings.values():
            grading(on_ray, workers)  # warm: every Ray worker has imported the grader
        for _ in range(REPEATS):
            overheads["serial"].append(_dispatch(serial_exec, DISPATCH_TASKS))
            overheads["local"].append(_dispatch(pool, DISPATCH_TASKS))
            overheads["ray"].append(_dispatch(on_ray, DISPATCH_TASKS))
            for backend, executor in (("local", pool), ("ray", on_ray)):
                empty = _dispatch(executor, TRANSFER_TASKS)
                sent = _transfer(executor, TRANSFER_TASKS, TRANSFER_BYTES)
                transfers[backend].append((sent - empty) / (TRANSFER_BYTES / 2**20))
            for corpus, grading in gradings.items():
                one_time, one_grade = grading(None, 1)
                pool_time, pool_grade = grading(None, workers)
                ray_time, ray_grade = grading(on_ray, workers)
                for backend, other in (("pool", pool_grade), ("ray", ray_grade)):
                    if other != one_grade:
                        same_grade = False
                        print(f"{corpus}: the {backend} grade differs from one lane's: "
                              f"{_difference(one_grade, other)}")  # fmt: skip
                grades[corpus].append((one_time, pool_time, ray_time))
                passed[corpus] = int(one_grade["passed"])
            fresh.append(_fresh_workers(FRESH_TASKS))
    finally:
        pool.shutdown()
        on_ray.shutdown()
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(folder, ignore_errors=True)

    episodes = 1 + len(serial_report.baselines)
    print(f"target {name}: {episodes} episodes per calibration, {workers} workers")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"local two-node Ray started in {ray_start:.2f} s (once; not in the times below)")
    print("serial, s     " + "  ".join(f"{s:6.2f}" for s, _, _ in rows))
    print(f"pool x{workers}, s    " + "  ".join(f"{p:6.2f}" for _, p, _ in rows))
    print(f"ray x{workers}, s     " + "  ".join(f"{r:6.2f}" for _, _, r in rows))
    pool_speedup = statistics.median(s / p for s, p, _ in rows)
    ray_speedup = statistics.median(s / r for s, _, r in rows)
    ray_vs_pool = statistics.median(r / p for _, p, r in rows)
    print(f"per episode, serial: {statistics.median(s for s, _, _ in rows) / episodes:.3f} s")
    print(f"speedup over serial: pool {pool_speedup:.2f}x, ray {ray_speedup:.2f}x (median)")
    print(f"ray time / pool time: {ray_vs_pool:.2f} (median; target <= 1.10)")
    print(f"ray at least 1.6x serial: {ray_speedup >= 1.6}; within 10% of the pool: "
          f"{ray_vs_pool <= 1.10}")  # fmt: skip
    print(f"reports identical: {identical}")
    for (corpus, reuse), times in zip(GRADINGS, grades.values(), strict=True):
        cases = len(load_manifest(shipped_paths(corpus)[0]).cases)
        print(f"{corpus} grading ({cases} cases, {reuse} per process), s: "
              f"one lane / {workers} lanes / ray x{workers}")  # fmt: skip
        for one, local, remote in times:
            print(f"  {one:6.2f}  {local:6.2f}  {remote:6.2f}")
        per_case = statistics.median(one for one, _, _ in times) / cases
        ratio = statistics.median(r / p for _, p, r in times)
        print(f"  per case, one lane: {per_case * 1e3:.0f} ms; ray time / pool time: {ratio:.2f}")
        print(f"  passed {passed[corpus]} of {cases}")
    print(f"grades identical (apart from start and finish times): {same_grade}")
    for backend, values in overheads.items():
        print(f"dispatch overhead {backend:<7}{statistics.median(values) * 1e6:9.0f} us per task")
    for backend, values in transfers.items():
        print(f"argument transfer {backend:<7}{statistics.median(values) * 1e3:9.2f} ms per MiB")
    warm = statistics.median(w for w, _ in fresh)
    cold = statistics.median(c for _, c in fresh)
    print(f"one ray task at a time: {warm * 1e3:.1f} ms on a warm worker, "
          f"{cold * 1e3:.0f} ms on a new one")  # fmt: skip


if __name__ == "__main__":
    main()
