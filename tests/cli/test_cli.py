"""The playproof command, run as a user runs it (a real process, real files)."""

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]


def cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def signed(workdir: Path) -> Path:
    out = workdir / "run.json"
    cli("run", "native/2048", "--agent", "reference", "--out", str(out), cwd=workdir)
    return out


def test_keygen_writes_a_private_key_only_the_owner_can_read(workdir: Path) -> None:
    result = cli("--json", "keygen", "--key-dir", "k", cwd=workdir)
    info = json.loads(result.stdout)
    assert len(info["key_id"]) == 64
    assert (workdir / "k" / "signing.pem").stat().st_mode & 0o777 == 0o600
    again = cli("keygen", "--key-dir", "k", cwd=workdir, check=False)
    assert again.returncode == 3
    assert "error:" in again.stderr
    assert "Traceback" not in again.stderr


def test_targets_lists_2048(workdir: Path) -> None:
    listed = json.loads(cli("targets", "--json", cwd=workdir).stdout)
    entry = next(t for t in listed if t["name"] == "native/2048")
    assert entry["separates"] is False
    assert entry["separation_note"]


def test_run_then_verify_is_clean(workdir: Path, signed: Path) -> None:
    result = cli("verify", str(signed), "--json", cwd=workdir)
    report = json.loads(result.stdout)
    assert report["verdict"] == "clean"
    assert len(report["verified"]) == report["milestones_total"] == 7


def test_verify_in_a_worker_is_clean(workdir: Path, signed: Path) -> None:
    assert cli("verify", str(signed), "--worker", cwd=workdir).returncode == 0


def test_tampered_record_exits_nonzero(workdir: Path, signed: Path) -> None:
    envelope = json.loads(signed.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["decisions"]["inputs"][0] = "left"  # a v2 record: columns
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    forged = workdir / "forged.json"
    forged.write_text(json.dumps(envelope))
    result = cli("verify", str(forged), cwd=workdir, check=False)
    assert result.returncode == 1
    assert "signature-valid" in result.stdout


def test_verify_with_an_unknown_key_is_rejected(workdir: Path, signed: Path) -> None:
    cli("keygen", "--key-dir", "other", cwd=workdir)
    result = cli("verify", str(signed), "--key", "other/signing.pub.pem", cwd=workdir, check=False)
    assert result.returncode == 1


def test_show_summarizes(workdir: Path, signed: Path) -> None:
    summary = json.loads(cli("show", str(signed), "--json", cwd=workdir).stdout)
    assert summary["target"] == "native/2048"
    assert summary["turns"] == 216
    assert len(summary["claimed"]) == 7
    assert "216 of 216" in cli("show", str(signed), cwd=workdir).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "native/nope", "--agent", "reference"), "unknown target"),
        (("run", "native/2048", "--agent", "teleport"), "unknown agent"),
        (("run", "native/2048", "--agent", "python:no_such_module:f"), "cannot load agent"),
        (("verify", "missing.json"), "cannot read"),
        (("show", "garbage.txt"), "not valid JSON"),
    ],
)
def test_errors_are_one_clear_line(workdir: Path, args: tuple[str, ...], message: str) -> None:
    (workdir / "garbage.txt").write_text("{not json")
    result = cli(*args, cwd=workdir, check=False)
    assert result.returncode == 3
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_garbage_file_is_rejected_not_crashed(workdir: Path) -> None:
    (workdir / "junk.json").write_text('{"payload": 5}')
    result = cli("verify", "junk.json", cwd=workdir, check=False)
    assert result.returncode == 1
    assert "envelope-well-formed" in result.stdout


def test_demo_runs_end_to_end(workdir: Path) -> None:
    result = cli("demo", cwd=workdir)
    assert "demo complete" in result.stdout
    assert (workdir / "playproof-runs" / "demo" / "2048-signed.json").exists()


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"


@pytest.mark.parametrize(
    "agent",
    [
        f"session:{sys.executable} {EXAMPLES / 'session_agent.py'}",
        f"cli:{sys.executable} {EXAMPLES / 'oneshot_json_agent.py'}",
    ],
)
def test_program_agents_from_the_command_line(workdir: Path, agent: str) -> None:
    out = workdir / "program.json"
    cli("run", "native/2048", "--agent", agent, "--max-turns", "15", "--out", str(out), cwd=workdir)
    report = json.loads(cli("verify", str(out), "--json", cwd=workdir).stdout)
    assert report["verdict"] == "clean"
    shown = json.loads(cli("show", str(out), "--json", cwd=workdir).stdout)
    assert shown["turns"] == 15
    assert shown["actor"].split(":")[0] in ("session", "cli")


def test_openai_agent_needs_a_model(workdir: Path) -> None:
    result = cli("run", "native/2048", "--agent", "openai:", cwd=workdir, check=False)
    assert result.returncode == 3
    assert "needs a model name" in result.stderr
