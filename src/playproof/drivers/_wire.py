"""The JSON shapes a command-line agent reads and writes (one-shot and session).

A request carries the observation (text, plus images only when vision is on),
the recent history (text only) and the decision context. A reply carries one
input and, optionally, its measured cost (``null`` = the agent cannot measure
it) and the turn it answers (sessions use it to recognise late answers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from playproof.core.agent import DecisionContext, HistoryEntry
from playproof.core.observation import Image, Observation
from playproof.errors import CostError, DriverError

__all__ = [
    "REQUEST_SCHEMA",
    "AgentReply",
    "AgentRequest",
    "WireHistoryEntry",
    "WireObservation",
    "build_request",
    "check_fixed_cost",
    "parse_reply",
    "reply_cost",
]

REQUEST_SCHEMA: Final = "playproof/agent-request/v1"
_REQUEST_JSON: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class WireObservation(_Wire):
    """The observation as an agent receives it; ``images`` is empty unless vision is on."""

    text: str
    images: tuple[Image, ...] = ()


class WireHistoryEntry(_Wire):
    """One past turn, text only."""

    turn: int
    observation: str
    input: str


class AgentRequest(_Wire):
    """One decision request, written to the agent's stdin (one JSON document or one line)."""

    schema_: Literal["playproof/agent-request/v1"] = Field(REQUEST_SCHEMA, alias="schema")
    turn: int
    max_turns: int
    seed: int
    spent_usd: float
    remaining_usd: float | None
    vocabulary: tuple[str, ...]
    guidance: str | None
    observation: WireObservation
    history: tuple[WireHistoryEntry, ...]


class AgentReply(BaseModel):
    """One reply: the input, its cost in USD (``null`` = unmeasured) and an optional turn echo."""

    # Agents may add their own fields (a reason, a log line); only these are read.
    model_config = ConfigDict(frozen=True, extra="ignore")

    input: str = Field(strict=True)
    cost_usd: float | None = Field(default=None, strict=True)
    turn: int | None = Field(default=None, strict=True)


def build_request(
    observation: Observation,
    history: Sequence[HistoryEntry],
    context: DecisionContext,
    *,
    vision: bool,
    history_limit: int,
) -> bytes:
    """Serialize one request as compact UTF-8 JSON (no newline inside, so it is one line)."""
    recent = history[-history_limit:] if history_limit > 0 else ()
    # Every field comes from already-validated core types, so the request is serialized
    # straight from a dict (a session decision is a few hundred microseconds; validating
    # the same values again would be a sizeable share). Tests check it against AgentRequest.
    request = {
        "schema": REQUEST_SCHEMA,
        "turn": context.turn,
        "max_turns": context.max_turns,
        "seed": context.seed,
        "spent_usd": context.spent_usd,
        "remaining_usd": context.remaining_usd,
        "vocabulary": context.vocabulary,
        "guidance": context.guidance,
        "observation": {"text": observation.text, "images": observation.images if vision else ()},
        "history": [
            {"turn": h.turn, "observation": h.observation, "input": h.input} for h in recent
        ],
    }
    return _REQUEST_JSON.dump_json(request)


def parse_reply(raw: bytes | str, *, source: str) -> AgentReply:
    """Parse one JSON reply or raise :class:`DriverError` naming ``source``."""
    try:
        return AgentReply.model_validate_json(raw)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "reply"
        raise DriverError(
            f"{source} replied with something that is not "
            f'{{"input": str, "cost_usd": number|null}}: {where}: {problem["msg"]}'
        ) from exc


def check_fixed_cost(fixed_cost_usd: float | None) -> None:
    """Refuse a declared per-decision cost that is negative or not finite (at construction)."""
    if fixed_cost_usd is not None and (not math.isfinite(fixed_cost_usd) or fixed_cost_usd < 0):
        raise DriverError(f"fixed cost must be finite and >= 0, got {fixed_cost_usd!r}")


def reply_cost(reply: AgentReply, fixed_cost_usd: float | None, *, source: str) -> float | None:
    """The cost a reply reports; a missing field falls back to the declared fixed cost."""
    if "cost_usd" not in reply.model_fields_set:
        return fixed_cost_usd
    cost = reply.cost_usd
    if cost is not None and (not math.isfinite(cost) or cost < 0):
        raise CostError(f"{source} reported the cost {cost!r}; a cost must be finite and >= 0")
    return cost
