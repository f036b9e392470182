"""The mode dispatch: each record is checked by its mode's verifier, and replay is unchanged."""

from __future__ import annotations

import pytest

import playproof
from playproof.adapters.native import Game2048
from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord
from playproof.drivers import ScriptedDriver
from playproof.targets import get_target
from playproof.verify import (
    MODE_VERIFIERS,
    TranscriptVerifier,
    VerificationInputs,
    _attest,
    attest,
    verify_by_mode,
)

TARGET = get_target("native/2048")

REPLAY_CHECKS = [
    "record-well-formed",
    "target-pinned",
    "mode-supported",
    "decision-chain-intact",
    "accounting-consistent",
    "limits-respected",
    "claims-reproduced",
]


@pytest.fixture(scope="module")
def record() -> RunRecord:
    return playproof.run(TARGET, ScriptedDriver(TARGET.reference[:60]), max_turns=60)


def test_a_replay_record_verifies_as_before(record: RunRecord) -> None:
    report = attest(record, Game2048(), TARGET.contract)
    assert report.clean
    assert [c.id for c in report.checks] == REPLAY_CHECKS
    assert report.trust is None
    assert "claims reproduced by replay" in report.checks[-1].reason
    assert record.recorder is None
    assert "recorder" not in record.to_json()


def test_the_dispatch_sends_a_replay_record_to_replay(record: RunRecord) -> None:
    by_mode = verify_by_mode(record, TARGET.contract, VerificationInputs(game=Game2048()))
    assert by_mode == attest(record, Game2048(), TARGET.contract)


def test_replay_without_a_game_says_what_is_missing(record: RunRecord) -> None:
    report = verify_by_mode(record, TARGET.contract, VerificationInputs())
    assert not report.clean
    assert "needs a game session" in report.failed()[0].reason


def test_a_mode_without_a_verifier_fails_mode_supported(
    record: RunRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(MODE_VERIFIERS, VerificationMode.REPLAY)
    report = verify_by_mode(record, TARGET.contract, VerificationInputs(game=Game2048()))
    assert [c.id for c in report.failed()] == ["mode-supported"]
    assert "no verifier for mode replay" in report.failed()[0].reason


def test_a_new_mode_is_one_entry(record: RunRecord, monkeypatch: pytest.MonkeyPatch) -> None:
    # A third mode hooks in by naming its factory; here replay's own stands in for it.
    monkeypatch.setitem(
        MODE_VERIFIERS, VerificationMode.REPLAY, "playproof.verify._attest:replay_verifier"
    )
    report = verify_by_mode(record, TARGET.contract, VerificationInputs(game=Game2048()))
    assert report.clean


def test_a_replay_record_is_not_checked_by_the_transcript_verifier(record: RunRecord) -> None:
    report = _attest.attest_mode(record, TranscriptVerifier(None, ()), TARGET.contract)
    failed = {c.id: c.reason for c in report.failed()}
    assert "the record pins no transcript" in failed["transcript-signed"]
    assert report.trust is None


def test_a_trusted_recorder_record_is_not_checked_by_replay(record: RunRecord) -> None:
    pin = record.target.model_copy(update={"verification_mode": VerificationMode.TRUSTED_RECORDER})
    forged = record.model_copy(update={"target": pin})
    report = attest(forged, Game2048(), TARGET.contract)
    assert "mode-supported" in {c.id for c in report.failed()}
