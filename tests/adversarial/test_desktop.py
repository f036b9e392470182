"""Hostile transcripts, keys and programs against the trusted recorder (desktop games).

A verifier that checks a transcript must reject every change to it, every
signature but the pinned recorder's, and every transcript that is not this
record's, naming the failed check. A live desktop program that floods, stalls,
rewrites its event log or writes an oversized save ends the run with a typed
error, and leaves no process behind.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import desktop_specs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from leftovers import tagged_processes

import playproof
from playproof.adapters.desktop import TranscriptSealer, load_spec, make_game
from playproof.core.canonical import canonical_json
from playproof.core.contract import Contract
from playproof.core.record import RecorderPin, RunRecord
from playproof.core.transcript import TRANSCRIPT_PAYLOAD_TYPE, parse_transcript
from playproof.drivers import ScriptedDriver
from playproof.errors import FormatError, RunError, TargetError
from playproof.sign import SigningKey, sign_record
from playproof.sign._dsse import sign_payload

WORDS = ["north", "take", "north", "take", "north", "take", "quit"]


class Played:
    """One recorded cave run: its record, transcript envelope, contract and keys."""

    def __init__(self, folder: Path) -> None:
        spec, self.contract = desktop_specs.cave(folder / "cave")
        self.key = SigningKey.generate()
        sealer = TranscriptSealer(self.key, folder / "run.transcript.json")
        self.record: RunRecord = playproof.run(
            f"desktop:{spec}",
            ScriptedDriver(WORDS),
            contract=self.contract,
            mode="trusted-recorder",
            recorder=sealer,
            max_turns=len(WORDS),
        )
        assert sealer.sealed is not None
        self.envelope = sealer.sealed
        self.payload = json.loads(base64.b64decode(json.loads(self.envelope)["payload"]))

    def verify(
        self,
        envelope: bytes | None = None,
        record: RunRecord | None = None,
        keys: list[Any] | None = None,
        contract: Contract | None = None,
    ) -> playproof.VerificationReport:
        return playproof.verify_record(
            record or self.record,
            contract=contract or self.contract,
            transcript=self.envelope if envelope is None else envelope,
            recorder_keys=[self.key.verifying_key] if keys is None else keys,
        )

    def resigned(self, payload: dict[str, Any], key: SigningKey | None = None) -> bytes:
        body = canonical_json(payload)
        return sign_payload(TRANSCRIPT_PAYLOAD_TYPE, body, [key or self.key]).to_bytes()


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    return Played(tmp_path_factory.mktemp("desktop"))


def _failed(report: Any) -> dict[str, str]:
    return {c.id: c.reason for c in report.failed()}


def test_the_untouched_run_verifies(played: Played) -> None:
    report = played.verify()
    assert report.clean, report.failed()


def test_a_byte_flipped_transcript_is_rejected_at_the_signature(played: Played) -> None:
    envelope = json.loads(played.envelope)
    payload = bytearray(base64.b64decode(envelope["payload"]))
    index = payload.index(b"gold: ")
    payload[index + 6] ^= 0x01  # another digit: more gold than was seen
    envelope["payload"] = base64.b64encode(bytes(payload)).decode()
    failed = _failed(played.verify(json.dumps(envelope).encode()))
    assert "transcript-signed" in failed
    assert "not the one the record pins" in failed["transcript-signed"]


def test_a_tampered_transcript_resigned_by_the_recorder_key_differs_from_the_pin(
    played: Played,
) -> None:
    # Even the recorder's own key cannot change a transcript after the record pinned it.
    payload = json.loads(json.dumps(played.payload))
    payload["steps"][2]["output"] = "coins!\nroom: 1\ngold: 99\n> "
    failed = _failed(played.verify(played.resigned(payload)))
    assert "transcript-signed" in failed
    assert "record pins" in failed["transcript-signed"]


def test_a_wrong_recorder_key_is_rejected(played: Played) -> None:
    other = SigningKey.generate()
    failed = _failed(played.verify(keys=[other.verifying_key]))
    assert "transcript-signed" in failed
    assert "is not trusted" in failed["transcript-signed"]


def test_a_transcript_signed_by_another_key_is_rejected(played: Played) -> None:
    # The attacker re-signs the exact payload with its own key and trusts it too.
    other = SigningKey.generate()
    envelope = played.resigned(played.payload, other)
    failed = _failed(played.verify(envelope, keys=[played.key.verifying_key, other.verifying_key]))
    assert "transcript-signed" in failed
    assert "no valid recorder signature" in failed["transcript-signed"]


def test_a_forged_transcript_with_a_repinned_record_is_rejected_without_the_recorder_key(
    played: Played,
) -> None:
    # A forger edits the transcript, signs it with its own key and re-pins the record.
    forger = SigningKey.generate()
    payload = json.loads(json.dumps(played.payload))
    payload["steps"][-2]["output"] += "You feel rich.\n"
    body = canonical_json(payload)
    envelope = sign_payload(TRANSCRIPT_PAYLOAD_TYPE, body, [forger]).to_bytes()
    from playproof.core.canonical import sha256_hex

    record = played.record.model_copy(
        update={"recorder": RecorderPin(transcript_sha256=sha256_hex(body), key_id=forger.key_id)}
    )
    failed = _failed(played.verify(envelope, record=record))
    assert "transcript-signed" in failed
    assert "not trusted" in failed["transcript-signed"]


def test_the_record_without_its_transcript_is_rejected(played: Played) -> None:
    report = playproof.verify_record(
        played.record, contract=played.contract, recorder_keys=[played.key.verifying_key]
    )
    assert "no transcript given" in _failed(report)["transcript-signed"]


def test_a_record_whose_inputs_differ_from_the_transcript_is_rejected(played: Played) -> None:
    # The recorder honestly signed what it saw; the record claims other inputs.
    payload = json.loads(json.dumps(played.payload))
    payload["steps"][1]["input"] = "south"
    body = canonical_json(payload)
    envelope = played.resigned(payload)
    from playproof.core.canonical import sha256_hex

    record = played.record.model_copy(
        update={
            "recorder": RecorderPin(transcript_sha256=sha256_hex(body), key_id=played.key.key_id)
        }
    )
    failed = _failed(played.verify(envelope, record=record))
    assert "input 1 differs" in failed["transcript-consistent"]
    assert "claims-reproduced" in failed


def test_claims_the_transcript_does_not_show_are_rejected(played: Played) -> None:
    record = played.record
    claimed = (*record.claimed, type(record.claimed[0])(id="deep", turn=len(WORDS)))
    failed = _failed(played.verify(record=record.model_copy(update={"claimed": claimed})))
    assert "deep was not reproduced by the transcript" in failed["claims-reproduced"]


def test_a_transcript_whose_rules_do_not_make_its_build_digest_is_rejected(played: Played) -> None:
    payload = json.loads(json.dumps(played.payload))
    payload["rules"]["events"] = [{"event": "rich", "pattern": "gold"}]  # fires earlier
    body = canonical_json(payload)
    from playproof.core.canonical import sha256_hex

    record = played.record.model_copy(
        update={
            "recorder": RecorderPin(transcript_sha256=sha256_hex(body), key_id=played.key.key_id)
        }
    )
    failed = _failed(played.verify(played.resigned(payload), record=record))
    assert "do not make its build digest" in failed["target-pinned"]


def test_the_signed_record_and_transcript_verify_through_verify_signed(played: Played) -> None:
    run_key = SigningKey.generate()
    envelope = sign_record(played.record, run_key).to_bytes()
    report = playproof.verify_signed(
        envelope,
        [run_key.verifying_key, played.key.verifying_key],
        contract=played.contract,
        transcript=played.envelope,
    )
    assert report.clean, report.failed()
    assert report.key_id == run_key.key_id
    assert report.trust is not None


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_edit_of_the_transcript_payload_is_rejected(
    played: Played, data: st.DataObject
) -> None:
    envelope = json.loads(played.envelope)
    payload = bytearray(base64.b64decode(envelope["payload"]))
    index = data.draw(st.integers(0, len(payload) - 1))
    payload[index] = data.draw(st.integers(0, 255).filter(lambda b: b != payload[index]))
    envelope["payload"] = base64.b64encode(bytes(payload)).decode()
    report = played.verify(json.dumps(envelope).encode())
    assert not report.clean
    assert "transcript-signed" in _failed(report)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.binary(max_size=2048) | st.text(max_size=512).map(str.encode))
def test_junk_transcripts_are_rejected_never_raised(played: Played, junk: bytes) -> None:
    report = played.verify(junk)
    assert not report.clean
    assert "transcript-signed" in _failed(report)


def test_a_signed_but_malformed_transcript_is_rejected(played: Played) -> None:
    body = b'{"schema": "playproof/transcript/v1", "steps": []}'
    envelope = sign_payload(TRANSCRIPT_PAYLOAD_TYPE, body, [played.key]).to_bytes()
    from playproof.core.canonical import sha256_hex

    record = played.record.model_copy(
        update={
            "recorder": RecorderPin(transcript_sha256=sha256_hex(body), key_id=played.key.key_id)
        }
    )
    failed = _failed(played.verify(envelope, record=record))
    assert "signed but malformed" in failed["transcript-signed"]


# Hostile programs: each ends the run with a typed error and leaves nothing running.


def _live(spec: Path, words: list[str]) -> None:
    game = make_game(str(spec))
    try:
        game.reset(0)
        for word in words:
            game.step(word)
    finally:
        game.close()


def test_an_event_file_that_is_rewritten_stops_the_run(tmp_path: Path) -> None:
    spec, _ = desktop_specs.saver(tmp_path / "saver")
    with pytest.raises(RunError, match="rewritten, not appended"):
        _live(spec, ["dig", "rewrite"])


def test_a_save_file_over_its_bound_stops_the_run(tmp_path: Path) -> None:
    spec, _ = desktop_specs.saver(tmp_path / "saver")
    with pytest.raises(RunError, match="over the 65536-byte limit"):
        _live(spec, ["flood"])


def test_a_program_that_floods_its_output_stops_the_run(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    program = tmp_path / "flood.py"
    program.write_text(
        "import sys\nsys.stdout.write('x' * (1 << 22))\nsys.stdout.flush()\n"
        "import time\ntime.sleep(600)\n"
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'id = "flood"\nvocabulary = ["go"]\n[launch]\ncommand = [{json.dumps(_python())}, '
        f'"flood.py"]\nenv = {{ PLAYPROOF_TEST_TAG = "{tag}" }}\n[observe]\nprompt = "> "\n'
    )
    with pytest.raises(RunError, match="wrote over"):
        _live(spec, [])
    assert tagged_processes("PLAYPROOF_TEST_TAG", tag) == []


def test_a_program_that_never_prompts_times_out(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    program = tmp_path / "mute.py"
    program.write_text("import time\ntime.sleep(600)\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'id = "mute"\nvocabulary = ["go"]\n[launch]\ncommand = [{json.dumps(_python())}, '
        f'"mute.py"]\nenv = {{ PLAYPROOF_TEST_TAG = "{tag}" }}\n'
        '[observe]\nprompt = "> "\nstep_timeout_s = 0.5\n'
    )
    with pytest.raises(RunError, match=r"did not reach its prompt within 0\.5 s"):
        _live(spec, [])
    assert tagged_processes("PLAYPROOF_TEST_TAG", tag) == []


def test_a_program_that_never_reads_its_input_times_out(tmp_path: Path) -> None:
    # Each input is 4 KiB: a few fill the stdin pipe of a program that never reads it.
    tag = uuid.uuid4().hex
    (tmp_path / "deaf.py").write_text("import time\ntime.sleep(600)\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'id = "deaf"\nvocabulary = ["go"]\n[launch]\ncommand = [{json.dumps(_python())}, '
        f'"deaf.py"]\nenv = {{ PLAYPROOF_TEST_TAG = "{tag}" }}\n'
        f'[input]\ntemplate = "{"{input}" * 16}"\nsend = {{ go = "{"x" * 256}" }}\n'
        "[observe]\nquiet_ms = 1\nstep_timeout_s = 0.5\n"
    )
    game = make_game(str(spec))
    failure: list[BaseException] = []

    def play() -> None:
        try:
            game.reset(0)
            for _ in range(64):
                game.step("go")
        except BaseException as exc:  # handed to the test thread
            failure.append(exc)

    player = threading.Thread(target=play, daemon=True)
    player.start()
    player.join(20)
    hung = player.is_alive()
    if hung and game.target_pid is not None:  # end the program: a blocked send then fails
        os.killpg(game.target_pid, signal.SIGKILL)
        player.join(5)
    game.close()
    assert not hung
    assert len(failure) == 1
    assert isinstance(failure[0], RunError)
    assert re.search(r"did not read its input within 0\.5 s", str(failure[0]))
    assert tagged_processes("PLAYPROOF_TEST_TAG", tag) == []


def test_an_event_file_gaining_too_many_lines_in_one_step_stops_the_run(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    (tmp_path / "chatty.py").write_text(
        "import sys\nsys.stdout.write('> ')\nsys.stdout.flush()\n"
        "for line in sys.stdin:\n"
        "    with open('events.log', 'a') as log:\n"
        "        log.write('e\\n' * 5000)\n"
        "    sys.stdout.write('> ')\n    sys.stdout.flush()\n"
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'id = "chatty"\nvocabulary = ["go"]\n[launch]\ncommand = [{json.dumps(_python())}, '
        f'"chatty.py"]\nenv = {{ PLAYPROOF_TEST_TAG = "{tag}" }}\n'
        '[observe]\nprompt = "> "\n'
        '[[collect]]\nname = "events"\npath = "events.log"\nkind = "events"\nmax_bytes = 65536\n'
    )
    with pytest.raises(RunError, match="over 4096 lines"):
        _live(spec, ["go"])
    assert tagged_processes("PLAYPROOF_TEST_TAG", tag) == []


def test_a_pid_file_that_never_appears_times_out(tmp_path: Path) -> None:
    (tmp_path / "idle.py").write_text("pass\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'id = "idle"\nvocabulary = ["go"]\n[launch]\nmode = "pid-file"\npid_file = "x.pid"\n'
        f'ready_timeout_s = 0.3\ncommand = [{json.dumps(_python())}, "idle.py"]\n'
    )
    with pytest.raises(RunError, match=r"appeared under the launcher within 0\.3 s"):
        _live(spec, [])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('id = "x"\nvocabulary = ["a"]\n[launch]\nmode = "pid"\npid = 4\n', "only via a helper"),
        ('id = "x"\nvocabulary = ["a"]\n[launch]\nmode = "spawn"\n', "needs command"),
        ('id = "x"\nvocabulary = ["a", "a"]\n[launch]\ncommand = ["true"]\n', "a word twice"),
        (
            'id = "x"\nvocabulary = ["a"]\n[launch]\ncommand = ["true"]\n[rules]\n'
            'state = [{ key = "k", pattern = "(" }]\n',
            "not a regular expression",
        ),
        (
            'id = "x"\nvocabulary = ["a"]\n[launch]\ncommand = ["true"]\n[[collect]]\nname = "e"\n'
            'path = "e.log"\nkind = "events"\n[rules]\nsave = [{ key = "k", file = "e", '
            'pointer = "/k" }]\n',
            "not a json collect",
        ),
        (
            # 16 copies of a 256-character text and one more: over what a transcript step holds.
            'id = "x"\nvocabulary = ["a"]\n[launch]\ncommand = ["true"]\n[input]\n'
            f'template = "{"{input}" * 16}-"\nsend = {{ a = "{"x" * 256}" }}\n',
            "over 4096 characters",
        ),
        # TOML can spell a NUL character; no path, argument or variable can hold one.
        (
            'id = "x"\nvocabulary = ["a"]\npins = ["a\\u0000b"]\n[launch]\ncommand = ["true"]\n',
            "NUL",
        ),
        ('id = "x"\nvocabulary = ["a"]\n[launch]\ncommand = ["tr\\u0000ue"]\n', "NUL"),
        (
            'id = "x"\nvocabulary = ["a"]\n[launch]\ncommand = ["true"]\nenv = { A = "\\u0000" }\n',
            "NUL",
        ),
        (
            'id = "x"\nvocabulary = ["a"]\n[launch]\ncommand = ["true"]\n[input]\nvia = "helper"\n'
            'helper = ["true"]\ntemplate = "{input}\\u0000"\n',
            "NUL",
        ),
        ("id = [", "not valid TOML"),
        ('id = "x"\na = ' + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
        ('id = "x"\nvocabulary = ["a"]\n[launch]\ncommand = ["no-such-program-here"]\n', "program"),
    ],
)
def test_bad_specs_are_refused_before_anything_runs(
    tmp_path: Path, text: str, message: str
) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    with pytest.raises(TargetError, match=message):
        make_game(str(spec))


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(max_size=400)
    | st.builds(
        lambda words, mode: f'id = "x"\nvocabulary = {words}\n[launch]\nmode = {mode}\n',
        st.lists(st.text(max_size=8), max_size=3).map(json.dumps),
        st.text(max_size=12).map(json.dumps),
    )
)
def test_any_spec_text_is_a_spec_or_a_target_error(tmp_path: Path, text: str) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(text, encoding="utf-8", errors="surrogatepass")
    # Anything but a TargetError (a parser's own exception, a crash) fails the test.
    with contextlib.suppress(TargetError):
        assert load_spec(spec).vocabulary


def test_a_json_spec_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TargetError, match="nested too deeply"):
        load_spec(spec)


def test_a_spec_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    import os

    spec = tmp_path / "spec.toml"
    os.mkfifo(spec)
    with pytest.raises(TargetError, match="FIFO"):
        make_game(str(spec))


def _python() -> str:
    import sys

    return sys.executable


def test_a_transcript_missing_its_fields_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="transcript"):
        parse_transcript(b'{"schema": "playproof/transcript/v1"}')


def test_a_transcript_verifier_used_again_checks_the_next_record_against_its_own_pin(
    played: Played,
) -> None:
    # One verifier, two records: the second names another recorder key and transcript digest,
    # so the transcript that passed for the first must not pass for it.
    from playproof.verify import TranscriptVerifier, attest_mode

    verifier = TranscriptVerifier(played.envelope, [played.key.verifying_key])
    assert attest_mode(played.record, verifier, played.contract).clean
    forger = SigningKey.generate()
    record = played.record.model_copy(
        update={"recorder": RecorderPin(transcript_sha256="0" * 64, key_id=forger.key_id)}
    )
    report = attest_mode(record, verifier, played.contract)
    assert "transcript-signed" in _failed(report)
    assert report.trust is None
