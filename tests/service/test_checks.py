"""The check-group framework and the two first groups, without HTTP or a database."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import playproof
from playproof.core.record import RunRecord
from playproof.service.checks import (
    GROUPS,
    CheckGroup,
    CheckSpec,
    StoredEvidence,
    group_named,
    run_group,
)
from playproof.service.checks.groups import LIMITS_AND_ACCOUNTING, REPLAY_INTEGRITY


def _outcomes(group: CheckGroup, evidence: StoredEvidence) -> dict[str, bool]:
    return {c.id: c.passed for c in run_group(group, evidence).checks}


def test_a_failed_precondition_fails_what_depends_on_it() -> None:
    group = CheckGroup(
        name="g",
        title="t",
        checks=(
            CheckSpec("a", "a holds", "a does not hold"),
            CheckSpec("b", "b holds", "b does not hold", ("a",)),
            CheckSpec("c", "c holds", "c does not hold"),
        ),
        evaluate=lambda _e: {"a": False, "b": True, "c": True},
    )
    result = run_group(group, StoredEvidence(record=None, report=None))
    assert [(c.id, c.passed) for c in result.checks] == [("a", False), ("b", False), ("c", True)]
    assert result.checks[1].explanation == "not checked: it needs a, which failed"
    assert result.result == "fail"


def test_a_check_may_only_require_an_earlier_one() -> None:
    with pytest.raises(ValueError, match="requires"):
        CheckGroup(
            name="g",
            title="t",
            checks=(CheckSpec("b", "", "", ("a",)), CheckSpec("a", "", "")),
            evaluate=lambda _e: {},
        )


def test_group_ids_are_stable_and_unique() -> None:
    assert [g.name for g in GROUPS] == ["replay_integrity", "limits_and_accounting"]
    for group in GROUPS:
        ids = [c.id for c in group.checks]
        assert len(ids) == len(set(ids))
        assert group_named(group.name) is group
    assert group_named("nope") is None


def test_without_evidence_every_check_fails() -> None:
    nothing = StoredEvidence(record=None, report=None)
    for group in GROUPS:
        assert not any(_outcomes(group, nothing).values())


@pytest.fixture(scope="module")
def record() -> RunRecord:
    return playproof.run("native/2048", playproof.BaselineDriver("round-robin"), max_turns=12)


def test_a_clean_run_passes_both_groups(record: RunRecord) -> None:
    report = playproof.verify_record(record)
    evidence = StoredEvidence(record=record, report=report)
    # The unsigned verification has no signature checks: those fail, the rest pass.
    replay = _outcomes(REPLAY_INTEGRITY, evidence)
    assert replay["report-stored"]
    assert all(_outcomes(LIMITS_AND_ACCOUNTING, evidence).values())


def _tampered(record: RunRecord, **accounting: float | int) -> RunRecord:
    data = record.to_json()
    data["accounting"] = {**data["accounting"], **accounting}
    return RunRecord.model_validate(data)


@settings(max_examples=40, deadline=None)
@given(delta=st.floats(min_value=1e-9, max_value=1e6, allow_nan=False))
def test_any_change_to_the_totals_is_caught(record: RunRecord, delta: float) -> None:
    spent = record.accounting.spent_usd + delta
    latency = record.accounting.total_latency_ms + delta
    for field, value, check in (
        ("spent_usd", spent, "costs-add-up"),
        ("total_latency_ms", latency, "latencies-add-up"),
    ):
        if value == getattr(record.accounting, field):
            continue  # the float did not change
        changed = _tampered(record, **{field: value})
        outcome = _outcomes(LIMITS_AND_ACCOUNTING, StoredEvidence(record=changed, report=None))
        assert not outcome[check]


def test_more_decisions_than_the_limit_fail_the_turn_check(record: RunRecord) -> None:
    data = record.to_json()
    data["limits"] = {**data["limits"], "max_turns": len(record.decisions) - 1}
    shrunk = RunRecord.model_validate(data)
    outcome = _outcomes(LIMITS_AND_ACCOUNTING, StoredEvidence(record=shrunk, report=None))
    assert not outcome["turns-within-limit"]
    assert not outcome["stop-reason-consistent"]
    assert outcome["costs-add-up"]
