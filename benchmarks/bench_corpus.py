"""Corpus grading on the jailed pool vs PyBoy run directly, serially, for the same frames.

Run: ``.venv/bin/python benchmarks/bench_corpus.py``. Prints wall times and
ratios, all measured in this run:

- direct: one process imports PyBoy once and runs every ROM for exactly the
  frames the graded run used, polling serial and cartridge RAM as the runner
  does; measured before and after the jailed runs (the mean is the base, the
  two show how noisy the machine was);
- jailed, 1 job, one process for all cases: the jail and protocol cost alone;
- jailed, 1 job, a fresh process (and jail) per case, each started only when
  its case is due: strictly serial grading, the pool's baseline. Its cost over
  direct splits into the candidate's own start (Python, numpy, PyBoy; measured
  by starting the reference candidate outside any jail until it answers
  HELLO), the jail's start and cleanup (a shell candidate that only answers
  HELLO, started through the runner's launch, kill and sweep, minus the same
  started bare) and the protocol (the one-process row);
- jailed, 1 and 2 jobs with a fresh process per case, the next one started
  while the current case runs: the default;
- jailed, 2 jobs, 8 cases per process.

Each ratio compares runs made back to back: the one-process run with the
direct runs on either side of it (``PAIRS`` times), the pools with the serial
runs just before them (``ROUNDS`` times). Medians are reported with every
value: on a shared machine whose speed drifts, comparing runs from different
moments measures the drift.
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import time
from pathlib import Path

from playproof.corpus import (
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    run_corpus,
    shipped_paths,
)
from playproof.corpus._cgroup import memory_cgroup_in_use
from playproof.corpus._jail import JailLimits, JailSpec, launch, reserve_lanes
from playproof.corpus._protocol import CandidateChannel
from playproof.corpus._runner import RESULT_BLOCK_BYTES

STARTS = 20
"""How many unjailed candidate starts are timed (their mean stands for every case)."""
ROUNDS = 3
PAIRS = 7


def _steal_seconds() -> float:
    """CPU time the hypervisor gave to other guests (Linux ``/proc/stat``), all cores."""
    try:
        with open("/proc/stat", "rb") as handle:
            fields = handle.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def direct(roms: dict[str, bytes], frames: dict[str, int], poll: int) -> float:
    """Seconds to run every ROM on PyBoy in this process (import included once)."""
    started = time.perf_counter()
    from pyboy import PyBoy

    for case_id, rom in roms.items():
        pyboy = PyBoy(io.BytesIO(rom), window="null", sound_emulated=True, cgb=False)
        done = 0
        while done < frames[case_id]:
            step = min(poll, frames[case_id] - done)
            pyboy.tick(step, False, False)
            done += step
            pyboy._serial()
            bytes(pyboy.memory[0xA000 : 0xA000 + RESULT_BLOCK_BYTES])
        pyboy.stop(save=False)
    return time.perf_counter() - started


SH_RESPONDER = ("/bin/sh", "-c", 'read -r line; echo "OK playproof-corpus/1 sh"; read -r line')
"""A candidate that only answers HELLO: its start costs next to nothing, so the jail's
own start and cleanup stand out when it is started with and without the jail."""


def candidate_start(
    command: tuple[str, ...], read_only: tuple[Path, ...], lane: int | None
) -> float:
    """Seconds to start ``command`` until it answers HELLO, then kill it as the runner does.

    With a ``lane``: through the runner's own launch and cleanup (bubblewrap,
    prlimit, uid drop, kill and sweep, scratch removal). Without: the same
    command as a bare subprocess with the jail's environment.
    """
    started = time.perf_counter()
    if lane is not None:
        jail = JailSpec(read_only=read_only, limits=JailLimits())
        # With the control group a grading as root uses, so its cost is counted too.
        cgroup = memory_cgroup_in_use(True) != "none"
        process = launch(list(command), jail, lane, cgroup=cgroup)
        _hello(process.process)
        process.stop()
        process.discard()
        return time.perf_counter() - started
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    plain = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    _hello(plain)
    plain.kill()
    plain.wait(timeout=60)
    for stream in (plain.stdin, plain.stdout):
        if stream is not None:
            stream.close()
    return time.perf_counter() - started


def _hello(process: subprocess.Popen[bytes]) -> None:
    assert process.stdin is not None
    assert process.stdout is not None
    CandidateChannel(process.stdin, process.stdout, time.monotonic() + 60).hello()


def main() -> None:
    """Measure and print."""
    manifest_path, answers_path, roms_dir = shipped_paths("blargg")
    manifest = load_manifest(manifest_path)
    answers = load_answers(answers_path, manifest)
    corpus = load_corpus(manifest, roms_dir)
    spec = reference_candidate_spec()
    count = manifest.denominator

    def timed(jobs: int, per_process: int) -> tuple[float, dict[str, int], int]:
        started = time.perf_counter()
        run = grade_candidate(corpus, answers, spec, jobs=jobs, cases_per_process=per_process)
        elapsed = time.perf_counter() - started
        return elapsed, {o.case_id: o.frames for o in run.observations}, run.grade.passed

    def serial() -> float:
        outcome = run_corpus(corpus, spec, jobs=1, cases_per_process=1, prestart=False)
        assert all(o.outcome == "ok" for o in outcome.observations)
        return outcome.wall_seconds

    stolen = _steal_seconds()
    _, frames, passed = timed(1, count)  # also warms the page cache
    poll = manifest.cases[0].poll_frames
    direct(corpus.roms, frames, poll)  # imports PyBoy; not counted
    directs = [direct(corpus.roms, frames, poll)]
    # The protocol: one-process runs alternating with direct runs; each is
    # compared with the mean of the direct runs on either side of it.
    jailed: list[float] = []
    for _ in range(PAIRS):
        jailed.append(timed(1, count)[0])
        directs.append(direct(corpus.roms, frames, poll))
    overheads = [
        run / ((before + after) / 2) - 1
        for run, before, after in zip(jailed, directs, directs[1:], strict=False)
    ]
    rounds: list[dict[str, float]] = []
    for _ in range(ROUNDS):
        # Each pool is compared with the serial run just before it, so a slow
        # spell of the machine between rounds does not enter the ratio.
        row = {"serial_jail": timed(1, count)[0]}
        row["pool_reuse"] = timed(2, 8)[0]
        row["serial_fresh"] = serial()
        row["pool_fresh"] = timed(2, 1)[0]
        row["fresh_one"] = timed(1, 1)[0]
        rounds.append(row)
    starts = [candidate_start(spec.command, spec.read_only, None) for _ in range(STARTS)]
    start = statistics.median(starts)
    extra: list[float] = []
    with reserve_lanes(1) as (lane,):
        for _ in range(STARTS):  # pairs, so each difference compares neighbouring moments
            plain = candidate_start(SH_RESPONDER, (), None)
            extra.append(candidate_start(SH_RESPONDER, (), lane) - plain)
    jail_start = statistics.median(extra)

    def median(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}x (rounds: {', '.join(f'{v:.2f}' for v in values)})"

    print(f"cases {count}, passed {passed}, emulated frames {sum(frames.values())}")
    print("direct PyBoy, serial, s:     " + "  ".join(f"{d:5.2f}" for d in directs))
    print("jailed, 1 process, s:          " + "  ".join(f"{j:5.2f}" for j in jailed))
    print(f"seconds per round ({ROUNDS} rounds):")
    for name in rounds[0]:
        print(f"  {name:14s} " + "  ".join(f"{row[name]:6.2f}" for row in rounds))
    protocol = statistics.median(overheads)
    per_case = statistics.median(directs) / count
    print(
        f"jail+protocol, one process for all cases: {protocol * 100:.1f}% of direct "
        f"(median of {PAIRS}: {', '.join(f'{o * 100:.1f}%' for o in overheads)}); "
        f"{protocol * per_case * 1000:.1f} ms of a {per_case * 1000:.0f} ms case"
    )
    print(
        f"per fresh process: the candidate's own start (to HELLO, unjailed, median of {STARTS}) "
        f"{start * 1000:.0f} ms; the jail's start and cleanup {jail_start * 1000:.1f} ms "
        f"(a shell candidate jailed minus unjailed, median of {STARTS} pairs)"
    )
    jail_cost = jail_start / per_case + protocol
    print(f"jail+protocol per case with a fresh jail per case: {jail_cost * 100:.1f}% of direct")
    print(
        "pool speedup, fresh process per case, vs strictly serial: "
        + median([row["serial_fresh"] / row["pool_fresh"] for row in rounds])
    )
    print(
        "  1 job, next process prestarted, vs strictly serial:     "
        + median([row["serial_fresh"] / row["fresh_one"] for row in rounds])
    )
    print(
        "pool speedup, 8 cases per process, vs 1 process:          "
        + median([row["serial_jail"] / row["pool_reuse"] for row in rounds])
    )
    print(
        f"CPU time stolen by the hypervisor during the benchmark: "
        f"{_steal_seconds() - stolen:.1f} s (noise indicator)"
    )


if __name__ == "__main__":
    main()
