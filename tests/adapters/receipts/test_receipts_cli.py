"""``playproof run SPEC --mode platform-attested`` and ``playproof verify`` on the command line.

The agent plays the packaged 2048 while a loopback Steam fake unlocks an
achievement between the baseline and the final reading. A sentinel key is
planted in the environment; it must appear in no output and no file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from receipts_fakes import STEAM_APP, STEAM_USER, FakeProvider, fake_provider

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
KEY = "SENTINEL-KEY-cli-5be1"


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXE, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def unlock_for_the_final(index: int, server: FakeProvider) -> None:
    if index >= 2:  # requests 0 and 1 are the baseline (achievements, stats)
        server.state.achievements["ACH_WIN"] = True
        server.state.stats["score"] = 64


def test_run_and_verify_a_receipts_spec(tmp_path: Path) -> None:
    env = {"PP_STEAM_USER": STEAM_USER, "PP_STEAM_KEY": KEY}
    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_WIN": False, "ACH_DONE": True}
        server.state.stats = {"score": 0}
        server.before_answer = unlock_for_the_final
        spec = {
            "schema": "playproof/receipts-target/v1",
            "name": "steam-2048",
            "provider": "steam",
            "title_id": STEAM_APP,
            "play": "native/2048",
            "user_env": "PP_STEAM_USER",
            "key_env": "PP_STEAM_KEY",
            "base_url": server.base_url,
            "milestones": [
                {"id": "win", "achievement": "ACH_WIN"},
                {"id": "done", "achievement": "ACH_DONE"},
                {"id": "score-50", "stat": "score", "at_least": 50},
            ],
        }
        (tmp_path / "spec.json").write_text(json.dumps(spec))
        ran = cli(
            "run", "spec.json", "--mode", "platform-attested", "--agent",
            "baseline:round-robin", "--max-turns", "5", "--out", "run.json",
            "--key-dir", "keys", "--json",
            cwd=tmp_path, env=env,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert summary["claimed"] == ["win", "score-50"]  # "done" was unlocked before the run
    checked = cli("verify", "run.json", "--key-dir", "keys", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = " ".join(checked.stdout.split())
    assert "Steam's Web API said so at" in text
    assert "the game was not re-executed" in text
    assert "verified: 2 of 3" in text
    as_json = cli("verify", "run.json", "--key-dir", "keys", "--json", cwd=tmp_path, env=env)
    report = json.loads(as_json.stdout)
    assert report["verdict"] == "clean"
    assert report["trust"].startswith("Steam's Web API said so at")
    outputs = [ran.stdout, ran.stderr, checked.stdout, checked.stderr, as_json.stdout]
    files = [p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".pem"]
    assert all(KEY not in text for text in outputs + files)


def test_a_missing_credential_fails_before_anything_is_written(tmp_path: Path) -> None:
    spec = {
        "name": "steam-2048",
        "provider": "steam",
        "title_id": STEAM_APP,
        "play": "native/2048",
        "user_env": "PP_STEAM_USER",
        "key_env": "PP_STEAM_KEY_UNSET",
        "base_url": "http://127.0.0.1:9",
        "milestones": [{"id": "win", "achievement": "ACH_WIN"}],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    ran = cli(
        "run", "spec.json", "--mode", "platform-attested", "--agent", "baseline:round-robin",
        "--key-dir", "keys", "--out", "run.json",
        cwd=tmp_path, env={"PP_STEAM_USER": STEAM_USER},
    )  # fmt: skip
    assert ran.returncode != 0
    assert "set PP_STEAM_KEY_UNSET" in ran.stderr
    assert not (tmp_path / "run.json").exists()


def test_a_contract_or_a_file_that_is_no_spec_is_refused(tmp_path: Path) -> None:
    (tmp_path / "contract.json").write_text("{}")
    (tmp_path / "spec.json").write_text(json.dumps({"name": "x", "provider": "psn"}))
    env = {"PP_STEAM_USER": STEAM_USER, "PP_STEAM_KEY": KEY}
    common = ["--mode", "platform-attested", "--agent", "baseline:round-robin"]
    with_contract = cli(
        "run", "spec.json", *common, "--contract", "contract.json", cwd=tmp_path, env=env
    )
    assert with_contract.returncode != 0
    assert "drop --contract" in with_contract.stderr
    not_a_spec = cli("run", "spec.json", *common, cwd=tmp_path, env=env)
    assert not_a_spec.returncode != 0
    assert "receipts spec is not valid" in not_a_spec.stderr
    assert not (tmp_path / "playproof-runs").exists()
