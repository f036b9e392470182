"""The public surface of playproof.sign, the check-id vocabulary and its documentation."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

import playproof.sign
from playproof.core.report import CHECK_IDS, CheckResult, VerificationReport, verdict_of

DOCS = Path(__file__).resolve().parents[2] / "docs" / "signing.md"


def test_exported_names_are_exactly_the_intended_ones() -> None:
    assert set(playproof.sign.__all__) == {
        "IN_TOTO_PAYLOAD_TYPE",
        "MAX_ENVELOPE_BYTES",
        "MAX_KEY_FILE_BYTES",
        "MAX_RUN_UPLOAD_BYTES",
        "RUN_UPLOAD_MEDIA_TYPE",
        "RUN_UPLOAD_SCHEMA",
        "RunUpload",
        "RUN_PREDICATE_TYPE",
        "RUN_RECORD",
        "RUN_RECORD_SUBJECT",
        "SIGNATURE_CHECK_IDS",
        "STATEMENT_TYPE",
        "Envelope",
        "EnvelopeSignature",
        "PredicateKind",
        "SignatureVerdict",
        "SigningKey",
        "Statement",
        "StatementVerdict",
        "Subject",
        "VerifyingKey",
        "make_statement",
        "pae",
        "parse_envelope",
        "record_digest",
        "run_statement",
        "run_subjects",
        "sign_predicate",
        "sign_record",
        "sign_statement",
        "statement_payload",
        "verify_envelope",
        "verify_statement",
    }
    for name in playproof.sign.__all__:
        assert getattr(playproof.sign, name) is not None


def test_signature_checks_are_part_of_the_vocabulary() -> None:
    assert set(playproof.sign.SIGNATURE_CHECK_IDS) <= set(CHECK_IDS)
    assert len(set(CHECK_IDS)) == len(CHECK_IDS) == 17


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_every_check_id_is_documented(check_id: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Check ids", 1)[1]
    assert f"`{check_id}`" in section


def test_verdict_is_clean_only_with_checks_that_all_pass() -> None:
    ok = CheckResult(id="signature-valid", passed=True, reason="ok")
    bad = CheckResult(id="subjects-match", passed=False, reason="differs")
    assert verdict_of([]) == "rejected"
    assert verdict_of([ok]) == "clean"
    assert verdict_of([ok, bad]) == "rejected"
    report = VerificationReport.from_checks([ok, bad], verified=["m1"], milestones_total=2)
    assert report.verdict == "rejected"
    assert report.failed() == [bad]
    assert not report.clean


def test_report_refuses_a_verdict_its_checks_do_not_support() -> None:
    bad = CheckResult(id="subjects-match", passed=False, reason="differs")
    with pytest.raises(ValidationError):
        VerificationReport(verdict="clean", checks=[bad], verified=[], milestones_total=None)
    with pytest.raises(ValidationError):
        VerificationReport(verdict="clean", checks=[], verified=[], milestones_total=None)


def test_check_ids_outside_the_vocabulary_are_refused() -> None:
    with pytest.raises(ValidationError):
        CheckResult(id="looks-fine", passed=True, reason="")


def test_long_reasons_are_cut() -> None:
    result = CheckResult(id="signature-valid", passed=False, reason="x" * 10_000)
    assert len(result.reason) == 2048
    assert result.reason.endswith("...")


def test_report_round_trips_through_json() -> None:
    report = VerificationReport.from_checks(
        [CheckResult(id="claims-reproduced", passed=True, reason="3 of 3")],
        verified=["a", "b", "c"],
        milestones_total=3,
        key_id="ab" * 32,
    )
    assert VerificationReport.model_validate_json(report.model_dump_json()) == report
