"""The grader: raw observations against answers, over the fixed denominator."""

from __future__ import annotations

import pytest

from playproof.corpus import (
    CaseObservation,
    CorpusAnswers,
    CorpusCase,
    CorpusManifest,
    MemoryAnswer,
    SerialAnswer,
    grade,
)

SHA = "0" * 64


def _setup() -> tuple[CorpusManifest, CorpusAnswers]:
    cases = tuple(
        CorpusCase(id=i, file=f"{i}.gb", sha256=SHA, suite="s", budget_frames=60) for i in "ab"
    )
    manifest = CorpusManifest(corpus_id="x", version="1", cases=cases, denominator=2)
    answers = CorpusAnswers(
        corpus_id="x",
        manifest_digest=manifest.digest,
        reference="test",
        answers={
            "a": SerialAnswer(transcript="a\n\nPassed\n"),
            "b": MemoryAnswer(text="b\nPassed\n"),
        },
    )
    return manifest, answers


def _block(status: int, text: bytes) -> str:
    return (bytes([status, 0xDE, 0xB0, 0x61]) + text + bytes(252 - len(text))).hex()


def test_matching_observations_pass() -> None:
    manifest, answers = _setup()
    seen = [
        CaseObservation(case_id="a", outcome="ok", serial="a\n\nPassed\n"),
        CaseObservation(case_id="b", outcome="ok", memory=_block(0, b"b\nPassed\n")),
    ]
    result = grade(manifest, answers, seen)
    assert (result.passed, result.denominator) == (2, 2)


@pytest.mark.parametrize(
    ("seen", "reason"),
    [
        (CaseObservation(case_id="a", outcome="ok", serial="Passed\n"), "differs"),
        (CaseObservation(case_id="a", outcome="ok", serial="a\n\nFailed\n"), "no 'Passed'"),
        (CaseObservation(case_id="a", outcome="crash", detail="died"), "crash"),
        (CaseObservation(case_id="a", outcome="timeout", serial="a\n\nPassed\n"), "timeout"),
        (CaseObservation(case_id="b", outcome="ok", memory=_block(0, b"x\nPassed\n")), "differs"),
        (CaseObservation(case_id="b", outcome="ok", memory=_block(1, b"b\nPassed\n")), "status"),
        (CaseObservation(case_id="b", outcome="ok", memory="00" * 256), "signature"),
    ],
)
def test_wrong_or_broken_observations_fail_with_a_reason(
    seen: CaseObservation, reason: str
) -> None:
    manifest, answers = _setup()
    result = grade(manifest, answers, [seen])
    mine = next(r for r in result.results if r.case_id == seen.case_id)
    assert not mine.passed
    assert reason in mine.reason
    assert result.denominator == 2


def test_missing_and_unknown_cases_never_shrink_the_denominator() -> None:
    manifest, answers = _setup()
    result = grade(manifest, answers, [CaseObservation(case_id="zzz", outcome="ok")])
    assert result.denominator == 2
    assert result.passed == 0
    assert all("missing" in r.reason for r in result.results)
