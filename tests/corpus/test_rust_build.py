"""The controlled Rust build: the starter, a Rust CHIP-8 candidate graded end to end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rust_tasks import CRATES, need_rust_jail, rust_task, task_json
from typer.testing import CliRunner

import playproof.cli._corpus  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.corpus import _rust
from playproof.corpus._jail import JailSpec, bubblewrap_command, bubblewrap_usable
from playproof.corpus._rust import FINGERPRINT_FILE, CargoBuild
from playproof.corpus._task import load_task, task_run_tests
from playproof.errors import FormatError

HONEST = (CRATES / "chip8" / "main.rs").read_text(encoding="utf-8")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_a_rust_candidate_is_graded_end_to_end_with_delta_reward(tmp_path: Path) -> None:
    need_rust_jail()
    task = tmp_path / "task"
    assert _invoke("task", "init", str(task), "--starter", "rust").exit_code == 0
    spec = load_task(task)
    assert isinstance(spec.build, CargoBuild)
    assert (spec.corpus, spec.runtime, spec.candidate) == ("chip8", "native", ["chip8-candidate"])
    assert (task / FINGERPRINT_FILE).exists()  # fingerprinted when the task starts

    # The starter builds cleanly under every rule and speaks the protocol; it draws nothing.
    starter = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert (starter["status"], starter["passed"], starter["reward"]) == ("graded", 0, 0)

    (task / "workspace" / "src" / "main.rs").write_text(HONEST, encoding="utf-8")
    graded = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert graded["status"] == "graded"
    assert graded["passed"] >= 1  # at least the IBM logo, with its sprite variant
    assert graded["reward"] == graded["passed"]
    rows = (task / "last.tsv").read_text().splitlines()
    assert "2-ibm-logo\t1\t" in "\n".join(rows)

    again = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert (again["reward"], again["cumulative"]) == (0, graded["passed"])


@pytest.mark.slow
def test_a_failed_build_earns_0_and_keeps_the_baseline(tmp_path: Path) -> None:
    need_rust_jail()
    task = rust_task(tmp_path, {"src/main.rs": HONEST}, profile="dev")
    first = task_run_tests(task)
    assert first.entry.status == "graded"
    passed = first.entry.passed
    assert passed >= 1

    (task / "workspace" / "src" / "main.rs").write_text("fn main() { this is not rust }\n")
    broken = task_run_tests(task)
    assert (broken.entry.status, broken.entry.reward) == ("build-failed", 0)
    assert broken.cumulative == passed
    assert "cargo build failed" in broken.build_log

    # Back to the honest source: the same passes as the baseline, so no reward again.
    (task / "workspace" / "src" / "main.rs").write_text(HONEST)
    fixed = task_run_tests(task)
    assert (fixed.entry.status, fixed.entry.passed, fixed.entry.reward) == ("graded", passed, 0)


@pytest.mark.slow
def test_the_build_uses_a_clean_copy_and_the_program_folder_is_replaced(tmp_path: Path) -> None:
    need_rust_jail()
    task = rust_task(tmp_path, profile="dev")
    # A stale target/ folder in the workspace is never used: a clean copy is built.
    stale = task / "workspace" / "target" / "debug"
    stale.mkdir(parents=True)
    (stale / "chip8-candidate").write_text("#!/bin/sh\nexec python3 -c 'print(1)'\n")
    assert task_run_tests(task).entry.status == "graded"
    first = _rust._OUTPUTS[task.resolve()]
    assert (first / "chip8-candidate").read_bytes()[:4] == b"\x7fELF"
    assert task_run_tests(task).entry.status == "graded"
    assert not first.exists()
    assert not any((task / "workspace").glob("target/release"))


def test_a_cargo_task_names_its_binary_first(tmp_path: Path) -> None:
    need_rust_jail()
    task = rust_task(tmp_path)
    spec = task_json(task)
    spec["candidate"] = ["python3", "candidate.py"]
    (task / "task.json").write_text(json.dumps(spec))
    with pytest.raises(FormatError, match="starts with its binary's name"):
        task_run_tests(task)


def test_task_json_keeps_the_plain_build_command_and_refuses_unknown_build_kinds(
    tmp_path: Path,
) -> None:
    (tmp_path / "task.json").write_text(
        json.dumps({"candidate": ["./emu"], "build": ["make", "-j2"]})
    )
    assert load_task(tmp_path).build == ["make", "-j2"]
    (tmp_path / "task.json").write_text(
        json.dumps({"candidate": ["./emu"], "build": {"kind": "make", "package": "x"}})
    )
    with pytest.raises(FormatError, match=r"task\.json is not valid"):
        load_task(tmp_path)
    (tmp_path / "task.json").write_text(
        json.dumps(
            {"candidate": ["x"], "build": {"kind": "cargo", "package": "x", "vendored": ["x"]}}
        )
    )
    with pytest.raises(FormatError):
        load_task(tmp_path)


def test_starter_rust_refuses_a_build_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["task", "init", str(tmp_path / "t"), "--starter", "rust", "--build", "make"]
    )
    assert result.exit_code != 0
    assert "declares its own cargo build" in result.output


@pytest.mark.skipif(os.geteuid() != 0, reason="bubblewrap drops to a jail uid only as root")
def test_a_jail_uid_reads_the_loader_cache_and_alternatives() -> None:
    """Regression: bubblewrap made /etc 0700, so ``cc`` (via /etc/alternatives) could not
    start in a build jail and the loader cache was unreadable."""
    if not bubblewrap_usable():
        pytest.skip("no bubblewrap")
    argv = [*bubblewrap_command(JailSpec(), 61000), "sh", "-c", "test -x /etc"]
    assert subprocess.run(argv, check=False, capture_output=True).returncode == 0
