"""The ``rebalance_policy`` check group, recomputed from replayed events and rebalance evidence.

Pure functions like :mod:`playproof.policy.checks`: the inputs are the event
strings a replay regenerated, the ``rebalance_evidence_v1`` document the same
replay produced, the deployed envelope and the deployed allocation (target
weights and drift threshold). The envelope's and the rebalancing rules run
again over the recorded context; no verdict the game recorded is trusted. A
check whose input is missing fails and names the input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from playproof.core.canonical import parse_json, plain_json_problem
from playproof.errors import FormatError
from playproof.policy.checks import (
    CheckGroupResult,
    _context,
    _decide,
    _Missing,
    _Proposal,
    _proposals,
    _read_events,
    _swaps,
)
from playproof.policy.envelope import PolicyEnvelope
from playproof.policy.rebalance import (
    BPS,
    Allocation,
    RebalanceEvidence,
    RebalanceRule,
    rebalance_violations,
    values_nano,
)
from playproof.policy.validate import NANO, Rule, rule_violations, value_nano

__all__ = [
    "MAX_ALLOCATION_BYTES",
    "MAX_EVIDENCE_BYTES",
    "REBALANCE_POLICY",
    "REBALANCE_POLICY_CHECKS",
    "REBALANCE_POLICY_EXPLANATIONS",
    "rebalance_policy",
]

REBALANCE_POLICY = "rebalance_policy"
REBALANCE_POLICY_CHECKS = (
    "target_allocation_sum_check",
    "allowed_token_universe_check",
    "price_data_present_check",
    "rebalance_threshold_check",
    "max_trade_value_check",
    "max_position_weight_check",
    "max_slippage_check",
    "dry_run_or_devnet_check",
    "post_trade_allocation_drift_check",
    "rebalance_evidence_present_check",
)
"""The stable check ids of the ``rebalance_policy`` group, in report order."""

MAX_EVIDENCE_BYTES = 8 * 1024 * 1024
"""The largest rebalance evidence read, as text or as JSON data (compact, UTF-8)
(200 decisions take about 40 KB)."""
MAX_ALLOCATION_BYTES = 64 * 1024
"""The largest deployed allocation read as JSON data (compact, UTF-8; 64 weights fit in 2 KB)."""
_NO_EVIDENCE = "input missing: no rebalance evidence document"
_BAD_EVIDENCE = "input missing: the rebalance evidence document is malformed"
_NO_ALLOCATION = "input missing: no deployed target weights"


@dataclass(frozen=True, slots=True)
class _Inputs:
    events: Sequence[Mapping[str, Any]]
    envelope: PolicyEnvelope
    allocation: Allocation | None
    evidence: RebalanceEvidence | None
    evidence_problem: str


def _allocation(inputs: _Inputs) -> Allocation:
    if inputs.allocation is None:
        raise _Missing(_NO_ALLOCATION)
    return inputs.allocation


def _evidence(inputs: _Inputs) -> RebalanceEvidence:
    if inputs.evidence is None:
        raise _Missing(inputs.evidence_problem)
    return inputs.evidence


def _swap_proposals(inputs: _Inputs) -> list[_Proposal]:
    found = []
    for p in _proposals(inputs.events):
        if p.action is None or p.action.kind != "swap":
            continue
        if p.validate is None:
            raise _Missing("input missing: a well-formed swap has no validate event")
        found.append(p)
    return found


def _target_sum(inputs: _Inputs) -> bool:
    allocation = _allocation(inputs)
    return allocation.sums_to_whole and all(0 <= w <= BPS for w in allocation.weights_bps.values())


def _universe(inputs: _Inputs) -> bool:
    allowed = set(inputs.envelope.allowed_tokens)
    if not set(_allocation(inputs).weights_bps) <= allowed:
        return False
    for p in _proposals(inputs.events):
        if p.action is not None and not set(p.action.tokens) <= allowed:
            return False
    for event in _swaps(inputs.events):
        quote = event.get("quote")
        if not isinstance(quote, Mapping) or not {quote.get("sell"), quote.get("buy")} <= allowed:
            return False
    return True


def _price_data(inputs: _Inputs) -> bool:
    evidence, allocation = _evidence(inputs), _allocation(inputs)
    proposals = [e for e in inputs.events if e["type"] == "propose"]
    if len(evidence.decisions) != len(proposals):
        return False
    by_iteration = {d.iteration: d for d in evidence.decisions}
    for d in evidence.decisions:
        if set(d.prices) != set(allocation.tokens) or any(p <= 0 for p in d.prices.values()):
            return False
    for p in _proposals(inputs.events):
        if p.validate is None:
            continue
        context = _context(p.validate)
        snap = by_iteration.get(context.iteration)
        if snap is None or snap.clock != context.clock:
            return False
        for symbol in allocation.tokens:
            if context.prices.get(symbol) != snap.prices.get(symbol):
                return False
            if context.balances.get(symbol) != snap.balances.get(symbol):
                return False
        # A quote or swap executes in the second it was decided: same prices.
        executed = p.execute.get("prices") if p.execute is not None else None
        if isinstance(executed, Mapping) and any(
            executed.get(symbol) != snap.prices.get(symbol) for symbol in allocation.tokens
        ):
            return False
    return True


def _threshold(inputs: _Inputs) -> bool:
    allocation = _allocation(inputs)
    for p in _swap_proposals(inputs):
        assert p.action is not None
        assert p.validate is not None
        broken = rebalance_violations(p.action, allocation, _context(p.validate))
        if RebalanceRule.REBALANCE_THRESHOLD in broken:
            return False
    return True


def _execute_numbers(event: Mapping[str, Any]) -> tuple[str, str, int, int, int, int]:
    try:
        quote = event["quote"]
        return (
            str(quote["sell"]),
            str(quote["buy"]),
            int(event["sold"]),
            int(event["filled"]),
            int(quote["out"]),
            int(event["max_slippage_bps"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _Missing("input missing: an executed swap lacks its amounts") from exc


def _decimals(evidence: RebalanceEvidence, symbol: str) -> int:
    if symbol not in evidence.decimals:
        raise _Missing("input missing: the rebalance evidence lacks a token's decimals")
    return evidence.decimals[symbol]


def _snapshot_prices(evidence: RebalanceEvidence, p: _Proposal) -> Mapping[str, int]:
    assert p.validate is not None
    iteration = _context(p.validate).iteration
    for d in evidence.decisions:
        if d.iteration == iteration:
            return d.prices
    raise _Missing("input missing: the rebalance evidence has no prices for a decision")


def _trade_value(inputs: _Inputs) -> bool:
    evidence, env = _evidence(inputs), inputs.envelope
    for p in _swap_proposals(inputs):
        assert p.action is not None
        assert p.validate is not None
        if Rule.TRADE_VALUE in rule_violations(p.action, env, _context(p.validate)):
            return False
        if p.execute is None or p.execute.get("action") != "swap":
            continue
        sell, _buy, sold, _filled, _out, _asked = _execute_numbers(p.execute)
        prices = _snapshot_prices(evidence, p)
        if sell not in prices:
            raise _Missing("input missing: the rebalance evidence has no price for a sold token")
        if sold * prices[sell] // 10 ** _decimals(evidence, sell) > env.max_trade_usd * NANO:
            return False
    return True


def _after_values(
    event: Mapping[str, Any], evidence: RebalanceEvidence, tokens: Sequence[str]
) -> dict[str, int]:
    try:
        balances = {str(k): int(v) for k, v in event["balances_after"].items()}
        prices = {str(k): int(v) for k, v in event["prices"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _Missing("input missing: an executed swap lacks its balances or prices") from exc
    return values_nano(balances, prices, evidence.decimals, tokens)


def _weight(values: Mapping[str, int], symbol: str) -> int:
    total = sum(values.values())
    return values.get(symbol, 0) * BPS // total if total > 0 else 0


def _position_weight(inputs: _Inputs) -> bool:
    evidence, env, allocation = _evidence(inputs), inputs.envelope, _allocation(inputs)
    for p in _swap_proposals(inputs):
        assert p.action is not None
        assert p.validate is not None
        context = _context(p.validate)
        sell, buy, whole = p.action.token_in or "", p.action.token_out or "", p.action.amount or 0
        if sell in context.decimals and buy in context.prices:
            portfolio = sum(value_nano(s, u, context) for s, u in context.balances.items())
            sold = value_nano(sell, whole * 10 ** context.decimals[sell], context)
            after_buy = value_nano(buy, context.balances.get(buy, 0), context) + sold
            if after_buy * BPS > env.max_position_weight_bps * max(portfolio, 1):
                return False
        if p.execute is not None and p.execute.get("action") == "swap":
            values = _after_values(p.execute, evidence, allocation.tokens)
            if _weight(values, buy) > env.max_position_weight_bps:
                return False
    return True


def _slippage(inputs: _Inputs) -> bool:
    env = inputs.envelope
    for p in _swap_proposals(inputs):
        assert p.action is not None
        if (p.action.max_slippage_bps or 0) > env.max_slippage_bps:
            return False
    for event in _swaps(inputs.events):
        _sell, buy, _sold, filled, quoted, asked = _execute_numbers(event)
        if asked > env.max_slippage_bps or filled * 10_000 < quoted * (10_000 - asked):
            return False
        try:
            received = int(event["balances_after"][buy]) - int(event["balances_before"][buy])
        except (KeyError, TypeError, ValueError) as exc:
            raise _Missing("input missing: an executed swap lacks its balances") from exc
        if event.get("ok") is True and received != filled:
            return False
    return True


def _test_chain(inputs: _Inputs) -> bool:
    env = inputs.envelope
    guard = [e for e in inputs.events if e["type"] == "guard"]
    if not guard:
        raise _Missing("input missing: the run has no mainnet guard event")
    if inputs.evidence is not None and inputs.evidence.chain != env.chain:
        return False
    return env.is_test_chain and guard[0].get("chain") == env.chain


def _post_trade_drift(inputs: _Inputs) -> bool:
    evidence, allocation = _evidence(inputs), _allocation(inputs)
    targets, band = allocation.weights_bps, allocation.drift_bps
    for p in _swap_proposals(inputs):
        assert p.action is not None
        assert p.validate is not None
        broken = rebalance_violations(p.action, allocation, _context(p.validate))
        if RebalanceRule.ALLOCATION_DRIFT in broken:
            return False
        if p.execute is None or p.execute.get("action") != "swap":
            continue
        sell, buy, *_rest = _execute_numbers(p.execute)
        values = _after_values(p.execute, evidence, allocation.tokens)
        if sell not in targets or buy not in targets:
            return False
        if (
            _weight(values, buy) > targets[buy] + band
            or _weight(values, sell) < targets[sell] - band
        ):
            return False
    return True


def _evidence_present(inputs: _Inputs) -> bool:
    evidence, allocation = _evidence(inputs), _allocation(inputs)
    if not evidence.hash_ok:
        return False
    if evidence.allocation != allocation or evidence.chain != inputs.envelope.chain:
        return False
    if set(evidence.decimals) != set(allocation.tokens):
        return False
    if len(evidence.decisions) != sum(1 for e in inputs.events if e["type"] == "propose"):
        return False
    for event in inputs.events:
        if event["type"] == "finalize" and event.get("rebalance_evidence") != evidence.content_hash:
            return False
    return True


_Check = Callable[[_Inputs], bool]
_CHECKS: tuple[tuple[str, _Check, str, str], ...] = (
    (
        "target_allocation_sum_check",
        _target_sum,
        "the deployed target weights add up to exactly 10 000 bps",
        "the deployed target weights do not add up to 10 000 bps",
    ),
    (
        "allowed_token_universe_check",
        _universe,
        "the portfolio and every action named only tokens the envelope allows",
        "the portfolio or an action named a token outside the envelope's universe",
    ),
    (
        "price_data_present_check",
        _price_data,
        "the evidence has a price for every portfolio token at every decision, as replayed",
        "a decision lacks a portfolio token's price or its prices differ from the replay",
    ),
    (
        "rebalance_threshold_check",
        _threshold,
        "every swap sold an overweight token for an underweight one while out of balance",
        "a swap was proposed inside the drift threshold or in the wrong direction",
    ),
    (
        "max_trade_value_check",
        _trade_value,
        "no swap sold more value than the envelope's trade limit",
        "a swap would sell or sold more value than the envelope's trade limit",
    ),
    (
        "max_position_weight_check",
        _position_weight,
        "no swap took the bought token over the envelope's position weight",
        "a swap would take or took the bought token over the envelope's position weight",
    ),
    (
        "max_slippage_check",
        _slippage,
        "every swap asked for and got at most the envelope's slippage",
        "a swap asked for or got more slippage than the envelope allows",
    ),
    (
        "dry_run_or_devnet_check",
        _test_chain,
        "the run used only a local or test chain",
        "the run's chain is not a local or test network",
    ),
    (
        "post_trade_allocation_drift_check",
        _post_trade_drift,
        "no swap pushed a token's weight past its target band",
        "a swap would push or pushed a token's weight past its target band",
    ),
    (
        "rebalance_evidence_present_check",
        _evidence_present,
        "the rebalance evidence is present, hashes to its content hash and covers every decision",
        "the rebalance evidence's hash, allocation, chain or decisions do not match the run",
    ),
)

REBALANCE_POLICY_EXPLANATIONS: Mapping[str, tuple[str, str]] = {
    check_id: (good, bad) for check_id, _check, good, bad in _CHECKS
}
"""Check id -> (fixed explanation on pass, on fail); a missing input says so instead."""


EvidenceInput = RebalanceEvidence | Mapping[str, Any] | bytes | str | None
"""The rebalance evidence as the model, parsed JSON data or JSON text (bytes or str)."""


def _read_evidence(evidence: EvidenceInput) -> tuple[RebalanceEvidence | None, str]:
    if evidence is None:
        return None, _NO_EVIDENCE
    if isinstance(evidence, RebalanceEvidence):
        return evidence, ""
    try:
        if isinstance(evidence, bytes | str):
            data = parse_json(evidence, limit=MAX_EVIDENCE_BYTES, what="rebalance evidence")
        elif plain_json_problem(evidence, MAX_EVIDENCE_BYTES) is not None:
            # Parsed data is held to what its text would be: any size, NaN or a
            # nesting too deep to write out would otherwise be read.
            return None, _BAD_EVIDENCE
        else:
            data = evidence
        return RebalanceEvidence.model_validate(data), ""
    except (ValidationError, FormatError, RecursionError):
        return None, _BAD_EVIDENCE


def _read_allocation(allocation: Allocation | Mapping[str, Any] | None) -> Allocation | None:
    """The deployed allocation from the model or its JSON data (None: missing or unreadable:
    not plain JSON of at most :data:`MAX_ALLOCATION_BYTES`, or not an allocation)."""
    if allocation is None or isinstance(allocation, Allocation):
        return allocation
    if plain_json_problem(allocation, MAX_ALLOCATION_BYTES) is not None:
        return None
    try:
        return Allocation.model_validate(allocation)
    except (ValidationError, RecursionError):
        return None


def rebalance_policy(
    events: Sequence[str] | None,
    envelope: PolicyEnvelope,
    rebalance_evidence: EvidenceInput = None,
    allocation: Allocation | Mapping[str, Any] | None = None,
) -> CheckGroupResult:
    """The ``rebalance_policy`` group over replayed events and the replayed rebalance evidence.

    ``envelope`` and ``allocation`` (target weights and drift threshold) are
    the deployment's; ``rebalance_evidence`` is the document replay produced
    (the model, its JSON data, or its JSON text, of at most
    :data:`MAX_EVIDENCE_BYTES` as JSON). JSON data is held to what its text
    would be: plain JSON (no NaN, no other objects) of at most the limit
    (:data:`MAX_ALLOCATION_BYTES` for an allocation). A missing or unreadable
    input fails the checks that read it; nothing raises.
    """
    decoded, problem = _read_events(events)
    deployed = _read_allocation(allocation)
    document, evidence_problem = _read_evidence(rebalance_evidence)
    if decoded is None:
        return _decide(REBALANCE_POLICY, _CHECKS, problem, lambda check: False)
    inputs = _Inputs(decoded, envelope, deployed, document, evidence_problem)
    return _decide(REBALANCE_POLICY, _CHECKS, problem, lambda check: check(inputs))
