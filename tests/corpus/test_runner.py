"""End to end on a small subset: the reference passes, cheaters fail, records verify."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import pytest

from playproof.corpus import (
    JailLimits,
    RewardState,
    bubblewrap_usable,
    grade_candidate,
    load_corpus,
    reference_candidate_spec,
    sign_grade,
    verify_grade,
)
from playproof.corpus._jail import JAIL_UID_BASE, _processes_of
from playproof.corpus._runner import LANES_PER_SLOT
from playproof.sign import SigningKey

QUICK = JailLimits(wall_seconds=4.0, cpu_seconds=20)
needs_bwrap = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot run here")


def test_reference_passes_the_subset_stably_and_unchanged_build_earns_zero(subset: Any) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    first = grade_candidate(corpus, subset.answers, reference_candidate_spec())
    second = grade_candidate(corpus, subset.answers, reference_candidate_spec())
    assert first.grade.passed == first.grade.denominator == len(subset.manifest.cases)
    assert first.grade.passing == second.grade.passing
    state = RewardState(corpus_digest=corpus.digest, denominator=corpus.manifest.denominator)
    assert (
        state.record(first.record.candidate.build_digest, "graded", first.grade.passing).reward == 4
    )
    assert (
        state.record(second.record.candidate.build_digest, "graded", second.grade.passing).reward
        == 0
    )
    assert first.record.isolation == ("bubblewrap" if bubblewrap_usable() else "rlimits")


def _grade_cheat(subset: Any, cheat: Any, name: str, **env: str) -> Any:
    corpus = load_corpus(subset.manifest, subset.roms)
    return grade_candidate(corpus, subset.answers, cheat(name, **env), limits=QUICK)


def test_always_passed_fails_every_case(subset: Any, cheat: Any) -> None:
    run = _grade_cheat(subset, cheat, "always_passed")
    assert run.grade.passed == 0
    assert run.grade.denominator == 4
    assert all(o.outcome == "ok" for o in run.observations)


def test_transcript_replayed_from_another_rom_fails(subset: Any, cheat: Any) -> None:
    donor = subset.answers.answers["instr_timing/instr_timing"]
    run = _grade_cheat(subset, cheat, "replay", CHEAT_TRANSCRIPT=donor.transcript)
    by_id = {r.case_id: r for r in run.grade.results}
    assert not by_id["cpu_instrs/individual/01-special"].passed
    assert "differs" in by_id["cpu_instrs/individual/01-special"].reason
    # Only the case the transcript came from can match it; the cheat gains nothing elsewhere.
    assert run.grade.passed <= 1
    assert run.grade.denominator == 4


@needs_bwrap
def test_escape_attempts_fail(subset: Any, cheat: Any) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        paths = f"{subset.answers_path}:{subset.roms / subset.manifest.cases[0].file}:/etc/hostname"
        run = _grade_cheat(subset, cheat, "escape", CHEAT_PATHS=paths, CHEAT_PORT=str(port))
    assert run.grade.passed == 0
    assert all("Passed" not in (o.serial or "") for o in run.observations)


@pytest.mark.parametrize(
    ("name", "outcome"), [("flood", "protocol-error"), ("hang", "timeout"), ("forkbomb", "timeout")]
)
def test_hostile_candidates_are_contained(subset: Any, cheat: Any, name: str, outcome: str) -> None:
    one = subset.manifest.model_copy(update={"cases": subset.manifest.cases[:2], "denominator": 2})
    corpus = load_corpus(one, subset.roms)
    answers = subset.answers.model_copy(
        update={
            "manifest_digest": one.digest,
            "answers": {c.id: subset.answers.answers[c.id] for c in one.cases},
        }
    )
    run = grade_candidate(corpus, answers, cheat(name), limits=QUICK)
    assert run.grade.passed == 0
    assert run.grade.denominator == 2
    assert {o.outcome for o in run.observations} == {outcome}
    if os.geteuid() == 0:  # every process of the jail uids is gone (killed ones exit promptly)
        for _ in range(50):
            left = sum(_processes_of(JAIL_UID_BASE + n) for n in range(2 * LANES_PER_SLOT))
            if left == 0:
                break
            time.sleep(0.1)
        assert left == 0


def test_grade_records_verify_and_tampering_is_rejected(subset: Any, cheat: Any) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    run = _grade_cheat(subset, cheat, "always_passed")
    key = SigningKey.generate()
    envelope = sign_grade(run.record, key).to_json()
    report, record = verify_grade(envelope, key.verifying_key, subset.manifest)
    assert report.clean
    assert record == run.record
    assert {c.id for c in report.checks} >= {"grade-consistent", "corpus-pinned", "signature-valid"}

    import base64
    import json

    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["passed"] = 4
    statement["predicate"]["results"] = [
        {**r, "passed": True} for r in statement["predicate"]["results"]
    ]
    forged = {**envelope, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}
    bad, _ = verify_grade(forged, key.verifying_key, subset.manifest)
    assert not bad.clean
    assert any(c.id == "signature-valid" and not c.passed for c in bad.checks)
    other = subset.manifest.model_copy(update={"version": "other"})
    pinned, _ = verify_grade(envelope, key.verifying_key, other)
    assert not pinned.clean
    assert [c.id for c in pinned.failed()] == ["corpus-pinned"]
    assert corpus.digest == run.record.corpus_digest
