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
  HELLO), the jail's start and cleanup (the same start through the runner's
  launch, kill and sweep, minus the unjailed one) and the protocol (the
  one-process row);
- jailed, 1 and 2 jobs with a fresh process per case, the next one started
  while the current case runs: the default;
- jailed, 2 jobs, 8 cases per process.

Every run is repeated ``ROUNDS`` times, interleaved, and the fastest of each
is kept, so a burst of load elsewhere on a shared machine lands on one round
of one run rather than on one run only. Direct is the mean of its fastest two
(one per round, first and last of the round).
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import time

from playproof.corpus import (
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    run_corpus,
    shipped_paths,
)
from playproof.corpus._jail import JailLimits, JailSpec, launch, reserve_lanes
from playproof.corpus._protocol import CandidateChannel
from playproof.corpus._runner import RESULT_BLOCK_BYTES, CandidateSpec

STARTS = 12
"""How many unjailed candidate starts are timed (their mean stands for every case)."""
ROUNDS = 2


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


def candidate_start(spec: CandidateSpec, jailed: bool) -> float:
    """Seconds to start the candidate until it answers HELLO, then kill it as the runner does.

    Jailed: through the runner's own launch and cleanup (bubblewrap, prlimit,
    uid drop, kill and sweep, scratch removal). Plain: the same command as a
    bare subprocess with the jail's environment.
    """
    started = time.perf_counter()
    if jailed:
        limits = JailLimits()
        jail = JailSpec(read_only=spec.read_only, limits=limits, env=spec.env)
        with reserve_lanes(1) as (lane,):
            process = launch(list(spec.command), jail, lane)
            _hello(process.process)
            process.stop()
            process.discard()
        return time.perf_counter() - started
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    plain = subprocess.Popen(
        spec.command,
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

    _, frames, passed = timed(1, count)  # also warms the page cache
    poll = manifest.cases[0].poll_frames
    best: dict[str, float] = {}
    directs: list[float] = []
    for _ in range(ROUNDS):
        directs.append(direct(corpus.roms, frames, poll))
        for name, run in (
            ("serial_jail", lambda: timed(1, count)[0]),
            ("serial_fresh", serial),
            ("fresh_one", lambda: timed(1, 1)[0]),
            ("pool_fresh", lambda: timed(2, 1)[0]),
            ("pool_reuse", lambda: timed(2, 8)[0]),
        ):
            best[name] = min(best.get(name, float("inf")), run())
        directs.append(direct(corpus.roms, frames, poll))
    starts: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(STARTS):  # interleaved, like the runs above
        for jailed in (False, True):
            starts[jailed].append(candidate_start(spec, jailed))
    start = statistics.mean(starts[False])
    jail_start = statistics.mean(starts[True]) - start
    before, after = sorted(directs)[:2]
    base = (before + after) / 2
    serial_jail, serial_fresh, fresh_one = (
        best["serial_jail"],
        best["serial_fresh"],
        best["fresh_one"],
    )
    pool_fresh, pool_reuse = best["pool_fresh"], best["pool_reuse"]
    per_case = base / count
    total_frames = sum(frames.values())
    print(f"cases {count}, passed {passed}, emulated frames {total_frames}")
    label = "direct PyBoy, serial".ljust(40)
    print(f"{label} {base:7.2f} s  (fastest two of {', '.join(f'{d:.2f}' for d in directs)})")
    rows = (
        ("jailed, 1 job, 1 process               ", serial_jail),
        ("jailed, 1 job, fresh process, serial   ", serial_fresh),
        ("jailed, 1 job, fresh process, prestart ", fresh_one),
        ("jailed, 2 jobs, fresh process (default)", pool_fresh),
        ("jailed, 2 jobs, 8 per process          ", pool_reuse),
    )
    for label, seconds in rows:
        print(f"{label} {seconds:7.2f} s  ratio {seconds / base:5.2f}")
    overhead = (serial_jail - base) / count
    print(
        f"jail+protocol per case, one process for all cases: {overhead * 1000:.1f} ms "
        f"({overhead / per_case * 100:.1f}% of a direct case, {per_case * 1000:.0f} ms)"
    )
    fresh = (serial_fresh - base) / count
    print(
        f"fresh process per case, serial: {fresh * 1000:.0f} ms per case over direct; "
        f"the candidate's own start (to HELLO, unjailed, mean of {STARTS}) is "
        f"{start * 1000:.0f} ms"
    )
    jail_cost = jail_start + overhead
    print(
        f"jail start and cleanup per case: {jail_start * 1000:.1f} ms (jailed minus unjailed "
        f"start); with the protocol: {jail_cost * 1000:.1f} ms "
        f"({jail_cost / per_case * 100:.1f}% of a direct case)"
    )
    print(f"pool speedup, fresh process per case, vs serial:   {serial_fresh / pool_fresh:.2f}x")
    print(f"  (1 job with its next process prestarted: {serial_fresh / fresh_one:.2f}x)")
    print(f"pool speedup, 8 cases per process, vs 1 process:   {serial_jail / pool_reuse:.2f}x")


if __name__ == "__main__":
    main()
