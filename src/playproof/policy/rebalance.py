"""Rebalancing rules and the ``rebalance_evidence_v1`` document, as pure Python.

A rebalance deployment names **target weights** (basis points per portfolio
token, summing to 10 000) and a **drift threshold** (basis points): the
portfolio is balanced when every token's weight is within the threshold of
its target. Weights are integer basis points of the portfolio's value at the
prices of the moment (nano-USD per whole token, as in
:mod:`playproof.policy.validate`).

Three rules run before a swap executes, next to the envelope's:

- ``target_allocation``: the deployed target weights add up to 10 000 bps
  (a deployment with any other total cannot rebalance);
- ``rebalance_threshold``: a swap is allowed only while the portfolio is out
  of balance, and only from a token above its target into one below it;
- ``allocation_drift``: the swap, valued at the current prices, must not push
  the bought token above its target plus the threshold, nor the sold token
  below its target minus the threshold.

The :class:`RebalanceEvidence` document records, for every decision, the
prices and balances of every portfolio token; its ``content_hash`` is SHA-256
of the RFC 8785 canonical JSON of every other field.

>>> allocation = Allocation(weights_bps={"USDC": 6000, "JUP": 4000}, drift_bps=250)
>>> weights_bps({"USDC": 6_000_000, "JUP": 5_000_000},
...             {"USDC": 10**9, "JUP": 8 * 10**8}, {"USDC": 6, "JUP": 6}, allocation.tokens)
{'JUP': 4000, 'USDC': 6000}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, field_validator

from playproof.core.canonical import digest
from playproof.policy.actions import ProposedAction
from playproof.policy.validate import Context

__all__ = [
    "MAX_DECISIONS",
    "REBALANCE_EVIDENCE_SCHEMA",
    "REBALANCE_TEMPLATE",
    "Allocation",
    "DecisionSnapshot",
    "RebalanceEvidence",
    "RebalanceRule",
    "build_evidence",
    "drift_bps",
    "projected_values",
    "rebalance_violations",
    "values_nano",
    "weights_bps",
]

REBALANCE_TEMPLATE: Final = "rebalance_executor_v1"
REBALANCE_EVIDENCE_SCHEMA = "playproof/rebalance-evidence/v1"
MAX_DECISIONS = 10_000
"""The most decisions one evidence document may hold (an envelope allows at most 200)."""
BPS = 10_000

TokenSymbol = Annotated[StrictStr, Field(pattern=r"^[A-Z][A-Z0-9]{1,9}$")]
JSON_SAFE = 2**53 - 1
"""The largest integer canonical JSON (RFC 8785) carries exactly; balances, prices and seeds fit."""
Units = Annotated[StrictInt, Field(ge=0, le=JSON_SAFE)]
Price = Annotated[StrictInt, Field(ge=0, le=JSON_SAFE)]


class RebalanceRule(StrEnum):
    """The rebalancing rules checked before a swap executes (after the envelope's)."""

    TARGET_ALLOCATION = "target_allocation"
    REBALANCE_THRESHOLD = "rebalance_threshold"
    ALLOCATION_DRIFT = "allocation_drift"


class Allocation(BaseModel):
    """A deployment's target weights (bps per token) and drift threshold (bps)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weights_bps: Annotated[
        dict[TokenSymbol, Annotated[StrictInt, Field(ge=0, le=BPS)]],
        Field(min_length=1, max_length=64),
    ]
    drift_bps: Annotated[StrictInt, Field(ge=0, le=BPS)]

    @property
    def tokens(self) -> tuple[str, ...]:
        """The portfolio tokens, sorted."""
        return tuple(sorted(self.weights_bps))

    @property
    def sums_to_whole(self) -> bool:
        """True when the target weights add up to exactly 10 000 bps."""
        return sum(self.weights_bps.values()) == BPS


def values_nano(
    balances: Mapping[str, int],
    prices: Mapping[str, int],
    decimals: Mapping[str, int],
    tokens: Sequence[str],
) -> dict[str, int]:
    """The value in nano-USD of each portfolio token held (0 when a price or decimals is absent)."""
    out: dict[str, int] = {}
    for symbol in tokens:
        if symbol in prices and symbol in decimals:
            out[symbol] = balances.get(symbol, 0) * prices[symbol] // 10 ** decimals[symbol]
        else:
            out[symbol] = 0
    return out


def _weights(values: Mapping[str, int]) -> dict[str, int]:
    total = sum(values.values())
    return {s: (v * BPS // total if total > 0 else 0) for s, v in values.items()}


def weights_bps(
    balances: Mapping[str, int],
    prices: Mapping[str, int],
    decimals: Mapping[str, int],
    tokens: Sequence[str],
) -> dict[str, int]:
    """Each portfolio token's share of the portfolio's value, in whole basis points."""
    return _weights(values_nano(balances, prices, decimals, tokens))


def drift_bps(weights: Mapping[str, int], allocation: Allocation) -> int:
    """The largest distance, in bps, between a token's weight and its target."""
    return max(abs(weights.get(s, 0) - w) for s, w in allocation.weights_bps.items())


def projected_values(
    action: ProposedAction, context: Context, tokens: Sequence[str]
) -> dict[str, int] | None:
    """Portfolio values after ``action`` (a swap) at the context's prices, fees ignored.

    None when the swap names a token without a price or decimals.
    """
    sell, buy, whole = action.token_in, action.token_out, action.amount
    if sell is None or buy is None or whole is None:
        return None
    if sell not in context.prices or buy not in context.prices or sell not in context.decimals:
        return None
    values = values_nano(context.balances, context.prices, context.decimals, tokens)
    sold = whole * context.prices[sell]
    values[sell] = values.get(sell, 0) - sold
    values[buy] = values.get(buy, 0) + sold
    return values


def rebalance_violations(
    action: ProposedAction, allocation: Allocation, context: Context
) -> tuple[RebalanceRule, ...]:
    """Every rebalancing rule a swap breaks (empty for other kinds and for allowed swaps)."""
    if action.kind != "swap":
        return ()
    tokens = allocation.tokens
    sell, buy = action.token_in or "", action.token_out or ""
    broken: list[RebalanceRule] = []
    if not allocation.sums_to_whole:
        broken.append(RebalanceRule.TARGET_ALLOCATION)
    before = weights_bps(context.balances, context.prices, context.decimals, tokens)
    targets = allocation.weights_bps
    if (
        drift_bps(before, allocation) <= allocation.drift_bps
        or sell not in targets
        or buy not in targets
        or before.get(sell, 0) <= targets[sell]
        or before.get(buy, 0) >= targets[buy]
    ):
        broken.append(RebalanceRule.REBALANCE_THRESHOLD)
    projected = projected_values(action, context, tokens)
    if projected is None or sell not in targets or buy not in targets:
        broken.append(RebalanceRule.ALLOCATION_DRIFT)
    else:
        after = _weights({s: max(v, 0) for s, v in projected.items()})
        if (
            projected[sell] < 0
            or after[buy] > targets[buy] + allocation.drift_bps
            or after[sell] < targets[sell] - allocation.drift_bps
        ):
            broken.append(RebalanceRule.ALLOCATION_DRIFT)
    return tuple(broken)


class DecisionSnapshot(BaseModel):
    """One decision: the world clock, and the price and balance of every portfolio token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    iteration: Annotated[StrictInt, Field(ge=1)]
    clock: Annotated[StrictInt, Field(ge=0)]
    prices: dict[TokenSymbol, Price]
    balances: dict[TokenSymbol, Units]


class RebalanceEvidence(BaseModel):
    """``playproof/rebalance-evidence/v1``: a rebalance run's prices at every decision."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: Literal["playproof/rebalance-evidence/v1"] = Field(
        default="playproof/rebalance-evidence/v1", alias="schema"
    )
    template: Literal["rebalance_executor_v1"] = REBALANCE_TEMPLATE
    chain: Annotated[StrictStr, Field(pattern=r"^[a-z][a-z0-9-]{0,31}$")]
    seed: Annotated[StrictInt, Field(ge=0, le=JSON_SAFE)]
    allocation: Allocation
    decimals: dict[TokenSymbol, Annotated[StrictInt, Field(ge=0, le=255)]]
    decisions: Annotated[tuple[DecisionSnapshot, ...], Field(max_length=MAX_DECISIONS)]
    content_hash: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
    """SHA-256 of the canonical JSON of every other field."""

    @field_validator("decisions")
    @classmethod
    def _in_order(cls, value: tuple[DecisionSnapshot, ...]) -> tuple[DecisionSnapshot, ...]:
        if [d.iteration for d in value] != list(range(1, len(value) + 1)):
            raise ValueError("decisions are numbered 1, 2, ... with no gap")
        return value

    def body(self) -> dict[str, Any]:
        """Every field but the content hash, as JSON data."""
        data = self.model_dump(mode="json", by_alias=True)
        del data["content_hash"]
        return data

    @property
    def hash_ok(self) -> bool:
        """True when ``content_hash`` is the hash of the document's other fields."""
        return digest(self.body()) == self.content_hash


def build_evidence(
    *,
    chain: str,
    seed: int,
    allocation: Allocation,
    decimals: Mapping[str, int],
    decisions: Sequence[DecisionSnapshot],
) -> RebalanceEvidence:
    """A rebalance evidence document with its content hash filled in."""
    body = {
        "schema": REBALANCE_EVIDENCE_SCHEMA,
        "template": REBALANCE_TEMPLATE,
        "chain": chain,
        "seed": seed,
        "allocation": allocation.model_dump(mode="json"),
        "decimals": dict(decimals),
        "decisions": [d.model_dump(mode="json") for d in decisions],
    }
    return RebalanceEvidence.model_validate({**body, "content_hash": digest(body)})
