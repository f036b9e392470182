"""Every command, given hostile files wherever it takes a path, ends in a typed error.

The command tree is read from the app itself, so a command added later is
swept too. Each path parameter gets, in turn, an empty file, a file that is
not JSON, JSON nested past any parser's depth, binary noise, a folder, a FIFO
(which must be refused, not waited on), a path under a file and one under
``/proc``; other required values get a plain word or number. Whatever the
command makes of that, it must end as the entry point can report in one
line: a playproof error, a usage error (exit 2), a success, or an OS error
naming the path. Commands that serve or play until stopped, and commands
that take no path, are left out.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import playproof.cli._corpus
import playproof.cli._service  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.errors import PlayproofError

LEFT_OUT = {"serve", "demo", "shell", "run", "campaign"}
"""Commands (or groups) that play, serve or open a shell: they run until stopped."""
COMMAND_S = 30
"""A watchdog per command: a command that waits on a FIFO fails the test, not the suite."""


def _commands(command: Any, prefix: list[str]) -> Iterator[tuple[list[str], Any]]:
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from _commands(sub, [*prefix, name])
    else:
        yield prefix, command


def _hostile_files(root: Path) -> dict[str, Path]:
    files = {
        "empty": b"",
        "not-json": b"{",
        "deep": b"[" * 5000 + b"]" * 5000,
        "noise": bytes(range(256)) * 4,
    }
    made = {}
    for name, content in files.items():
        made[name] = root / f"{name}.json"
        made[name].write_bytes(content)
    made["folder"] = root / "folder"
    made["folder"].mkdir()
    os.mkfifo(root / "fifo")
    made["fifo"] = root / "fifo"
    made["under-a-file"] = made["empty"] / "sub"
    made["proc"] = Path("/proc/playproof-none/x")
    return made


def _arguments(names: list[str], command: Any, path: Path) -> list[str]:
    args = list(names)
    for param in command.params:
        annotation = str(param.type_descriptor.annotation)
        value = str(path) if "Path" in annotation else "1" if "int" in annotation else "x"
        if type(param).__name__.endswith("Argument"):
            if param.required:
                args.append(value)
        elif ("Path" in annotation or param.required) and not getattr(param, "is_flag", False):
            args += [param.opts[0], value]
    return args


def _timeout(_signum: int, _frame: Any) -> None:
    raise TimeoutError("the command did not end")


def test_every_command_ends_hostile_files_in_an_error_it_can_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # whatever a command creates stays in the test's folder
    tree = typer.main.get_command(app)
    swept = 0
    unreportable = []
    previous = signal.signal(signal.SIGALRM, _timeout)
    try:
        for names, command in _commands(tree, []):
            takes_a_path = any("Path" in str(p.type_descriptor.annotation) for p in command.params)
            if LEFT_OUT & set(names) or not takes_a_path:
                continue
            # Fresh files for each command: what one made (a task in the folder) is not the next's.
            files = _hostile_files(Path(tempfile.mkdtemp(dir=tmp_path)))
            for kind, path in files.items():
                args = _arguments(names, command, path)
                signal.alarm(COMMAND_S)
                try:
                    result = CliRunner().invoke(app, args)
                finally:
                    signal.alarm(0)
                swept += 1
                error = result.exception
                reportable = (
                    error is None
                    or isinstance(error, SystemExit | PlayproofError)
                    or (isinstance(error, OSError) and error.filename is not None)
                )
                if not reportable:
                    unreportable.append(f"{' '.join(names)} ({kind}): {error!r}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert swept >= 120  # the sweep reads the real command tree
    assert unreportable == []
