"""Using the command line: usage errors, typed choices, help, listings, validation order."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from playproof.cli._calibrate import ExecutorName
from playproof.cli._options import ReplyMode
from playproof.core.game import VerificationMode
from playproof.exec import EXECUTORS
from playproof.targets import get_target, list_targets

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]

# ``import click`` fails inside the child: the CLI must work with its runtime dependencies only.
NO_CLICK = """
import sys

class NoClick:
    def find_spec(self, name, path=None, target=None):
        if name == "click" or name.startswith("click."):
            raise ModuleNotFoundError("No module named 'click'", name="click")
        return None

sys.meta_path.insert(0, NoClick())
for name in [m for m in sys.modules if m == "click" or m.startswith("click.")]:
    del sys.modules[name]
from playproof.cli import main
main()
"""


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, exe: list[str] = EXE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*exe, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run",), "Missing argument"),
        (("run", "native/2048", "--agent", "reference", "--bogus"), "No such option: --bogus"),
        (("verify",), "Missing argument"),
        (("run", "native/2048", "--agent", "reference", "--seed", "x"), "for '--seed'"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2_without_click(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    result = cli(*args, cwd=tmp_path, exe=[sys.executable, "-c", NO_CLICK])
    assert result.returncode == 2, result.stderr
    line = one_line(result.stderr)
    assert line.startswith("usage error: ")
    assert message in line
    assert line.endswith(f"(see: playproof {args[0]} --help)")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("keygen", "--key-dir", "{file}"), "File exists"),
        (("task", "init", "{file}/sub"), "Not a directory"),
    ],
)
def test_a_path_that_cannot_be_used_is_a_one_line_error_naming_it(
    tmp_path: Path, args: tuple[str, ...], reason: str
) -> None:
    """A file where a folder goes is the user's path, not an internal error."""
    (tmp_path / "afile").write_text("")
    given = [arg.format(file=tmp_path / "afile") for arg in args]
    result = cli(*given, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    line = one_line(result.stderr)
    assert line.startswith("error: cannot use ")
    assert str(tmp_path / "afile") in line
    assert reason in line


def test_a_bare_command_group_shows_its_help_and_exits_2(tmp_path: Path) -> None:
    result = cli("corpus", cwd=tmp_path, exe=[sys.executable, "-c", NO_CLICK])
    assert result.returncode == 2
    assert "build" in result.stderr
    assert "Traceback" not in result.stderr


CAMPAIGN = ("campaign", "native/2048", "-a", "reference", "--segment-turns", "5", "--ledger", "l")
CHOICES = [
    (("run", "native/2048", "--agent", "reference", "--mode", "bogus"), VerificationMode),
    (("run", "native/2048", "--agent", "reference", "--reply", "yaml"), ReplyMode),
    ((*CAMPAIGN, "--mode", "bogus"), VerificationMode),
    ((*CAMPAIGN, "--reply", "yaml"), ReplyMode),
    (("calibrate", "native/2048", "--executor", "cloud"), ExecutorName),
]


@pytest.mark.parametrize(("args", "choices"), CHOICES)
def test_every_choice_option_lists_its_values(
    tmp_path: Path, args: tuple[str, ...], choices: type
) -> None:
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    line = one_line(result.stderr)
    for choice in choices:  # type: ignore[attr-defined]
        assert f"'{choice.value}'" in line
    assert not (tmp_path / ".playproof").exists()
    assert not (tmp_path / "l").exists()


def test_the_executor_choices_are_the_executors() -> None:
    assert tuple(e.value for e in ExecutorName) == EXECUTORS


def test_the_reply_choices_are_the_cli_drivers() -> None:
    from playproof.drivers.cli import ReplyMode as DriverReply

    assert tuple(r.value for r in ReplyMode) == get_args(DriverReply)


@pytest.mark.parametrize("command", ["run", "campaign", "verify", "calibrate", "discover", "grade"])
def test_help_is_readable_at_80_columns(tmp_path: Path, command: str) -> None:
    result = cli(command, "--help", cwd=tmp_path, env={"COLUMNS": "80"})
    assert result.returncode == 0
    assert "…" not in result.stdout
    assert "<bool>" not in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines())
    assert "--json" in result.stdout


def test_run_help_shows_flags_as_flags(tmp_path: Path) -> None:
    text = cli("run", "--help", cwd=tmp_path, env={"COLUMNS": "80"}).stdout
    assert "--stop-at-game-over / --no-stop-at-game-over" in text
    assert "--worker / --in-process" in text
    assert "--price-cached-input <float>" in text
    assert "--mode <replay|trusted-recorder|platform-attested>" in text


