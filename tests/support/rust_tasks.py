"""Rust task helpers: a task made with the Rust starter, with files of a test's choosing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from playproof.corpus._jail import bubblewrap_usable
from playproof.corpus._rust import STARTER_PACKAGE, rust_starter_build
from playproof.corpus._task import TaskSpec, init_task

CRATES = Path(__file__).parent.parent / "corpus" / "crates"
"""Rust sources the tests build (``chip8/main.rs``: an honest CHIP-8 interpreter)."""


def need_rust_jail() -> None:
    """Skip unless cargo, rustc and a bubblewrap jail are here (the build runs in the jail)."""
    if shutil.which("cargo") is None or shutil.which("rustc") is None:
        pytest.skip("cargo and rustc are not installed")
    if not bubblewrap_usable():
        pytest.skip("the Rust build needs bubblewrap (the toolchain is shown in the jail)")


def rust_task(folder: Path, files: dict[str, str] | None = None, **build: object) -> Path:
    """A chip8 task made with ``--starter rust``; ``files`` overwrite workspace files and
    ``build`` updates task.json's ``build`` (e.g. ``vendored``, ``profile``)."""
    task = folder / "task"
    spec = TaskSpec(
        corpus="chip8",
        candidate=[STARTER_PACKAGE],
        build=rust_starter_build().model_copy(update=build),
        runtime="native",
    )
    init_task(task, spec, starter="rust")
    for name, text in (files or {}).items():
        path = task / "workspace" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return task


def task_json(task: Path) -> dict[str, object]:
    """``task.json`` as a dict."""
    loaded: dict[str, object] = json.loads((task / "task.json").read_text(encoding="utf-8"))
    return loaded
