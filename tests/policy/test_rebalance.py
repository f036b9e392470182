"""The rebalancing rules, the rebalance evidence document and the group API (pure, no Solana)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.errors import PolicyError
from playproof.policy import (
    REBALANCE_POLICY_CHECKS,
    WALLET_SAFETY_CHECKS,
    Allocation,
    RebalanceEvidence,
    applicable_groups,
    parse_action,
    parse_envelope,
    policy_groups,
)
from playproof.policy.envelope import example_envelope
from playproof.policy.rebalance import (
    DecisionSnapshot,
    RebalanceRule,
    build_evidence,
    drift_bps,
    rebalance_violations,
    weights_bps,
)
from playproof.policy.rebalance_checks import REBALANCE_POLICY_EXPLANATIONS, rebalance_policy
from playproof.policy.validate import Context

ALLOCATION = Allocation(weights_bps={"USDC": 6000, "JUP": 2500, "BONK": 1500}, drift_bps=250)
DECIMALS = {"USDC": 6, "JUP": 6, "BONK": 5}
PRICES = {"USDC": 10**9, "JUP": 8 * 10**8, "BONK": 20_000}
START = {"USDC": 10_000 * 10**6, "JUP": 0, "BONK": 10**6 * 10**5}


def _context(balances: dict[str, int]) -> Context:
    return Context(iteration=1, clock=0, prices=PRICES, balances=balances, decimals=DECIMALS)


def test_weights_and_drift() -> None:
    weights = weights_bps(START, PRICES, DECIMALS, ALLOCATION.tokens)
    assert weights == {"BONK": 19, "JUP": 0, "USDC": 9980}
    assert drift_bps(weights, ALLOCATION) == 3980
    assert weights_bps({}, PRICES, DECIMALS, ALLOCATION.tokens) == {"BONK": 0, "JUP": 0, "USDC": 0}


@pytest.mark.parametrize(
    ("line", "broken"),
    [
        ("swap USDC JUP 1000 100", ()),
        ("quote USDC JUP 1000", ()),
        # BONK is under its target: selling it is the wrong way, and leaves it below its band.
        ("swap BONK JUP 1000 100", ("rebalance_threshold", "allocation_drift")),
        # 3000 USD of JUP is 30% of the portfolio: past 25% + 2.5%.
        ("swap USDC JUP 3000 100", ("allocation_drift",)),
    ],
)
def test_rebalance_rules(line: str, broken: tuple[str, ...]) -> None:
    found = rebalance_violations(parse_action(line), ALLOCATION, _context(START))
    assert tuple(rule.value for rule in found) == broken


def test_a_balanced_portfolio_refuses_any_swap() -> None:
    balanced = {"USDC": 6000 * 10**6, "JUP": 3125 * 10**6, "BONK": 75 * 10**6 * 10**5}
    assert drift_bps(weights_bps(balanced, PRICES, DECIMALS, ALLOCATION.tokens), ALLOCATION) == 0
    found = rebalance_violations(
        parse_action("swap USDC JUP 10 100"), ALLOCATION, _context(balanced)
    )
    assert RebalanceRule.REBALANCE_THRESHOLD in found


def test_an_allocation_that_does_not_sum_to_whole_refuses_every_swap() -> None:
    bad = Allocation(weights_bps={"USDC": 6000, "JUP": 2500}, drift_bps=250)
    assert not bad.sums_to_whole
    found = rebalance_violations(parse_action("swap USDC JUP 1000 100"), bad, _context(START))
    assert found[0] is RebalanceRule.TARGET_ALLOCATION


snapshots = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10**6),
        st.fixed_dictionaries({s: st.integers(min_value=1, max_value=10**12) for s in DECIMALS}),
        st.fixed_dictionaries({s: st.integers(min_value=0, max_value=2**53 - 1) for s in DECIMALS}),
    ),
    max_size=20,
)


@settings(max_examples=50, deadline=None)
@given(rows=snapshots, seed=st.integers(min_value=0, max_value=2**53 - 2))
def test_the_evidence_document_round_trips_and_detects_any_edit(
    rows: list[tuple[int, dict[str, int], dict[str, int]]], seed: int
) -> None:
    decisions = [
        DecisionSnapshot(iteration=i + 1, clock=clock, prices=prices, balances=balances)
        for i, (clock, prices, balances) in enumerate(rows)
    ]
    document = build_evidence(
        chain="localnet", seed=seed, allocation=ALLOCATION, decimals=DECIMALS, decisions=decisions
    )
    assert document.hash_ok
    data = json.loads(document.model_dump_json(by_alias=True))
    assert data["schema"] == "playproof/rebalance-evidence/v1"
    again = RebalanceEvidence.model_validate(data)
    assert again == document
    assert again.hash_ok
    data["seed"] = seed ^ 1
    assert not RebalanceEvidence.model_validate(data).hash_ok
    if rows:
        data["seed"] = seed
        data["decisions"][0]["prices"]["JUP"] += 1
        assert not RebalanceEvidence.model_validate(data).hash_ok


def test_the_evidence_document_refuses_gaps_and_unknown_fields() -> None:
    row = DecisionSnapshot(iteration=2, clock=0, prices={}, balances={})
    with pytest.raises(ValueError, match="no gap"):
        build_evidence(
            chain="localnet", seed=0, allocation=ALLOCATION, decimals={}, decisions=[row]
        )
    good = build_evidence(
        chain="localnet", seed=0, allocation=ALLOCATION, decimals={}, decisions=[]
    )
    with pytest.raises(ValueError, match="Extra inputs"):
        RebalanceEvidence.model_validate({**good.model_dump(by_alias=True), "verdict": "pass"})


def test_every_rebalance_check_has_fixed_explanations_in_report_order() -> None:
    assert tuple(REBALANCE_POLICY_EXPLANATIONS) == REBALANCE_POLICY_CHECKS
    for good, bad in REBALANCE_POLICY_EXPLANATIONS.values():
        assert good
        assert bad
        assert good != bad


def test_the_groups_that_apply_to_each_target() -> None:
    assert applicable_groups("solana/swap") == ("wallet_safety",)
    assert applicable_groups("swap_executor_v1") == ("wallet_safety",)
    assert applicable_groups("rebalance_executor_v1") == ("wallet_safety", "rebalance_policy")
    with pytest.raises(PolicyError, match="not a policy-bound target"):
        applicable_groups("native/2048")


def test_missing_inputs_fail_with_their_reason() -> None:
    envelope = parse_envelope(example_envelope())
    swap_only = policy_groups("solana/swap", None, envelope)
    assert [g.group for g in swap_only] == ["wallet_safety"]
    assert tuple(c.id for c in swap_only[0].checks) == WALLET_SAFETY_CHECKS
    safety, policy = policy_groups("solana/rebalance", [], envelope)
    assert tuple(c.id for c in policy.checks) == REBALANCE_POLICY_CHECKS
    assert all(c.explanation.startswith("input missing") for c in (*safety.checks, *policy.checks))
    # Events present, evidence and allocation absent: the checks that read them say so.
    start = '{"chain":"localnet","seq":0,"t":0,"type":"guard","refused":false}'
    result = rebalance_policy([start], envelope)
    reasons = {c.id: c.explanation for c in result.checks}
    assert reasons["target_allocation_sum_check"] == "input missing: no deployed target weights"
    assert reasons["rebalance_evidence_present_check"] == (
        "input missing: no rebalance evidence document"
    )
    assert reasons["dry_run_or_devnet_check"].startswith("the run used only")
    too_long = b" " * (2**23 + 1)
    for bad in ({"schema": "nope"}, b"{not json", "[]", b'{"a": 1, "a": 2}', too_long):
        malformed = rebalance_policy([start], envelope, bad, ALLOCATION)
        assert (
            dict((c.id, c.explanation) for c in malformed.checks)["price_data_present_check"]
            == "input missing: the rebalance evidence document is malformed"
        )
    # The document as JSON text reads like the model.
    text = build_evidence(
        chain="localnet", seed=0, allocation=ALLOCATION, decimals=DECIMALS, decisions=[]
    ).model_dump_json(by_alias=True)
    for given_text in (text, text.encode()):
        as_text = rebalance_policy([start], envelope, given_text, ALLOCATION)
        assert as_text.failed() == ()
