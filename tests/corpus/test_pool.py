"""The pool: longest budget first, manifest-order results, one process per case, no leftovers."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from playproof.corpus import _jail, _runner, load_corpus, run_corpus
from playproof.corpus._jail import JAIL_UID_BASE, _processes_of
from playproof.corpus._runner import LANES_PER_SLOT, CaseObservation
from playproof.corpus._warm import WarmJail


def _counting_launches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    lanes: list[int] = []
    real = _jail.launch

    def counted(argv: list[str], spec: Any, slot: int, **options: Any) -> Any:
        lanes.append(slot)
        return real(argv, spec, slot, **options)

    monkeypatch.setattr(_runner, "launch", counted)
    real_warm = WarmJail.start

    def counted_warm(jail: WarmJail, lane: int) -> Any:
        lanes.append(lane)
        return real_warm(jail, lane)

    monkeypatch.setattr(WarmJail, "start", counted_warm)
    return lanes


def test_longest_budget_runs_first_and_results_keep_manifest_order(
    subset: Any, cheat: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    lanes = _counting_launches(monkeypatch)
    seen: list[str] = []

    def note(observation: CaseObservation) -> None:
        seen.append(observation.case_id)

    outcome = run_corpus(corpus, cheat("always_passed"), jobs=1, on_case=note)
    cases = subset.manifest.cases
    assert seen == [c.id for c in sorted(cases, key=lambda c: -c.budget_frames)]
    assert seen != [c.id for c in cases]  # the subset's budgets are not in manifest order
    assert [o.case_id for o in outcome.observations] == [c.id for c in cases]
    # A fresh process per case (the next one started during the case before), on alternating lanes.
    assert lanes == [0, 1, 0, 1]


def test_without_prestart_a_slot_starts_a_process_only_when_its_case_is_due(
    subset: Any, cheat: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    events: list[str] = []
    real = _jail.launch

    def counted(argv: list[str], spec: Any, slot: int) -> Any:
        events.append("launch")
        return real(argv, spec, slot)

    monkeypatch.setattr(_runner, "launch", counted)
    real_warm = WarmJail.start

    def counted_warm(jail: WarmJail, lane: int) -> Any:
        events.append("launch")
        return real_warm(jail, lane)

    monkeypatch.setattr(WarmJail, "start", counted_warm)
    outcome = run_corpus(
        corpus,
        cheat("always_passed"),
        jobs=1,
        prestart=False,
        on_case=lambda _o: events.append("done"),
    )
    assert all(o.outcome == "ok" for o in outcome.observations)
    assert events == ["launch", "done"] * len(subset.manifest.cases)


@pytest.mark.parametrize("jobs", [1, 2])
def test_which_cases_share_a_process_is_fixed_by_the_manifest_not_by_timing(
    subset: Any, cheat: Any, jobs: int
) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    order = [c.id for c in sorted(subset.manifest.cases, key=lambda c: -c.budget_frames)]
    expected = {case_id: f"loaded {1 + at % 2}" for at, case_id in enumerate(order)}
    for _ in range(2):
        outcome = run_corpus(corpus, cheat("leaky"), jobs=jobs, cases_per_process=2)
        assert all(o.outcome == "ok" for o in outcome.observations)
        seen = {o.case_id: (o.serial or "").strip() for o in outcome.observations}
        assert seen == expected


def test_a_process_serves_its_cases_and_a_failure_ends_it(
    subset: Any, cheat: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = load_corpus(subset.manifest, subset.roms)
    lanes = _counting_launches(monkeypatch)
    outcome = run_corpus(corpus, cheat("always_passed"), jobs=1, cases_per_process=4)
    assert all(o.outcome == "ok" for o in outcome.observations)
    assert lanes == [0]


@pytest.mark.parametrize("per_process", [1, 3])
def test_no_jail_process_outlives_the_run(subset: Any, cheat: Any, per_process: int) -> None:
    if os.geteuid() != 0:
        pytest.skip("jail uids are used only as root")
    corpus = load_corpus(subset.manifest, subset.roms)
    outcome = run_corpus(corpus, cheat("always_passed"), jobs=2, cases_per_process=per_process)
    assert len(outcome.observations) == len(subset.manifest.cases)
    for _ in range(50):  # killed processes are reaped promptly, not instantly
        left = sum(_processes_of(JAIL_UID_BASE + n) for n in range(2 * LANES_PER_SLOT))
        if left == 0:
            break
        time.sleep(0.1)
    assert left == 0


def test_concurrent_runs_never_share_a_jail_lane() -> None:
    """Two gradings on one host reserve disjoint lanes (so their uid sweeps cannot collide)."""
    from playproof.corpus._jail import reserve_lanes

    with reserve_lanes(4) as first, reserve_lanes(4) as second:
        assert len(set(first)) == len(set(second)) == 4
        assert not set(first) & set(second)
    with reserve_lanes(4) as again:
        assert set(again) == set(first)  # released lanes are reused
