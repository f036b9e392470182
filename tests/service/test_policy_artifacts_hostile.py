"""Stored policy artifacts that are not plain JSON fail the checks that read them, never raise.

The policy groups read the run's artifacts back as JSON. Before, they were read
with ``json.loads``: one nested too deeply raised RecursionError out of the
group's decision, and an envelope that repeats a key was read with its last
value (a reader taking the first one would see another envelope).
"""

from __future__ import annotations

import pytest

from playproof.core.canonical import canonical_json
from playproof.policy import WALLET_SAFETY_CHECKS
from playproof.policy.envelope import example_envelope
from playproof.service.artifacts.roles import (
    POLICY_ENVELOPE,
    REBALANCE_ALLOCATION,
    REBALANCE_EVIDENCE,
    RUN_EVENTS,
)
from playproof.service.checks import PolicyEvidence
from playproof.service.checks.policy import decide_policy_group, policy_group_named

ENVELOPE = canonical_json(example_envelope())
DEEP = b"[" * 100_000 + b"]" * 100_000
REPEATED = ENVELOPE[:-1] + b',"max_trade_usd":1000000000000}'
NAN = ENVELOPE[:-1] + b',"extra":NaN}'


@pytest.mark.parametrize(
    ("artifacts", "missing"),
    [
        ({POLICY_ENVELOPE.name: DEEP, RUN_EVENTS.name: b"[]"}, "envelope"),
        ({POLICY_ENVELOPE.name: REPEATED, RUN_EVENTS.name: b"[]"}, "envelope"),
        ({POLICY_ENVELOPE.name: NAN, RUN_EVENTS.name: b"[]"}, "envelope"),
        ({POLICY_ENVELOPE.name: ENVELOPE, RUN_EVENTS.name: DEEP}, "no run events"),
        ({POLICY_ENVELOPE.name: ENVELOPE, RUN_EVENTS.name: b'["a", NaN]'}, "no run events"),
    ],
    ids=["deep-envelope", "repeated-key", "nan-envelope", "deep-events", "nan-events"],
)
def test_an_artifact_that_is_not_plain_json_is_missing(
    artifacts: dict[str, bytes], missing: str
) -> None:
    group = policy_group_named("wallet_safety")
    assert group is not None
    result = decide_policy_group(group, PolicyEvidence("solana/swap", artifacts))
    assert [c.id for c in result.checks] == list(WALLET_SAFETY_CHECKS)
    for check in result.checks:
        assert not check.passed
        assert check.explanation.startswith("input missing")
        assert missing in check.explanation


def test_deep_rebalance_documents_fail_their_checks() -> None:
    artifacts = {
        POLICY_ENVELOPE.name: ENVELOPE,
        RUN_EVENTS.name: b"[]",
        REBALANCE_EVIDENCE.name: DEEP,
        REBALANCE_ALLOCATION.name: DEEP,
    }
    group = policy_group_named("rebalance_policy")
    assert group is not None
    result = decide_policy_group(group, PolicyEvidence("solana/rebalance", artifacts))
    assert result.result == "fail"
    assert all(c.explanation.startswith("input missing") for c in result.checks)
