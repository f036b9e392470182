"""``playproof campaign``: segments across real processes, resume, steering file, signing."""

import json
import stat
import subprocess
import sys
from pathlib import Path

EXE = [
    sys.executable,
    "-c",
    "import playproof.cli._campaign; from playproof.cli import main; main()",
]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def test_campaign_pauses_resumes_steers_and_signs(tmp_path: Path) -> None:
    args = [
        "campaign", "native/2048", "--agent", "baseline:random-walk", "--segment-turns", "40",
        "--ledger", "run.ledger.json", "--max-turns", "100", "--segments", "1",
        "--steer-file", "steer.txt", "--key-dir", "keys", "--out", "record.json",
    ]  # fmt: skip
    first = json.loads(cli("--json", *args, cwd=tmp_path).stdout)
    assert first["status"] == "paused"
    assert first["turns"] == 40
    (tmp_path / "steer.txt").write_text("prefer the corners\n")
    second = json.loads(cli("--json", *args, cwd=tmp_path).stdout)
    assert second["turns"] == 80
    human = cli(*args, cwd=tmp_path)
    assert "resuming from run.ledger.json (80 decisions)" in human.stderr
    assert "signed record written" in human.stdout
    ledger = json.loads((tmp_path / "run.ledger.json").read_text())
    assert [s["guidance"] for s in ledger["segments"]] == [None, None, "prefer the corners"]
    assert "prefer the corners" not in (tmp_path / "record.json").read_text()
    verified = subprocess.run(
        [sys.executable, "-c", "from playproof.cli import main; main()", "verify", "record.json",
         "--key-dir", "keys"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_steering_file_that_says_stop_ends_the_campaign(tmp_path: Path) -> None:
    (tmp_path / "steer.txt").write_text("STOP\nenough for today\n")
    out = cli(
        "--json", "campaign", "native/2048", "--agent", "baseline:round-robin",
        "--segment-turns", "10", "--ledger", "l.json", "--max-turns", "100",
        "--steer-file", "steer.txt", "--key-dir", "keys", "--out", "r.json",
        cwd=tmp_path,
    )  # fmt: skip
    info = json.loads(out.stdout)
    assert info["status"] == "finished"
    assert info["stop_reason"] == "stopped"
    assert info["turns"] == 10


def test_resume_refuses_a_ledger_of_another_key_or_an_edited_one(tmp_path: Path) -> None:
    args = [
        "campaign", "native/2048", "--agent", "baseline:round-robin", "--segment-turns", "10",
        "--ledger", "l.json", "--max-turns", "100", "--segments", "1",
    ]  # fmt: skip
    cli(*args, "--key-dir", "keys", cwd=tmp_path)
    other = subprocess.run(
        [*EXE, *args, "--key-dir", "other-keys"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert other.returncode != 0
    assert "signed by key" in other.stdout + other.stderr
    ledger = tmp_path / "l.json"
    ledger.write_bytes(ledger.read_bytes().replace(b'"latencies_ms":[', b'"latencies_ms":[1', 1))
    edited = subprocess.run(
        [*EXE, *args, "--key-dir", "keys"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert edited.returncode != 0
    assert "signature does not verify" in edited.stdout + edited.stderr


def test_resume_refuses_an_older_copy_of_the_ledger_noted_in_the_key_dir(tmp_path: Path) -> None:
    args = [
        "--json", "campaign", "native/2048", "--agent", "baseline:round-robin",
        "--segment-turns", "10", "--ledger", "l.json", "--max-turns", "100", "--segments", "1",
        "--key-dir", "keys",
    ]  # fmt: skip
    cli(*args, cwd=tmp_path)
    ledger = tmp_path / "l.json"
    older = ledger.read_bytes()
    assert json.loads(cli(*args, cwd=tmp_path).stdout)["turns"] == 20
    guard = tmp_path / "keys" / "campaigns"
    assert stat.S_IMODE(guard.stat().st_mode) == 0o700
    [note] = guard.glob("*.json")
    assert json.loads(note.read_text())["decisions"] == 20
    ledger.write_bytes(older)
    rolled_back = subprocess.run(
        [*EXE, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert rolled_back.returncode != 0
    said = rolled_back.stdout + rolled_back.stderr
    assert "older than the campaign's last save" in said
    assert "it holds 10 decisions in 1 segment," in said
    assert json.loads(note.read_text())["decisions"] == 20
