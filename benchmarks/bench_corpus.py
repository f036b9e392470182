"""Corpus grading on the jailed pool vs PyBoy run directly, serially, for the same frames.

Run: ``.venv/bin/python benchmarks/bench_corpus.py``. Prints wall times and
ratios, all measured in this run:

- direct: one process imports PyBoy once and runs every ROM for exactly the
  frames the graded run used, polling serial and cartridge RAM as the runner
  does; measured before and after the jailed runs (the mean is the base, the
  two show how noisy the machine was);
- jailed, 1 job, one process for all cases: the jail and protocol cost alone;
- jailed, 1 and 2 jobs with a fresh process (and jail) per case: the default,
  which also pays the candidate's own start (Python, numpy, PyBoy) per case;
- jailed, 2 jobs, 8 cases per process.
"""

from __future__ import annotations

import io
import time

from playproof.corpus import (
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    shipped_paths,
)
from playproof.corpus._runner import RESULT_BLOCK_BYTES


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

    serial_jail, frames, passed = timed(1, count)
    poll = manifest.cases[0].poll_frames
    before = direct(corpus.roms, frames, poll)
    fresh_one, _, _ = timed(1, 1)
    pool_fresh, _, _ = timed(2, 1)
    pool_reuse, _, _ = timed(2, 8)
    after = direct(corpus.roms, frames, poll)
    base = (before + after) / 2
    total_frames = sum(frames.values())
    print(f"cases {count}, passed {passed}, emulated frames {total_frames}")
    print(f"direct PyBoy, serial          {base:7.2f} s  (runs {before:.2f} and {after:.2f})")
    rows = (
        ("jailed, 1 job, 1 process     ", serial_jail),
        ("jailed, 1 job, fresh process ", fresh_one),
        ("jailed, 2 jobs, fresh process", pool_fresh),
        ("jailed, 2 jobs, 8 per process", pool_reuse),
    )
    for label, seconds in rows:
        print(f"{label} {seconds:7.2f} s  ratio {seconds / base:5.2f}")
    overhead = (serial_jail - base) / count
    print(
        f"jail+protocol overhead per case (1 process): {overhead * 1000:.1f} ms "
        f"({(serial_jail / base - 1) * 100:.1f}% of direct)"
    )
    fresh = (fresh_one - base) / count
    print(
        f"fresh process per case, 1 job: {fresh * 1000:.0f} ms per case over direct "
        f"({(fresh_one / base - 1) * 100:.0f}%; jail start, candidate start, cleanup)"
    )
    print(f"pool speedup, fresh process per case: {fresh_one / pool_fresh:.2f}x")
    reuse = serial_jail / pool_reuse
    print(f"pool speedup (2 jobs, 8 per process) vs 1 job, 1 process: {reuse:.2f}x")


if __name__ == "__main__":
    main()
