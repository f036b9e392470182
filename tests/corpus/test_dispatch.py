"""Corpus cases spread over an executor: whole case groups as tasks, the local runner's answer."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from playproof.corpus import (
    load_answers,
    load_corpus,
    load_manifest,
    reference_candidate_spec,
    shipped_paths,
)
from playproof.corpus._dispatch import (
    CaseGroupResult,
    case_groups,
    run_case_group,
    run_corpus_on,
)
from playproof.corpus._grading import grade_candidate
from playproof.corpus._manifest import Corpus
from playproof.corpus._runner import CandidateSpec, CaseObservation, run_corpus
from playproof.errors import RunError
from playproof.exec import SerialExecutor


class Counting(SerialExecutor):
    """Runs calls in this process and keeps what each task received."""

    def __init__(self, change: Callable[[int, Any], Any] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self._change = change

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.calls.append(args)
        number = len(self.calls)
        if self._change is None:
            return super().submit(fn, *args, **kwargs)
        change = self._change
        return super().submit(lambda: change(number, fn(*args, **kwargs)))


@pytest.fixture(scope="module")
def chip8() -> tuple[Corpus, CandidateSpec]:
    manifest_path, answers_path, roms = shipped_paths("chip8")
    corpus = load_corpus(load_manifest(manifest_path), roms)
    spec = dataclasses.replace(
        reference_candidate_spec("chip8"), hidden=(roms.resolve(),), secret=(answers_path,)
    )
    return corpus, spec


def _plain(observations: list[CaseObservation]) -> list[dict[str, Any]]:
    return [o.model_dump(exclude={"wall_seconds"}) for o in observations]


@pytest.mark.parametrize("per_process", [1, 3])
def test_each_task_is_one_whole_case_group_and_the_answer_is_the_local_runners(
    chip8: tuple[Corpus, CandidateSpec], per_process: int
) -> None:
    corpus, spec = chip8
    executor = Counting()
    seen: list[str] = []
    spread = run_corpus_on(
        executor,
        corpus,
        spec,
        cases_per_process=per_process,
        on_case=lambda o: seen.append(o.case_id),
    )
    local = run_corpus(corpus, spec, jobs=2, cases_per_process=per_process)
    cases = len(corpus.manifest.cases)
    assert len(executor.calls) == math.ceil(cases / per_process)
    groups = case_groups(corpus, per_process)
    # Each task got exactly its group's cases and ROMs (never the answers), in the local
    # runner's grouping: longest budget first, consecutive.
    for (sub, _, size, _, _), group in zip(executor.calls, groups, strict=True):
        assert sub.manifest.cases == group
        assert set(sub.roms) == {case.id for case in group}
        assert size == per_process
    assert sorted(seen) == sorted(c.id for c in corpus.manifest.cases)
    assert _plain(spread.observations) == _plain(local.observations)
    assert spread.isolation == local.isolation


def test_tasks_that_ran_under_different_isolations_stop_the_grading(
    chip8: tuple[Corpus, CandidateSpec],
) -> None:
    corpus, spec = chip8

    def second_bare(number: int, result: CaseGroupResult) -> CaseGroupResult:
        return dataclasses.replace(result, isolation="rlimits") if number == 2 else result

    with pytest.raises(RunError, match="different isolations"):
        run_corpus_on(Counting(second_bare), corpus, spec)


def test_a_group_task_runs_only_its_cases(chip8: tuple[Corpus, CandidateSpec]) -> None:
    corpus, spec = chip8
    executor = Counting()
    run_corpus_on(executor, corpus, spec, cases_per_process=5)
    sub, candidate, size, limits, isolation = executor.calls[-1]
    alone = run_case_group(sub, candidate, size, limits, isolation)
    assert [o.case_id for o in alone.observations] == [c.id for c in sub.manifest.cases]


def test_a_grade_spread_over_an_executor_is_the_local_grade(
    chip8: tuple[Corpus, CandidateSpec],
) -> None:
    corpus, spec = chip8
    manifest_path, answers_path, _ = shipped_paths("chip8")
    answers = load_answers(answers_path, load_manifest(manifest_path))
    spread = grade_candidate(corpus, answers, spec, executor=Counting())
    local = grade_candidate(corpus, answers, spec, jobs=2)
    # Apart from when they ran and the sandbox layout (a task is one group, so its process
    # gets a new sandbox; a local slot that starts several keeps a warm one, as root).
    differ = {"started_at", "finished_at", "sandbox"}
    assert spread.record.model_dump(exclude=differ) == local.record.model_dump(exclude=differ)
    assert spread.record.sandbox in {"per-process", None}
