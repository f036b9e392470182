"""The policy groups as the service publishes them, without HTTP or a database."""

from __future__ import annotations

import json

import pytest

from playproof.core.canonical import canonical_json
from playproof.policy import REBALANCE_POLICY_CHECKS, WALLET_SAFETY_CHECKS
from playproof.policy.envelope import example_envelope
from playproof.service.artifacts.roles import POLICY_ENVELOPE, RUN_EVENTS
from playproof.service.checks import (
    GROUPS,
    PolicyEvidence,
    StoredEvidence,
    decide_group,
    decide_groups,
    is_group_name,
)
from playproof.service.checks.policy import decide_policy_group, policy_group_named

ENVELOPE = canonical_json(example_envelope())


def _names(evidence: StoredEvidence) -> list[str]:
    return [g.group for g in decide_groups(evidence)]


def test_only_a_policy_bound_run_lists_the_policy_groups() -> None:
    plain = StoredEvidence(record=None, report=None)
    assert _names(plain) == [g.name for g in GROUPS]
    assert decide_group("wallet_safety", plain) is None
    bound = StoredEvidence(record=None, report=None, policy=PolicyEvidence("solana/swap"))
    assert _names(bound) == [*(g.name for g in GROUPS), "wallet_safety"]
    assert is_group_name("wallet_safety")
    assert not is_group_name("nope")


@pytest.mark.parametrize(
    ("artifacts", "missing"),
    [
        ({}, "envelope"),
        ({POLICY_ENVELOPE.name: ENVELOPE}, "no run events"),
        ({POLICY_ENVELOPE.name: ENVELOPE, RUN_EVENTS.name: b"{not json"}, "no run events"),
        ({POLICY_ENVELOPE.name: ENVELOPE, RUN_EVENTS.name: b"[1, 2]"}, "no run events"),
        ({POLICY_ENVELOPE.name: b'{"chain": "localnet"}', RUN_EVENTS.name: b"[]"}, "envelope"),
        ({POLICY_ENVELOPE.name: ENVELOPE, RUN_EVENTS.name: b"[]"}, "no run events"),
    ],
)
def test_missing_or_unreadable_input_fails_every_check(
    artifacts: dict[str, bytes], missing: str
) -> None:
    group = policy_group_named("wallet_safety")
    assert group is not None
    result = decide_policy_group(group, PolicyEvidence("solana/swap", artifacts))
    assert result.result == "fail"
    assert [c.id for c in result.checks] == list(WALLET_SAFETY_CHECKS)
    for check in result.checks:
        assert not check.passed
        assert check.explanation.startswith("input missing")
        assert missing in check.explanation


def test_a_rebalance_run_has_both_groups_and_missing_documents_fail_their_checks() -> None:
    artifacts = {POLICY_ENVELOPE.name: ENVELOPE, RUN_EVENTS.name: json.dumps([]).encode()}
    rebalance = StoredEvidence(None, None, PolicyEvidence("solana/rebalance", artifacts))
    assert _names(rebalance)[-2:] == ["wallet_safety", "rebalance_policy"]
    swap = StoredEvidence(None, None, PolicyEvidence("solana/swap", artifacts))
    assert "rebalance_policy" not in _names(swap)
    assert decide_group("rebalance_policy", swap) is None
    result = decide_group("rebalance_policy", rebalance)
    assert result is not None
    assert [c.id for c in result.checks] == list(REBALANCE_POLICY_CHECKS)
    assert result.result == "fail"
    for check in result.checks:
        assert not check.passed
        assert check.explanation.startswith("input missing")
