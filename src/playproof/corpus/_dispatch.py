"""Corpus cases handed to an executor as whole tasks (a Ray cluster, a process pool).

:func:`run_corpus_on` is :func:`playproof.corpus._runner.run_corpus` with
the cases spread over an executor instead of this machine's jail lanes: each
task is one whole group of cases (one case by default, ``cases_per_process``
of them when a process serves several), never a single step of one. The
groups are cut exactly as the local runner cuts them (longest budget first,
consecutive, fixed by the manifest), so which cases share a process does not
depend on where they run, and each task runs its group through the local
runner, in the jail of the machine it lands on. The task receives the
group's ROM bytes and the candidate's spec; the answers never leave this
process. Observations come back in manifest order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, as_completed
from dataclasses import dataclass
from time import monotonic

from playproof.corpus._cgroup import MemoryCgroup
from playproof.corpus._jail import Isolation, IsolationChoice, JailLimits, Sandbox
from playproof.corpus._manifest import Corpus, CorpusCase
from playproof.corpus._runner import CandidateSpec, CaseObservation, RunOutcome, run_corpus
from playproof.errors import RunError

__all__ = ["CaseGroupResult", "case_groups", "run_case_group", "run_corpus_on"]


@dataclass(frozen=True)
class CaseGroupResult:
    """What one task sends back: its cases' observations, the isolation and sandbox layout."""

    observations: tuple[CaseObservation, ...]
    isolation: Isolation
    sandbox: Sandbox | None = None
    memory_cgroup: MemoryCgroup | None = None


def case_groups(corpus: Corpus, cases_per_process: int) -> list[tuple[CorpusCase, ...]]:
    """The groups the local runner makes: longest budget first, ``cases_per_process`` each."""
    ordered = sorted(corpus.manifest.cases, key=lambda c: -c.budget_frames)
    size = max(1, cases_per_process)
    return [tuple(ordered[at : at + size]) for at in range(0, len(ordered), size)]


def _sub_corpus(corpus: Corpus, group: Sequence[CorpusCase]) -> Corpus:
    manifest = corpus.manifest.model_copy(
        update={"cases": tuple(group), "denominator": len(group), "excluded": ()}
    )
    return Corpus(manifest=manifest, roms={case.id: corpus.roms[case.id] for case in group})


def run_case_group(
    corpus: Corpus,
    candidate: CandidateSpec,
    cases_per_process: int,
    limits: JailLimits,
    isolation: IsolationChoice,
) -> CaseGroupResult:
    """One task: run a group of cases (``corpus`` holds only them) in this machine's jail."""
    outcome = run_corpus(
        corpus,
        candidate,
        jobs=1,
        cases_per_process=cases_per_process,
        limits=limits,
        isolation=isolation,
    )
    return CaseGroupResult(
        tuple(outcome.observations), outcome.isolation, outcome.sandbox, outcome.memory_cgroup
    )


def run_corpus_on(
    executor: Executor,
    corpus: Corpus,
    candidate: CandidateSpec,
    *,
    jobs: int = 0,
    cases_per_process: int = 1,
    limits: JailLimits | None = None,
    isolation: IsolationChoice = "auto",
    on_case: Callable[[CaseObservation], None] | None = None,
) -> RunOutcome:
    """Run ``candidate`` on every case of ``corpus``, one task per case group on ``executor``.

    The same contract as ``run_corpus`` (``jobs`` is the executor's business and
    is ignored). Every task must report the same isolation, else the grading
    stops: a grade mixing a bubblewrap jail and bare rlimits would say neither.
    """
    del jobs  # the executor decides how many groups run at once
    chosen = limits or JailLimits()
    size = max(1, cases_per_process)
    started = monotonic()
    futures: dict[Future[CaseGroupResult], tuple[CorpusCase, ...]] = {
        executor.submit(
            run_case_group, _sub_corpus(corpus, group), candidate, size, chosen, isolation
        ): group
        for group in case_groups(corpus, size)
    }
    found: dict[str, CaseObservation] = {}
    isolations: set[Isolation] = set()
    sandboxes: set[Sandbox | None] = set()
    memories: set[MemoryCgroup | None] = set()
    try:
        for done in as_completed(futures):
            result = done.result()
            isolations.add(result.isolation)
            sandboxes.add(result.sandbox)
            memories.add(result.memory_cgroup)
            for observation in result.observations:
                found[observation.case_id] = observation
                if on_case is not None:
                    on_case(observation)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    if len(isolations) != 1:
        raise RunError(
            f"the cases ran under different isolations ({', '.join(sorted(isolations))}); "
            "grade where every machine has the same jail"
        )
    missing = [case.id for case in corpus.manifest.cases if case.id not in found]
    if missing:
        raise RunError(f"{len(missing)} cases came back without an observation: {missing[0]}")
    return RunOutcome(
        observations=[found[case.id] for case in corpus.manifest.cases],
        isolation=isolations.pop(),
        wall_seconds=monotonic() - started,
        # Mixed layouts (not made today: a task is one group) are recorded as the weaker one.
        sandbox="per-slot" if "per-slot" in sandboxes else sandboxes.pop(),
        memory_cgroup=_weakest(memories),
    )


def _weakest(memories: set[MemoryCgroup | None]) -> MemoryCgroup | None:
    """The bound every task had: ``none`` (or unknown) if one task had none, else a kind."""
    if "none" in memories or None in memories:
        return "none" if "none" in memories else None
    return sorted(m for m in memories if m is not None)[0] if memories else None
