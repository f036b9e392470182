"""The containment launcher: which mechanism the probe picks, and how programs are started."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from playproof._containment import (
    containment,
    describe_exit,
    probe,
    resolve_program,
)

linux_with_unshare = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("unshare") is None,
    reason="the probe only tries namespaces on Linux with util-linux unshare",
)


class FakeRunner:
    """Answers probe runs: success for commands holding every word of ``accept``."""

    def __init__(self, *accept: str) -> None:
        self.accept = accept
        self.runs: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> tuple[int | None, str]:
        self.runs.append(list(argv))
        if self.accept and all(word in argv for word in self.accept):
            return 0, ""
        return 1, "unshare: unshare failed: Operation not permitted"


@linux_with_unshare
def test_a_refusing_system_falls_back_to_a_process_group_and_says_why() -> None:
    runner = FakeRunner()
    launcher = probe(runner)
    assert launcher.kind == "process-group"
    assert not launcher.contained
    assert launcher.prefix == ()
    assert "Operation not permitted" in launcher.reason
    assert all("--pid" in run for run in runner.runs)
    assert launcher.command(["agent", "--flag"], env=None) == ["agent", "--flag"]


@linux_with_unshare
def test_the_probe_prefers_a_fresh_proc_and_needs_no_user_namespace_as_root() -> None:
    launcher = probe(FakeRunner("--pid"))
    assert launcher.contained
    assert "--mount-proc" in launcher.prefix
    assert ("--user" in launcher.prefix) == (os.geteuid() != 0)
    assert "--kill-child" in launcher.prefix


@linux_with_unshare
def test_an_ordinary_user_gets_a_user_namespace_mapping_itself() -> None:
    launcher = probe(FakeRunner("--user"))
    assert launcher.contained
    assert f"--map-user={os.geteuid()}" in launcher.prefix
    assert f"--map-group={os.getegid()}" in launcher.prefix


@linux_with_unshare
def test_without_a_proc_mount_the_namespace_still_contains() -> None:
    runner = FakeRunner("--pid")
    original = runner.__call__

    def no_proc(argv: Sequence[str]) -> tuple[int | None, str]:
        return (1, "mount failed") if "--mount-proc" in argv else original(argv)

    launcher = probe(no_proc)
    assert launcher.contained
    assert "--mount-proc" not in launcher.prefix


def test_exit_statuses_in_words() -> None:
    assert describe_exit(3, contained=True) == "exited with status 3"
    assert describe_exit(-9, contained=False) == "was killed by SIGKILL"
    assert describe_exit(137, contained=True) == "exited with status 137 (128 + SIGKILL)"
    assert describe_exit(137, contained=False) == "exited with status 137"
    assert describe_exit(255, contained=True) == "exited with status 255"
    assert describe_exit(None, contained=True) == "did not exit"


def test_programs_resolve_as_exec_would(tmp_path: Path) -> None:
    assert resolve_program("sh", {"PATH": "/bin:/usr/bin"}).endswith("/sh")
    with pytest.raises(FileNotFoundError):
        resolve_program("no-such-agent-program", {"PATH": str(tmp_path)})
    with pytest.raises(FileNotFoundError):
        resolve_program("./missing.py", None, cwd=tmp_path)
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(PermissionError):
        resolve_program("./agent.sh", None, cwd=tmp_path)
    script.chmod(0o755)
    assert resolve_program("./agent.sh", None, cwd=tmp_path) == "./agent.sh"


def test_arguments_reach_the_program_untouched_by_the_init_shell(tmp_path: Path) -> None:
    """The init is a shell, but it only ever runs ``"$@"``: nothing is expanded."""
    arguments = ["$HOME", "*", "a b", "'; echo injected", "`id`", "", "-c"]
    program = "import json, sys; print(json.dumps(sys.argv[1:]))"
    command = containment().command([sys.executable, "-c", program, *arguments], env=None)
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=60, check=True)
    assert json.loads(done.stdout) == arguments


def test_a_name_the_shell_knows_as_a_builtin_still_runs_the_program() -> None:
    """``echo`` is a builtin of the init shell; the program found on PATH runs instead."""
    launcher = containment()
    command = launcher.command(["echo", "-n", "x"], env=None)
    if launcher.contained:
        assert command[-3] == shutil.which("echo")
    done = subprocess.run(command, capture_output=True, timeout=60, check=True)
    assert done.stdout == b"x"
