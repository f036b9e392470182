"""A desktop run's transcript stays small enough to sign and to verify, however long the pass.

A verifier reads at most 16 MiB of a signed envelope, and the transcript travels
in one as base64 (a third larger). A recording game therefore stops its run once
its transcript reaches TRANSCRIPT_STOP_BYTES, refuses a single step larger than
MAX_TRANSCRIPT_STEP_BYTES, and the sealer never signs what no verifier could read.
"""

from __future__ import annotations

from pathlib import Path

import desktop_specs
import pytest

import playproof
from playproof.adapters.desktop import DesktopGame, TranscriptSealer, make_game
from playproof.adapters.desktop import _game as game_module
from playproof.adapters.desktop import _recorder as recorder_module
from playproof.core.record import RunRecord, StopReason
from playproof.core.report import VerificationReport
from playproof.core.transcript import (
    MAX_SEALED_TRANSCRIPT_BYTES,
    MAX_TRANSCRIPT_BYTES,
    MAX_TRANSCRIPT_STEP_BYTES,
    TRANSCRIPT_PAYLOAD_TYPE,
    TRANSCRIPT_STOP_BYTES,
)
from playproof.drivers import ScriptedDriver
from playproof.errors import RunError
from playproof.sign import MAX_ENVELOPE_BYTES, SigningKey, parse_envelope
from playproof.sign._dsse import sign_payload

LOUD = 60_000
"""Two-byte characters the loud program prints per input (just under one observation's bound)."""


def test_the_bounds_fit_what_a_verifier_reads() -> None:
    assert TRANSCRIPT_STOP_BYTES + MAX_TRANSCRIPT_STEP_BYTES <= MAX_SEALED_TRANSCRIPT_BYTES
    assert MAX_SEALED_TRANSCRIPT_BYTES <= MAX_TRANSCRIPT_BYTES
    # The largest payload a recorder signs still parses as an envelope.
    envelope = sign_payload(
        TRANSCRIPT_PAYLOAD_TYPE, b"x" * MAX_SEALED_TRANSCRIPT_BYTES, [SigningKey.generate()]
    ).to_bytes()
    assert len(envelope) <= MAX_ENVELOPE_BYTES
    assert len(parse_envelope(envelope).payload_bytes()) == MAX_SEALED_TRANSCRIPT_BYTES


def test_the_game_counts_its_transcript_to_the_byte(tmp_path: Path) -> None:
    spec, contract = desktop_specs.shout(tmp_path / "shout")
    game = make_game(str(spec))
    assert isinstance(game, DesktopGame)
    try:
        game.reset(3)
        for word in ("say", "hum", "say"):  # "hum" is not allowlisted: a step all the same
            game.step(word)
        payload = game.transcript(contract.hash, 3).payload()
    finally:
        game.close()
    assert game.transcript_bytes == len(payload)
    # Each "é" is two bytes of UTF-8 (RFC 8785 leaves it unescaped).
    assert len(payload) > 2 * 2 * LOUD


def _play(tmp_path: Path, turns: int) -> tuple[RunRecord, bytes, VerificationReport]:
    """Say ``turns`` times; the record, its transcript's signed payload and its verification."""
    spec, contract = desktop_specs.shout(tmp_path / "shout")
    key = SigningKey.generate()
    sealer = TranscriptSealer(key, tmp_path / "run.transcript.json")
    record = playproof.run(
        f"desktop:{spec}",
        ScriptedDriver(["say"] * turns),
        contract=contract,
        mode="trusted-recorder",
        recorder=sealer,
        max_turns=turns,
    )
    assert sealer.sealed is not None
    report = playproof.verify_record(
        record, contract=contract, transcript=sealer.sealed, recorder_keys=[key.verifying_key]
    )
    return record, parse_envelope(sealer.sealed).payload_bytes(), report


def test_a_long_pass_stops_before_its_transcript_outgrows_a_verifier(tmp_path: Path) -> None:
    record, payload, report = _play(tmp_path, 1000)
    # About 120 KB a step: the run stops near 70 steps, long before its 1,000 turns.
    assert record.stop_reason is StopReason.STOPPED
    assert 40 < len(record.decisions) < 1000
    assert TRANSCRIPT_STOP_BYTES <= len(payload) <= MAX_SEALED_TRANSCRIPT_BYTES
    assert report.clean, report.failed()
    assert report.verified == ["spoke"]


def test_a_run_stops_at_the_step_that_filled_its_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Room for the launch and about three loud steps (each is over 120,000 bytes).
    monkeypatch.setattr(game_module, "TRANSCRIPT_STOP_BYTES", 300_000)
    record, payload, report = _play(tmp_path, 50)
    assert record.stop_reason is StopReason.STOPPED
    assert len(record.decisions) == 3
    assert len(payload) >= 300_000
    assert report.clean, report.failed()


def test_a_step_too_large_for_any_transcript_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, _ = desktop_specs.shout(tmp_path / "shout")
    monkeypatch.setattr(game_module, "MAX_TRANSCRIPT_STEP_BYTES", 100_000)
    game = make_game(str(spec))
    try:
        game.reset(0)  # the launch step is small
        with pytest.raises(RunError, match=r"step 1 would add \d+ bytes to the transcript"):
            game.step("say")
    finally:
        game.close()


def test_the_sealer_never_signs_a_transcript_no_verifier_could_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, contract = desktop_specs.shout(tmp_path / "shout")
    game = make_game(str(spec))
    try:
        game.reset(0)
        game.step("say")
        transcript = game.transcript(contract.hash, 0)
    finally:
        game.close()
    monkeypatch.setattr(recorder_module, "MAX_SEALED_TRANSCRIPT_BYTES", 1000)
    path = tmp_path / "run.transcript.json"
    with pytest.raises(RunError, match="it was not signed"):
        TranscriptSealer(SigningKey.generate(), path)(transcript)
    assert not path.exists()
