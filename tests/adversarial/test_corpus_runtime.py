"""No reference inside a candidate's jail: the grader's interpreter and packages stay out.

A candidate that could import PyBoy, or start the grader's interpreter, could
wrap the reference emulator instead of emulating. Each probe below reports
everything of the grader it could reach; under every runtime a task may
declare, it finds nothing. Honest candidates (a standard-library Python
interpreter, declared as the task's runtime) still pass.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from controllers import synthetic
from typer.testing import CliRunner

import playproof.cli._corpus  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.corpus import bubblewrap_usable, load_corpus, reference_candidate
from playproof.corpus._grading import command_candidate, grade_candidate
from playproof.corpus._runtime import (
    grader_interpreter,
    grader_library_paths,
    runtime_command,
    runtime_view,
)
from playproof.corpus.chip8 import candidate as chip8_candidate
from playproof.corpus.chip8 import machine as chip8_machine

needs_bwrap = pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot run here")
CANDIDATES = Path(__file__).parents[1] / "corpus" / "candidates"


def _grader_paths() -> list[str]:
    """What a cheat would look for: the grader's interpreter (as started and its base),
    its venv and every folder of its packages."""
    paths = {sys.executable, str(grader_interpreter()), sys.prefix}
    paths.update(str(path) for path in grader_library_paths())
    return sorted(paths)


def _found(command: tuple[str, ...], runtime: Any, tmp_path: Path) -> str:
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    # Under ``python`` the base interpreter is the declared runtime: it may show, bare.
    allowed = {str(grader_interpreter())} if runtime == "python" else set()
    probed = [path for path in _grader_paths() if path not in allowed]
    spec = dataclasses.replace(
        command_candidate(command, runtime=runtime),
        env={"PROBE_PATHS": os.pathsep.join(probed)},
    )
    run = grade_candidate(load_corpus(corpus.manifest, corpus.roms), corpus.answers, spec)
    (seen,) = run.observations
    found = [line for line in seen.stderr_tail.splitlines() if line.startswith("FOUND")]
    assert found, seen.stderr_tail  # the probe ran and reported
    return found[-1]


@needs_bwrap
def test_a_python_candidate_finds_no_grader_package_or_venv(tmp_path: Path) -> None:
    found = _found((sys.executable, str(CANDIDATES / "grader_probe.py")), "python", tmp_path)
    assert found == "FOUND []"


@needs_bwrap
def test_a_native_candidate_finds_no_grader_interpreter(tmp_path: Path) -> None:
    found = _found(("/bin/sh", str(CANDIDATES / "grader_probe.sh")), "native", tmp_path)
    assert found == "FOUND [ ]"


@needs_bwrap
def test_a_native_candidate_naming_the_grader_interpreter_cannot_start_it(
    tmp_path: Path,
) -> None:
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    command = (sys.executable, str(CANDIDATES / "synthetic.py"))
    spec = command_candidate(command, runtime="native")
    run = grade_candidate(load_corpus(corpus.manifest, corpus.roms), corpus.answers, spec)
    assert run.grade.passed == 0
    assert run.observations[0].outcome == "crash"
    # The same candidate with Python declared as its runtime passes.
    spec = command_candidate(command, runtime="python")
    run = grade_candidate(load_corpus(corpus.manifest, corpus.roms), corpus.answers, spec)
    assert run.grade.passed == 1


def test_the_python_runtime_starts_the_base_interpreter_never_the_venv() -> None:
    base = str(grader_interpreter())
    assert runtime_command((sys.executable, "x.py"), "python") == (base, "x.py")
    assert runtime_command(("python3", "x.py"), "python") == (base, "x.py")
    assert runtime_command(("python3", "x.py"), "native") == ("python3", "x.py")
    assert runtime_command(("./emu",), "python") == ("./emu",)
    venv = Path(sys.prefix).resolve()
    for runtime in ("native", "python"):
        view = runtime_view(runtime)
        assert venv not in view.visible
        assert venv in view.hidden or venv == Path(sys.base_prefix).resolve()
    assert grader_interpreter() in runtime_view("native").hidden
    assert grader_interpreter() not in runtime_view("python").hidden
    # Where PyBoy lies (the grader's packages) is covered under both.
    for folder in grader_library_paths():
        assert all(folder in runtime_view(r).hidden for r in ("native", "python"))


@needs_bwrap
def test_an_honest_stdlib_interpreter_declared_as_python_passes_with_variants(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "emu"
    workspace.mkdir()
    for module in (chip8_candidate, chip8_machine, reference_candidate):
        source = Path(str(module.__file__))
        (workspace / source.name).write_bytes(source.read_bytes())
    result = CliRunner().invoke(
        app,
        [
            "--json",
            "grade",
            "--candidate",
            f"python3 {workspace / 'candidate.py'}",
            "--runtime",
            "python",
            "--build-dir",
            str(workspace),
            "--corpus",
            "chip8",
            "--out",
            str(tmp_path / "grade.json"),
            "--key-dir",
            str(tmp_path / "keys"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["passed"], summary["denominator"], summary["trust"]) == (8, 8, "trusted")
    assert summary["variants"] >= 8
