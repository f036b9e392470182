"""Hostile input at the command line: markup and escapes in records, odd files, long errors.

Every value from a record, a file or an agent is data: it is printed as written,
never read as rich markup and never passed raw to the terminal.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from playproof import run
from playproof.cli._output import data, line, one_line
from playproof.core.record import RunRecord
from playproof.drivers import ScriptedDriver
from playproof.sign import SigningKey, sign_record
from playproof.targets import get_target

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
STYLED_LOOKALIKE = "[green]CLEAN[/]"


def cli(*args: str, cwd: Path, columns: int = 200) -> subprocess.CompletedProcess[str]:
    # Colour forced on: a value read as markup would come out wrapped in escape codes.
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": str(columns)}
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=env
    )


@pytest.fixture(scope="module")
def honest() -> RunRecord:
    reference = get_target("native/2048").reference
    return run("native/2048", ScriptedDriver(reference[:20], name="ref"), max_turns=20)


def _edited(record: RunRecord, **changes: Any) -> dict[str, Any]:
    return {**record.to_json(), **changes}


def _write_bare(folder: Path, document: dict[str, Any]) -> Path:
    path = folder / "bare.json"
    path.write_text(json.dumps(document))
    return path


def _write_signed(folder: Path, document: dict[str, Any]) -> Path:
    key = SigningKey.generate()
    (folder / "keys").mkdir(exist_ok=True)
    key.save(folder / "keys" / "signing.pem")
    key.verifying_key.save(folder / "keys" / "signing.pub.pem", overwrite=True)
    path = folder / "signed.json"
    envelope = sign_record(RunRecord.model_validate(document), key).to_json()
    path.write_text(json.dumps(envelope))
    return path


def _shown_plain(text: str, value: str) -> None:
    """``value`` appears literally, with no escape code right around it."""
    assert value in text, text
    for match in re.finditer(re.escape(value), text):
        before, after = text[: match.start()], text[match.end() :]
        styled = re.search(f"(?:{ANSI.pattern})$", before) or ANSI.match(after)
        assert not styled, repr(before[-12:] + value + after[:12])


def _claim(record: RunRecord, claim_id: str) -> dict[str, Any]:
    claimed = [*record.to_json()["claimed"], {"id": claim_id, "turn": 1}]
    return _edited(record, claimed=claimed)


def _actor(record: RunRecord, actor_id: str) -> dict[str, Any]:
    return _edited(record, actor={"kind": "cli", "id": actor_id})


def test_a_claim_id_closing_a_tag_is_rejected_not_crashed(
    tmp_path: Path, honest: RunRecord
) -> None:
    path = _write_bare(tmp_path, _claim(honest, "[/x] forged"))
    result = cli("verify", "--unsigned", str(path), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr
    _shown_plain(result.stdout, "[/x] forged")


@pytest.mark.parametrize("actor_id", ["agent[/bogus]", STYLED_LOOKALIKE, "[bold red]x[/bold red]"])
def test_show_prints_an_actor_id_as_written(
    tmp_path: Path, honest: RunRecord, actor_id: str
) -> None:
    path = _write_bare(tmp_path, _actor(honest, actor_id))
    result = cli("show", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    _shown_plain(result.stdout, f"cli:{actor_id}")


def test_a_signed_record_with_markup_is_verified_and_shown_as_written(
    tmp_path: Path, honest: RunRecord
) -> None:
    path = _write_signed(tmp_path, _claim(honest, STYLED_LOOKALIKE))
    result = cli("verify", str(path), "--key-dir", "keys", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr
    _shown_plain(result.stdout, STYLED_LOOKALIKE)
    shown = cli("show", str(path), cwd=tmp_path)
    assert shown.returncode == 0
    _shown_plain(shown.stdout, STYLED_LOOKALIKE)


def test_escape_sequences_in_a_record_never_reach_the_terminal(
    tmp_path: Path, honest: RunRecord
) -> None:
    path = _write_bare(tmp_path, _actor(honest, "x\x1b[2J\x1b]0;owned\x07\rover"))
    result = cli("show", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "\x1b[2J" not in result.stdout
    assert "\x1b]0;" not in result.stdout
    assert "\\x1b[2J" in result.stdout


def test_campaign_progress_shows_an_analyst_summary_as_written(tmp_path: Path) -> None:
    (tmp_path / "hostile_analyst.py").write_text(
        "def analyse(report):\n    return {'summary': '[red]ALERT[/] \\x1b[2J done'}\n"
    )
    result = cli(
        "campaign", "native/2048", "--agent", "reference", "--segment-turns", "50",
        "--max-turns", "100", "--ledger", "l.json", "--key-dir", "keys", "--out", "r.json",
        "--analyst", "python:hostile_analyst:analyse",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    _shown_plain(result.stderr, "[red]ALERT[/]")
    assert "\x1b[2J" not in result.stderr


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    result = cli("verify", str(fifo), cwd=tmp_path)
    assert result.returncode == 3
    assert "is a FIFO, not a regular file" in result.stderr


@pytest.mark.timeout(10)
def test_a_fifo_given_as_a_trusted_key_is_refused_at_once(
    tmp_path: Path, honest: RunRecord
) -> None:
    path = _write_signed(tmp_path, honest.to_json())
    os.mkfifo(tmp_path / "key.pub.pem")
    result = cli("verify", str(path), "--key", "key.pub.pem", cwd=tmp_path)
    assert result.returncode == 3
    assert "public key file key.pub.pem is a FIFO" in result.stderr


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a device"), (".", "a folder")])
def test_devices_and_folders_are_refused(tmp_path: Path, path: str, kind: str) -> None:
    # `verify` reads a folder as a batch of records, so only `show` refuses one.
    commands = ("verify", "show") if kind == "a device" else ("show",)
    for command in commands:
        result = cli(command, path, cwd=tmp_path)
        assert result.returncode == 3
        assert f"is {kind}, not a regular file" in result.stderr


def test_verify_of_a_folder_without_records_is_a_one_line_error(tmp_path: Path) -> None:
    result = cli("verify", ".", cwd=tmp_path)
    assert result.returncode == 3
    assert "no record files to verify" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.timeout(10)
def test_the_bounded_reader_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    from playproof._bounded import read_bounded
    from playproof.errors import FormatError

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(FormatError, match="not a regular file"):
            read_bounded(path, 1024, "test file")
    regular = tmp_path / "ok"
    regular.write_bytes(b"x" * 1024)
    assert read_bounded(regular, 1024, "test file") == b"x" * 1024
    with pytest.raises(FormatError, match="over the 1023-byte limit"):
        read_bounded(regular, 1023, "test file")


def test_an_error_is_one_line_however_narrow_the_terminal(tmp_path: Path) -> None:
    long = tmp_path / ("a-rather-long-folder-name-" * 4) / "and-a-long-record-name.json"
    result = cli("verify", str(long), cwd=tmp_path, columns=40)
    assert result.returncode == 3
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert str(long) in lines[0]
    assert lines[0].endswith("No such file or directory")


def test_an_error_message_with_newlines_is_folded(tmp_path: Path) -> None:
    (tmp_path / "broken.txt").write_text("up\n")
    result = cli("run", "native/2048", "--agent", "python:no_such\nmodule:f", cwd=tmp_path)
    assert result.returncode == 3
    assert len(result.stderr.splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    "message",
    ["first\nsecond", "tab\there", "cr\r\nlf", "ansi \x1b[31mred", "bell\x07", "sep\u2028x"],
)
def test_one_line_folds_and_neutralises(message: str) -> None:
    folded = one_line(message)
    assert "\n" not in folded
    assert "\r" not in folded
    assert "\x1b" not in folded
    assert "\x07" not in folded
    assert "\u2028" not in folded


def test_data_is_never_markup() -> None:
    assert data("[bold]x[/]").plain == "[bold]x[/]"
    assert not data("[bold]x[/]").spans
    assert line("a ", "[/x]").plain == "a [/x]"