def test_targets_are_readable_at_80_columns(tmp_path: Path) -> None:
    text = cli("targets", cwd=tmp_path, env={"COLUMNS": "80"}).stdout
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(part.strip("│ ") for part in text.splitlines())
    for target in list_targets():
        assert target.name in text
        assert f"reference of {len(target.reference)} inputs" in flat
        # The description is wrapped at word boundaries, not cut into five-letter slices.
        assert target.spec.description.split()[0] in text


def test_a_reference_length_in_a_note_is_the_reference_length() -> None:
    for target in list_targets():
        note = target.spec.separation_note
        if "reference length (" in note:
            stated = note.split("reference length (", 1)[1].split(" inputs", 1)[0]
            assert int(stated) == len(target.reference), target.name


def test_the_demo_and_targets_agree_on_the_2048_reference(tmp_path: Path) -> None:
    count = len(get_target("native/2048").reference)
    listed = json.loads(cli("targets", "--json", cwd=tmp_path).stdout)
    assert next(t for t in listed if t["name"] == "native/2048")["reference_inputs"] == count
    assert f"({count} inputs)" in get_target("native/2048").spec.separation_note


@pytest.mark.parametrize(
    "args",
    [
        ("--agent", "baseline:bogus"),
        ("--agent", "reference", "--mode", "trusted-recorder"),
        ("--agent", "cli:", "--cost", "0"),
    ],
)
def test_a_rejected_run_creates_nothing_and_draws_no_bar(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = cli("run", "native/2048", *args, "--key-dir", "keys", cwd=tmp_path)
    assert result.returncode == 3
    line = one_line(result.stderr)
    assert line.startswith("error: ")
    assert not (tmp_path / "keys").exists()
    assert not (tmp_path / "playproof-runs").exists()


def test_a_campaign_with_a_bad_analyst_creates_nothing(tmp_path: Path) -> None:
    result = cli(
        "campaign", "native/2048", "--agent", "reference", "--segment-turns", "5",
        "--ledger", "l.json", "--analyst", "python:no_such_module:f", "--key-dir", "keys",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3
    assert "cannot load analyst" in one_line(result.stderr)
    assert not (tmp_path / "keys").exists()
    assert not (tmp_path / "l.json").exists()


def test_an_unusable_key_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "keys").write_text("a file, not a folder")
    result = cli("run", "native/2048", "--agent", "reference", "--key-dir", "keys/k", cwd=tmp_path)
    assert result.returncode == 3
    assert "cannot create a signing key" in one_line(result.stderr)
    assert not (tmp_path / "playproof-runs").exists()


def test_campaign_json_prints_one_json_document_and_no_progress(tmp_path: Path) -> None:
    result = cli(
        "campaign", "native/2048", "--agent", "reference", "--segment-turns", "100",
        "--ledger", "l.json", "--key-dir", "keys", "--out", "r.json", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["status"] == "finished"
    assert "milestone" not in result.stderr
    assert "segment" not in result.stderr


def test_the_actor_kind_is_said_once(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("print('up')\n")
    result = cli(
        "run", "native/2048", "--agent", f"cli:{sys.executable} agent.py", "--reply", "word",
        "--cost", "0", "--max-turns", "2", "--out", "r.json", "--key-dir", "keys", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    actor = json.loads(result.stdout)["actor"]
    assert actor == f"cli:{Path(sys.executable).name} agent.py"
    envelope = json.loads((tmp_path / "r.json").read_text())
    assert "cli:cli:" not in json.dumps(envelope)


def test_a_rejected_record_says_in_words_what_replay_showed(tmp_path: Path) -> None:
    assert cli("keygen", "--key-dir", "mine", cwd=tmp_path).returncode == 0
    run = cli(
        "run", "native/2048", "--agent", "reference", "--out", "r.json", "--key-dir", "mine",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    result = cli("verify", "r.json", "--key-dir", "nowhere", cwd=tmp_path)
    assert result.returncode == 1
    flat = " ".join(result.stdout.split())
    assert "0 of ?" not in flat
    assert "verified by replay: none (rejected before replay: signature-valid:" in flat
    assert "--key FILE.pub.pem" in flat
    assert "nowhere" in flat


def test_a_bad_executor_address_for_grading_is_one_line_and_no_bar(tmp_path: Path) -> None:
    result = cli(
        "grade", "--candidate", "reference", "--executor", "ray", "--ray-address", "nowhere",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 3
    assert "--ray-address must be HOST:PORT" in one_line(result.stderr)


def test_a_ledger_that_does_not_match_is_reported_alone(tmp_path: Path) -> None:
    args = (*CAMPAIGN, "--segments", "1", "--max-turns", "20", "--key-dir", "keys")
    assert cli(*args, cwd=tmp_path).returncode == 0
    result = cli(*args, "--seed", "7", cwd=tmp_path)
    assert result.returncode == 3
    line = one_line(result.stderr)
    assert line.startswith("error: LedgerError:")
    assert "seed" in line
