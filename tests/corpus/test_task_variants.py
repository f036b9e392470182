"""Task mode grades every build with ROM variants, under a fresh secret seed each time."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from playproof.corpus import _task
from playproof.corpus._variants import VariantPlan


class _Graded(Exception):
    """Stops run-tests right where it hands the build to the grader."""


def _plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: int) -> list[VariantPlan]:
    seen: list[VariantPlan] = []

    def grade(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["variants"])
        raise _Graded

    monkeypatch.setattr(_task, "grade_candidate", grade)
    folder = tmp_path / "task"
    _task.init_task(
        folder, _task.TaskSpec(candidate=[sys.executable, "candidate.py"], corpus="mooneye")
    )
    for _ in range(runs):
        with pytest.raises(_Graded):
            _task.task_run_tests(folder)
    return seen


def test_run_tests_grades_with_variants_and_the_rom_symbols(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (plan,) = _plans(tmp_path, monkeypatch, 1)
    assert isinstance(plan, VariantPlan)
    assert plan.per_case >= 1
    assert plan.symbols  # Mooneye's checked-value variants need the .sym files


def test_each_build_is_graded_under_a_new_secret_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _plans(tmp_path, monkeypatch, 2)
    assert first.seed != second.seed


def test_a_grading_that_dies_leaves_a_task_that_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first run dies inside grading; the grader key already exists then, and
    # the next run must still find a signed state beside it, not refuse the task.
    plans = _plans(tmp_path, monkeypatch, 3)
    assert len(plans) == 3
    assert (tmp_path / "task" / _task.STATE_FILE).exists()
