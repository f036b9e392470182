"""The desktop adapter on small real programs: a text game, a saver, a program that forks."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import desktop_specs
import pytest
from leftovers import tagged_processes

import playproof
from playproof.adapters.desktop import DesktopGame, TranscriptSealer, make_game
from playproof.core.game import VerificationMode
from playproof.drivers import ScriptedDriver
from playproof.errors import ModeError, RunError
from playproof.sign import SigningKey

MODE = VerificationMode.TRUSTED_RECORDER


def _run(spec: Path, contract, words, tmp_path: Path, key: SigningKey):  # type: ignore[no-untyped-def]
    sealer = TranscriptSealer(key, tmp_path / "run.transcript.json")
    record = playproof.run(
        f"desktop:{spec}",
        ScriptedDriver(words),
        contract=contract,
        mode=MODE,
        recorder=sealer,
        max_turns=len(words),
    )
    return record, sealer


def test_text_game_over_stdin_is_recorded_and_verifies_from_the_transcript(tmp_path: Path) -> None:
    spec, contract = desktop_specs.cave(tmp_path / "cave")
    key = SigningKey.generate()
    words = ["north", "take", "north", "take", "north", "take", "north", "quit"]
    record, sealer = _run(spec, contract, words, tmp_path, key)
    assert record.target.verification_mode is MODE
    assert record.recorder is not None
    assert record.recorder.key_id == key.key_id
    assert [c.id for c in record.claimed] == ["moved", "coin", "rich", "deep"]
    assert record.game_over
    assert record.stop_reason.value == "game-over"
    report = playproof.verify_record(
        record, contract=contract, transcript=sealer.sealed, recorder_keys=[key.verifying_key]
    )
    assert report.clean, report.failed()
    assert report.verified == ["moved", "coin", "rich", "deep"]
    assert report.trust is not None
    assert key.key_id[:16] in report.trust
    assert "not re-executed" in report.trust
    assert [c.id for c in report.checks][:2] == ["record-well-formed", "transcript-signed"]


def test_verification_never_launches_the_game(tmp_path: Path) -> None:
    spec, contract = desktop_specs.cave(tmp_path / "cave")
    key = SigningKey.generate()
    record, sealer = _run(spec, contract, ["north", "quit"], tmp_path, key)
    # The program and its spec are gone: the transcript alone is verified.
    for path in (tmp_path / "cave").iterdir():
        path.unlink()
    report = playproof.verify_record(
        record, contract=contract, transcript=sealer.sealed, recorder_keys=[key.verifying_key]
    )
    assert report.clean, report.failed()


def test_saves_and_event_files_are_collected(tmp_path: Path) -> None:
    spec, contract = desktop_specs.saver(tmp_path / "saver")
    key = SigningKey.generate()
    record, sealer = _run(spec, contract, ["dig", "dig", "smelt", "dig"], tmp_path, key)
    claimed = {c.id for c in record.claimed}
    assert {"dug", "ore3", "bar"} <= claimed or {"dug", "bar"} <= claimed
    report = playproof.verify_record(
        record, contract=contract, transcript=sealer.sealed, recorder_keys=[key.verifying_key]
    )
    assert report.clean, report.failed()
    assert set(report.verified) == claimed


def test_transcript_holds_inputs_outputs_files_and_timing(tmp_path: Path) -> None:
    spec, contract = desktop_specs.saver(tmp_path / "saver")
    game = make_game(str(spec))
    try:
        game.reset(5)
        game.step("dig")
        game.step("jump")  # not allowlisted: nothing is sent, the step is still recorded
        transcript = game.transcript(contract.hash, 5)
    finally:
        game.close()
    launch, dig, jump = transcript.steps
    assert launch.input is None
    assert "ready" in launch.output
    assert dig.input == "dig"
    assert dig.sent == "dig\n"
    assert "ok" in dig.output
    assert jump.input == "jump"
    assert jump.sent is None
    assert jump.output == ""
    files = {f.name: f for f in dig.files}
    assert files["events"].appended == ("dug",)
    assert files["save"].present
    assert files["save"].content is not None
    assert files["state"].sha256 is not None
    assert files["state"].size == 2
    assert dig.settled_ms >= dig.at_ms >= launch.settled_ms
    assert transcript.seed == 5
    assert transcript.build_digest == game.descriptor.build.digest


def test_a_desktop_game_gets_one_live_pass(tmp_path: Path) -> None:
    spec, _ = desktop_specs.cave(tmp_path / "cave")
    game = make_game(str(spec))
    try:
        game.reset(0)
        with pytest.raises(RunError, match="exactly one pass"):
            game.reset(0)
    finally:
        game.close()


def test_replay_mode_is_refused_for_a_desktop_target(tmp_path: Path) -> None:
    spec, contract = desktop_specs.cave(tmp_path / "cave")
    with pytest.raises(ModeError, match="supports trusted-recorder, not replay"):
        playproof.run(
            f"desktop:{spec}", ScriptedDriver(["north"]), contract=contract, mode="replay"
        )


def test_trusted_recorder_without_a_recorder_key_is_refused(tmp_path: Path) -> None:
    spec, contract = desktop_specs.cave(tmp_path / "cave")
    with pytest.raises(ModeError, match="recorder key"):
        playproof.run(f"desktop:{spec}", ScriptedDriver(["north"]), contract=contract, mode=MODE)


def test_build_digest_pins_the_program_and_assets(tmp_path: Path) -> None:
    spec, _ = desktop_specs.cave(tmp_path / "cave")
    first = make_game(str(spec)).descriptor.build.digest
    program = tmp_path / "cave" / "desktop_cave.py"
    program.write_text(program.read_text() + "\n# changed\n")
    assert make_game(str(spec)).descriptor.build.digest != first


@pytest.mark.parametrize("mode", ["spawn", "pid-file", "descendant"])
def test_a_program_that_forks_helpers_leaves_no_orphans(tmp_path: Path, mode: str) -> None:
    tag = uuid.uuid4().hex
    spec, contract = desktop_specs.forker(tmp_path / "forker", tag, mode)
    key = SigningKey.generate()
    record, sealer = _run(spec, contract, ["tick", "tick"], tmp_path, key)
    assert [c.id for c in record.claimed] == ["ticked"]
    assert tagged_processes("PLAYPROOF_TEST_TAG", tag) == []
    report = playproof.verify_record(
        record, contract=contract, transcript=sealer.sealed, recorder_keys=[key.verifying_key]
    )
    assert report.clean, report.failed()


def test_attached_game_is_the_launchers_descendant(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    spec, _ = desktop_specs.forker(tmp_path / "forker", tag, "pid-file")
    game = make_game(str(spec))
    assert isinstance(game, DesktopGame)
    try:
        game.reset(0)
        assert game.target_pid is not None
        assert game.target_pid in tagged_processes("PLAYPROOF_TEST_TAG", tag)
        game.step("tick")
        assert "tick 1" in game.observe().text
    finally:
        game.close()
    assert tagged_processes("PLAYPROOF_TEST_TAG", tag) == []


def test_a_windowed_game_is_driven_by_helpers_and_observed_by_capture(tmp_path: Path) -> None:
    spec, contract = desktop_specs.window(tmp_path / "window")
    key = SigningKey.generate()
    record, sealer = _run(spec, contract, ["left", "right", "left"], tmp_path, key)
    assert [c.id for c in record.claimed] == ["pressed", "right"]
    report = playproof.verify_record(
        record, contract=contract, transcript=sealer.sealed, recorder_keys=[key.verifying_key]
    )
    assert report.clean, report.failed()
    assert (tmp_path / "window" / "inbox").read_text() == "left\nright\nleft\n"


def test_attaching_to_a_running_process_never_ends_it(tmp_path: Path) -> None:
    folder = tmp_path / "window"
    spec, contract = desktop_specs.window(folder, pid=1)  # copies the program
    game_process = subprocess.Popen(
        [sys.executable, "desktop_window.py"], cwd=folder, start_new_session=True
    )
    try:
        spec, contract = desktop_specs.window(folder, pid=game_process.pid)
        key = SigningKey.generate()
        record, sealer = _run(spec, contract, ["right", "right"], tmp_path, key)
        assert [c.id for c in record.claimed] == ["right", "pressed"]
        assert game_process.poll() is None  # playproof did not start it, so did not end it
        report = playproof.verify_record(
            record, contract=contract, transcript=sealer.sealed, recorder_keys=[key.verifying_key]
        )
        assert report.clean, report.failed()
    finally:
        game_process.kill()
        game_process.wait()


def test_attaching_to_a_process_that_is_not_running_is_refused(tmp_path: Path) -> None:
    spec, _ = desktop_specs.window(tmp_path / "window", pid=2**22 + 17)
    game = make_game(str(spec))
    with pytest.raises(RunError, match="is not running"):
        game.reset(0)
    game.close()
