"""``playproof verify --cross retroarch``: a PyBoy record replayed on RetroArch, per channel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyboy", reason="the record is played on PyBoy (playproof[pyboy])")
if shutil.which("retroarch") is None and os.geteuid() != 0:
    pytest.skip(
        "RetroArch is not installed (as root, scripts/system-deps.sh installs it)",
        allow_module_level=True,
    )

from playproof.targets.retroarch import pp_collect

EXE = [sys.executable, "-c", "from playproof.cli import main; main()"]
FIRST_COIN = 11


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=180, check=False
    )


def test_verify_cross_reports_agreement_per_channel(tmp_path: Path) -> None:
    inputs = ("start", *pp_collect().reference[:FIRST_COIN])
    (tmp_path / "inputs.txt").write_text("\n".join(inputs) + "\n")
    run = cli(
        "run", "pyboy/pp-collect", "--agent", "script:inputs.txt", "--out", "run.json",
        "--key-dir", "keys", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    done = cli(
        "verify", "run.json", "--key-dir", "keys", "--cross", "retroarch", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    cross = report["cross"]
    assert cross["agrees"] is True
    assert cross["verified"] == cross["other_verified"] == ["score-1"]
    assert cross["channels"]["score"] == {
        "compared": FIRST_COIN + 1,
        "agreed": FIRST_COIN + 1,
        "first_difference": None,
    }
    unknown = cli("verify", "run.json", "--key-dir", "keys", "--cross", "dolphin", cwd=tmp_path)
    assert unknown.returncode != 0
    assert "no cross-emulator pairing" in unknown.stdout + unknown.stderr
