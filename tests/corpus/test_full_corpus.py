"""The reference candidate on the whole shipped Blargg corpus, twice."""

from __future__ import annotations

from typing import Any

from playproof.corpus import RewardState, grade_candidate, load_corpus, reference_candidate_spec


def test_reference_pass_set_is_reported_and_stable(shipped: Any) -> None:
    manifest, answers, roms = shipped
    corpus = load_corpus(manifest, roms)
    # Reusing a process for 8 cases keeps this test short (PyBoy takes 0.6 s to import).
    first = grade_candidate(corpus, answers, reference_candidate_spec(), cases_per_process=8)
    second = grade_candidate(corpus, answers, reference_candidate_spec(), cases_per_process=8)
    failing = [r for r in first.grade.results if not r.passed]
    print(f"reference passes {first.grade.passed} of {first.grade.denominator}; failing: {failing}")
    assert first.grade.passing == second.grade.passing
    assert first.record.cases_per_process == 8  # the grade says how cases shared processes
    assert first.grade.passed == first.grade.denominator == manifest.denominator
    state = RewardState(corpus_digest=corpus.digest, denominator=manifest.denominator)
    state.record("build", "graded", first.grade.passing)
    assert state.record("build", "graded", second.grade.passing).reward == 0
    assert state.history[-1].finished
