"""A grade record's claim of a trusted corpus is checked, never repeated.

Two holes this guards: ``verify_grade`` took the controller key a record names
on the record's word (a grade could name one controller while the corpus was
signed by another), and the proof service rejected every genuine trusted grade
of a shipped corpus (it never looked at the shipped corpus's signature) while a
trusted claim about a corpus it does not ship was not questioned at all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from controllers import CONTROLLER, sign_test_corpus, synthetic_corpus

from playproof.core.report import VerificationReport
from playproof.corpus import (
    CandidatePin,
    CaseResult,
    CorpusManifest,
    GradeRecord,
    load_answers,
    load_manifest,
    shipped_paths,
    sign_grade,
    verify_grade,
)
from playproof.corpus._trust import (
    read_signature,
    shipped_controller_key,
    signature_path,
    signed_claim,
)
from playproof.service.grades.services import reverify_grade
from playproof.sign import SigningKey

GRADER = SigningKey.generate()


def _trusted(manifest: CorpusManifest, controller_key: str) -> GradeRecord:
    results = [CaseResult(case_id=c.id, passed=True, reason="ok") for c in manifest.cases]
    return GradeRecord(
        corpus_id=manifest.corpus_id,
        corpus_version=manifest.version,
        corpus_digest=manifest.digest,
        candidate=CandidatePin(command=["candidate"], build_digest="b" * 64),
        isolation="rlimits",
        limits={"cpu_seconds": 1.0},
        results=results,
        passed=len(results),
        denominator=len(results),
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
        trust="trusted",
        controller_key=controller_key,
        reward=len(results),
    )


def _pinned(report: VerificationReport) -> tuple[bool, str]:
    check = next(c for c in report.checks if c.id == "corpus-pinned")
    return check.passed, check.reason


def test_a_grade_naming_another_controller_than_the_signer_fails_corpus_pinned(
    tmp_path: Path,
) -> None:
    manifest_path = synthetic_corpus(tmp_path / "corpus")
    manifest = load_manifest(manifest_path)
    answers = load_answers(manifest_path.with_name("answers.json"), manifest)
    sign_test_corpus(manifest_path, answers, manifest_path.with_name("roms"))
    signed = signed_claim(read_signature(signature_path(manifest_path)), [CONTROLLER.verifying_key])
    assert signed is not None
    assert signed.key_id == CONTROLLER.key_id
    honest = sign_grade(_trusted(manifest, CONTROLLER.key_id), GRADER).to_bytes()
    report, _ = verify_grade(honest, GRADER.verifying_key, manifest, signed)
    assert report.clean, report.failed()
    borrowed = sign_grade(_trusted(manifest, "e" * 64), GRADER).to_bytes()
    report, _ = verify_grade(borrowed, GRADER.verifying_key, manifest, signed)
    passed, reason = _pinned(report)
    assert not passed
    assert "eeeeeeeeeeeeeeee" in reason
    assert CONTROLLER.key_id[:16] in reason


def test_the_server_accepts_a_genuine_trusted_grade_of_a_shipped_corpus() -> None:
    manifest = load_manifest(shipped_paths("blargg")[0])
    record = _trusted(manifest, shipped_controller_key().key_id)
    report = VerificationReport.model_validate_json(
        reverify_grade(sign_grade(record, GRADER).to_bytes(), (GRADER.verifying_key.to_pem(),))
    )
    assert report.clean, report.failed()
    assert _pinned(report) == (True, f"blargg {manifest.version}, trusted")


def test_the_server_refuses_a_trusted_grade_naming_another_controller() -> None:
    manifest = load_manifest(shipped_paths("mooneye")[0])
    record = _trusted(manifest, CONTROLLER.key_id)
    report = VerificationReport.model_validate_json(
        reverify_grade(sign_grade(record, GRADER).to_bytes(), (GRADER.verifying_key.to_pem(),))
    )
    assert not report.clean
    assert not _pinned(report)[0]


def test_the_server_refuses_a_trusted_claim_about_a_corpus_it_does_not_ship(
    tmp_path: Path,
) -> None:
    manifest = load_manifest(synthetic_corpus(tmp_path / "corpus"))
    record = _trusted(manifest, CONTROLLER.key_id)
    report = VerificationReport.model_validate_json(
        reverify_grade(sign_grade(record, GRADER).to_bytes(), (GRADER.verifying_key.to_pem(),))
    )
    passed, reason = _pinned(report)
    assert not passed
    assert "does not ship" in reason
    # The same grade, untrusted, is a development grade the server keeps.
    untrusted = record.model_copy(
        update={"trust": "untrusted", "controller_key": None, "reward": 0}
    )
    report = VerificationReport.model_validate_json(
        reverify_grade(sign_grade(untrusted, GRADER).to_bytes(), (GRADER.verifying_key.to_pem(),))
    )
    assert report.clean, report.failed()
