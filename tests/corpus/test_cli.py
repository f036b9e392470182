"""The corpus CLI: grade, verify-grade, task init / run-tests / progress."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import playproof.cli._corpus  # noqa: F401  (registers the commands)
from playproof.cli._app import app
from playproof.corpus import reference_candidate
from playproof.corpus.chip8 import candidate as chip8_candidate
from playproof.corpus.chip8 import machine as chip8_machine
from playproof.errors import FormatError


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _grade_args(subset: Any, cheat: Any, keys: Path, out: Path) -> list[str]:
    """``--json grade`` of the always-passed cheat on the subset, its record to ``out``."""
    script = Path(cheat("always_passed").command[1])
    return [
        "--json",
        "grade",
        "--candidate",
        f"python3 {script}",
        "--corpus",
        str(subset.manifest_path),
        "--answers",
        str(subset.answers_path),
        "--roms",
        str(subset.roms),
        "--build-dir",
        str(script.parent),
        "--out",
        str(out),
        "--key-dir",
        str(keys),
    ]


def test_grade_then_verify_grade(subset: Any, cheat: Any, tmp_path: Path) -> None:
    keys, out = tmp_path / "keys", tmp_path / "grade.json"
    result = _invoke(*_grade_args(subset, cheat, keys, out))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["passed"], summary["denominator"]) == (0, 4)
    checked = _invoke(
        "verify-grade", str(out), "--manifest", str(subset.manifest_path), "--key-dir", str(keys)
    )
    assert checked.exit_code == 0
    assert "verdict: clean" in checked.output


def test_tampered_rom_stops_grade_before_any_case(subset: Any, tmp_path: Path) -> None:
    rom = subset.roms / subset.manifest.cases[-1].file
    rom.write_bytes(rom.read_bytes()[:-1] + b"\x00")
    with pytest.raises(FormatError, match="refusing the whole corpus"):
        _invoke(
            "grade",
            "--candidate",
            "/nonexistent",
            "--corpus",
            str(subset.manifest_path),
            "--answers",
            str(subset.answers_path),
            "--roms",
            str(subset.roms),
            "--out",
            str(tmp_path / "g.json"),
            "--key-dir",
            str(tmp_path / "k"),
        )
    assert not (tmp_path / "g.json").exists()


def test_task_run_tests_rewards_progress_and_not_repetition(tmp_path: Path) -> None:
    task = tmp_path / "task"
    assert (
        _invoke(
            "task", "init", str(task), "--corpus", "chip8", "--candidate", "python3 candidate.py"
        ).exit_code
        == 0
    )
    assert json.loads((task / "task.json").read_text())["runtime"] == "python"
    starter = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert (starter["status"], starter["passed"], starter["reward"]) == ("graded", 0, 0)

    # An honest interpreter written with the standard library only (playproof's own).
    _copy_chip8_interpreter(task / "workspace")
    built = json.loads(
        _invoke("--json", "task", "run-tests", "--task", str(task), "--filter", "nothing").output
    )
    assert (built["passed"], built["reward"], built["finished"]) == (8, 8, True)
    again = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert (again["reward"], again["cumulative"]) == (0, 8)
    progress = json.loads(_invoke("--json", "task", "progress", "--task", str(task)).output)
    assert progress == {"passed": 8, "denominator": 8, "cumulative": 8}
    rows = (task / "last.tsv").read_text().splitlines()
    assert len(rows) == 9
    assert all("\t1\t" in r for r in rows[1:])


def _copy_chip8_interpreter(workspace: Path) -> None:
    """The CHIP-8 reference's three stdlib-only files, laid out as it runs as a script."""
    for module in (chip8_candidate, chip8_machine, reference_candidate):
        shutil.copyfile(str(module.__file__), workspace / Path(str(module.__file__)).name)


def test_the_reference_copied_into_a_task_finds_no_pyboy(subset: Any, tmp_path: Path) -> None:
    """The grader's packages are not in a task's jail: wrapping the reference scores 0."""
    task = tmp_path / "task"
    command = f"{sys.executable} candidate.py"  # the grader's own venv interpreter, by path
    assert _invoke("task", "init", str(task), "--candidate", command).exit_code == 0
    spec = json.loads((task / "task.json").read_text())
    spec.update(
        manifest=str(subset.manifest_path),
        answers=str(subset.answers_path),
        roms=str(subset.roms),
        controller_key=str(subset.controller_key),
    )
    (task / "task.json").write_text(json.dumps(spec))
    shutil.copyfile(reference_candidate.__file__, task / "workspace" / "candidate.py")
    report = json.loads(_invoke("--json", "task", "run-tests", "--task", str(task)).output)
    assert (report["status"], report["passed"], report["reward"]) == ("graded", 0, 0)
    rows = (task / "last.tsv").read_text().splitlines()[1:]
    assert rows
    assert all("crash" in row for row in rows)  # ModuleNotFoundError: pyboy


@pytest.mark.parametrize("fresh", [False, True])
def test_grade_uses_the_warm_jail_unless_told_otherwise(
    subset: Any, cheat: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: bool
) -> None:
    from playproof.corpus._jail import JailSpec
    from playproof.corpus._warm import WarmJail, warm_usable

    if not warm_usable(JailSpec()):
        pytest.skip("the warm jail needs root and bubblewrap")
    starts: list[int] = []
    real = WarmJail.start

    def counted(jail: WarmJail, lane: int) -> Any:
        starts.append(lane)
        return real(jail, lane)

    monkeypatch.setattr(WarmJail, "start", counted)
    args = _grade_args(subset, cheat, tmp_path / "keys", tmp_path / "grade.json")
    result = _invoke(*args, "--jobs", "1", *(["--fresh-jail"] if fresh else []))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["denominator"] == 4
    # Warm: every process of the candidate (cases and variants) and of the reference.
    assert (len(starts) >= 4) != fresh
    assert (not starts) == fresh


def test_a_folder_name_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """A path is data: an escape sequence in it is shown as text, never sent raw."""
    task = tmp_path / "a\x1b]0;owned\x07b"
    created = _invoke("task", "init", str(task), "--candidate", "python3 candidate.py")
    assert created.exit_code == 0, created.output
    assert "\x1b" not in created.output
    assert "task created in" in created.output
