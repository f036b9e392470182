"""Pre-execution validation: every rule of the envelope, as pure functions.

:func:`validate` decides whether a parsed action may be executed, from the
envelope and the :class:`Context` the world reports before execution (world
clock, iteration number, prices, wallet balances). Deny by default: the kind
must be allowed, every token named must be allowed, and a swap must keep
within slippage, trade value and position limits. Each rule has a stable id;
the check groups run the same rules over the recorded context, so a verdict is
recomputed, never trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from playproof.policy.actions import ProposedAction
from playproof.policy.envelope import PolicyEnvelope

__all__ = ["ACTION_SECONDS", "NANO", "Context", "Rule", "rule_violations", "validate", "value_nano"]

NANO = 1_000_000_000
"""Prices are nano-USD per whole token; envelope USD limits are whole dollars."""
ACTION_SECONDS = {"quote": 2, "swap": 5, "wait": 20, "finish": 0}
"""World seconds each kind of action takes (an invalid line takes one)."""


class Rule(StrEnum):
    """The envelope rules, in the order they are applied."""

    ITERATIONS = "iterations"
    RUNTIME = "runtime"
    ACTION_KIND = "action_kind"
    TOKEN_UNIVERSE = "token_universe"
    SLIPPAGE = "slippage"
    TRADE_VALUE = "trade_value"
    POSITION_SIZE = "position_size"


@dataclass(frozen=True, slots=True)
class Context:
    """What the world knew before an action: clock, iteration, prices, balances, decimals."""

    iteration: int
    clock: int
    prices: Mapping[str, int]
    balances: Mapping[str, int]
    decimals: Mapping[str, int]


def value_nano(symbol: str, base_units: int, context: Context) -> int:
    """The value of ``base_units`` of ``symbol`` in nano-USD (0 for an unknown token)."""
    if symbol not in context.prices or symbol not in context.decimals:
        return 0
    return base_units * context.prices[symbol] // int(10 ** context.decimals[symbol])


def _position_ok(action: ProposedAction, envelope: PolicyEnvelope, context: Context) -> bool:
    token_in, token_out, amount = action.token_in, action.token_out, action.amount
    if token_in is None or token_out is None or amount is None:
        return True
    if token_out not in context.prices or token_in not in context.decimals:
        return False
    sold = value_nano(token_in, amount * 10 ** context.decimals[token_in], context)
    held = value_nano(token_out, context.balances.get(token_out, 0), context)
    after = held + sold
    if after > envelope.max_position_usd * NANO:
        return False
    portfolio = sum(
        value_nano(symbol, units, context)
        for symbol, units in context.balances.items()
        if symbol in context.decimals
    )
    return after * 10_000 <= envelope.max_position_weight_bps * max(portfolio, 1)


def rule_violations(
    action: ProposedAction, envelope: PolicyEnvelope, context: Context
) -> tuple[Rule, ...]:
    """Every rule ``action`` breaks (empty when it may be executed)."""
    broken: list[Rule] = []
    if context.iteration > envelope.max_iterations:
        broken.append(Rule.ITERATIONS)
    if context.clock + ACTION_SECONDS.get(action.kind, 1) > envelope.max_runtime_seconds:
        broken.append(Rule.RUNTIME)
    if action.kind not in envelope.allowed_actions:
        broken.append(Rule.ACTION_KIND)
    if any(t not in envelope.allowed_tokens for t in action.tokens) or (
        action.tokens and action.token_in == action.token_out
    ):
        broken.append(Rule.TOKEN_UNIVERSE)
    if action.kind == "swap":
        if (action.max_slippage_bps or 0) > envelope.max_slippage_bps:
            broken.append(Rule.SLIPPAGE)
        token_in, amount = action.token_in or "", action.amount or 0
        sold = value_nano(token_in, amount * 10 ** context.decimals.get(token_in, 0), context)
        if sold > envelope.max_trade_usd * NANO or token_in not in context.prices:
            broken.append(Rule.TRADE_VALUE)
        if not _position_ok(action, envelope, context):
            broken.append(Rule.POSITION_SIZE)
    return tuple(broken)


def validate(action: ProposedAction, envelope: PolicyEnvelope, context: Context) -> Rule | None:
    """The first rule ``action`` breaks, or None when it may be executed."""
    broken = rule_violations(action, envelope, context)
    return broken[0] if broken else None
