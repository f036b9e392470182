"""What ROM variants add to a grading: the reference graded with and without them.

Run: ``.venv/bin/python benchmarks/bench_variants.py [corpus ...]`` (default:
chip8, dmg-acid2, mooneye and blargg). For each corpus it grades the reference
candidate with no variants and with the default variants per case (a fixed
seed, so every round makes the same variants), alternating the two ``ROUNDS``
times, and prints every wall time and the median ratio of each back-to-back
pair. The patch search is timed on its own: first in the process with two
jobs (cases searched at once), then again with one job and with two (the
reference's runs on the original ROMs are remembered by then; tries are not).
Mooneye and Blargg run 8 cases per process, as their docs recommend.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time

from playproof.corpus import (
    grade_candidate,
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    shipped_paths,
)
from playproof.corpus._variants import VariantPlan, default_variants, load_symbols, make_variants

ROUNDS = 3
SEED = bytes(range(32))
REUSE = {"mooneye": 8, "blargg": 8}


def bench(name: str) -> None:
    manifest_path, answers_path, roms = shipped_paths(name)
    manifest = load_manifest(manifest_path)
    answers = load_answers(answers_path, manifest)
    corpus = load_corpus(manifest, roms)
    spec = dataclasses.replace(
        reference_candidate_spec(manifest.platform), hidden=(roms.resolve(),)
    )
    per_case = default_variants(manifest)
    plan = VariantPlan(seed=SEED, per_case=per_case, symbols=load_symbols(roms, manifest))
    reuse = REUSE.get(name, 1)
    searches: list[float] = []
    for jobs in (2, 1, 2):
        started = time.perf_counter()
        made = make_variants(corpus, plan, jobs=jobs)
        searches.append(time.perf_counter() - started)
    plain: list[float] = []
    varied: list[float] = []
    for _ in range(ROUNDS):
        for plans, times in ((None, plain), (plan, varied)):
            started = time.perf_counter()
            run = grade_candidate(corpus, answers, spec, cases_per_process=reuse, variants=plans)
            times.append(time.perf_counter() - started)
            assert run.grade.passed > 0
    ratios = [v / p for p, v in zip(plain, varied, strict=True)]
    print(
        f"{name}: {manifest.denominator} cases, {len(made)} variants "
        f"({len({v.case_id for v in made})} cases varied, {per_case} per case)\n"
        f"  patch search: first, 2 jobs {searches[0]:.2f} s; again, 1 job {searches[1]:.2f} s; "
        f"again, 2 jobs {searches[2]:.2f} s\n"
        f"  no variants  {', '.join(f'{t:.2f}' for t in plain)} s\n"
        f"  with variants {', '.join(f'{t:.2f}' for t in varied)} s\n"
        f"  ratio        median {statistics.median(ratios):.2f} "
        f"({', '.join(f'{r:.2f}' for r in ratios)})"
    )


def main() -> None:
    for name in sys.argv[1:] or ["chip8", "dmg-acid2", "mooneye", "blargg"]:
        bench(name)


if __name__ == "__main__":
    main()
