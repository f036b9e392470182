"""What one chat-completions reply cost: provider-reported first, else tokens x pricing.

Provider-reported cost fields, in the order they are tried:

- ``usage.cost`` as a number: OpenRouter (USD; with ``usage.is_byok`` the
  upstream provider bills ``usage.cost_details.upstream_inference_cost`` on top,
  and without that figure the provider's report is incomplete and not used);
- ``usage.cost.total_cost``: Perplexity (an object with a per-part breakdown);
- ``usage.total_cost`` as a number: gateways that flatten it;
- the ``x-litellm-response-cost`` response header: LiteLLM proxy.

Otherwise, with declared :class:`Pricing`, the cost is computed from
``usage.prompt_tokens``, ``usage.prompt_tokens_details.cached_tokens`` and
``usage.completion_tokens``. Otherwise the cost is unmeasured (``None``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.errors import CostError, DriverError

__all__ = [
    "LITELLM_COST_HEADER",
    "MAX_TOKEN_COUNT",
    "CostSource",
    "Pricing",
    "TokenUsage",
    "reply_cost",
]

LITELLM_COST_HEADER = "x-litellm-response-cost"
_PER_MILLION = 1_000_000
MAX_TOKEN_COUNT = 2**53
"""The largest token count believed (every count up to it is exact as a float)."""
_SHOWN_CHARS = 40
"""How much of a reported value an error message quotes."""

CostSource = Literal["provider", "pricing", "unmeasured"]
_Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Pricing(BaseModel):
    """Declared prices in USD per million tokens; cached input defaults to the input price."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_usd_per_mtok: _Price
    output_usd_per_mtok: _Price
    cached_input_usd_per_mtok: _Price | None = None

    def cost(self, usage: TokenUsage) -> float:
        """USD for ``usage`` at these prices.

        >>> prices = Pricing(
        ...     input_usd_per_mtok=1, cached_input_usd_per_mtok=0.5, output_usd_per_mtok=2
        ... )
        >>> prices.cost(TokenUsage(prompt=1000, cached=400, completion=500))
        0.0018
        """
        cached_price = self.cached_input_usd_per_mtok
        if cached_price is None:
            cached_price = self.input_usd_per_mtok
        # Sum in token-dollars first and divide once, so round numbers stay exact.
        total = (
            (usage.prompt - usage.cached) * self.input_usd_per_mtok
            + usage.cached * cached_price
            + usage.completion * self.output_usd_per_mtok
        )
        return total / _PER_MILLION


class TokenUsage(BaseModel):
    """Token counts of one reply; ``cached`` is the part of ``prompt`` read from a cache."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: int = Field(ge=0)
    cached: int = Field(0, ge=0)
    completion: int = Field(ge=0)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _shown(value: object) -> str:
    """A reported value as an error message quotes it: a number or a string cut short,
    anything else named by its type (the server chose its size)."""
    text = repr(value) if isinstance(value, str | int | float) else type(value).__name__
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}..."


def _money(value: object, where: str) -> float | None:
    """A reported amount: None when absent, CostError when present but not a sane number."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise CostError(
                f"the provider reported {where} = {_shown(value)}, not a number"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CostError(f"the provider reported {where} = {_shown(value)}, not a number")
    try:
        amount = float(value)
    except OverflowError:  # an integer past any float: JSON allows any number of digits
        amount = math.inf if value > 0 else -math.inf
    if not math.isfinite(amount) or amount < 0:
        raise CostError(f"the provider reported {where} = {amount!r}; a cost must be >= 0")
    return amount


def token_usage(usage: Mapping[str, Any]) -> TokenUsage | None:
    """Token counts from an OpenAI-style ``usage`` object, or None when they are missing."""
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    if prompt is None or completion is None:
        return None
    if max(prompt, completion) > MAX_TOKEN_COUNT:
        raise DriverError(f"the provider reported over {MAX_TOKEN_COUNT} tokens for one reply")
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    cached = cached or 0
    if cached > prompt:
        raise DriverError(
            f"the provider reported {_shown(cached)} cached of {prompt} prompt tokens"
        )
    return TokenUsage(prompt=prompt, cached=cached, completion=completion)


def provider_cost(usage: Mapping[str, Any], headers: Mapping[str, str]) -> float | None:
    """The cost the provider itself reported, or None when it reported none."""
    cost = usage.get("cost")
    if isinstance(cost, Mapping):
        return _money(cost.get("total_cost"), "usage.cost.total_cost")
    amount = _money(cost, "usage.cost")
    if amount is not None:
        if usage.get("is_byok") is True:
            details = usage.get("cost_details")
            upstream = _money(
                details.get("upstream_inference_cost") if isinstance(details, Mapping) else None,
                "usage.cost_details.upstream_inference_cost",
            )
            if upstream is None:
                # Only OpenRouter's fee is known, not the upstream provider's bill: the
                # figure is not the cost, so it is priced from tokens or left unmeasured.
                return None
            amount += upstream
        return amount
    amount = _money(usage.get("total_cost"), "usage.total_cost")
    if amount is not None:
        return amount
    return _money(headers.get(LITELLM_COST_HEADER), f"the {LITELLM_COST_HEADER} header")


def reply_cost(
    body: Mapping[str, Any], headers: Mapping[str, str], pricing: Pricing | None
) -> tuple[float | None, CostSource, TokenUsage | None]:
    """The cost of one reply, where it came from, and the token counts when reported."""
    raw_usage = body.get("usage")
    usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
    tokens = token_usage(usage)
    reported = provider_cost(usage, headers)
    if reported is not None:
        return reported, "provider", tokens
    if pricing is not None and tokens is not None:
        priced = pricing.cost(tokens)
        if not math.isfinite(priced):
            raise CostError(
                f"{tokens.prompt + tokens.completion} tokens at the declared prices "
                "cost more than any finite amount"
            )
        return priced, "pricing", tokens
    return None, "unmeasured", tokens
