"""The decision chain: a hash chain over every decision of a run.

The genesis hash binds the target (game id, build digest, contract hash) and
the seed; each link is SHA-256 over the previous hash and the canonical
decision. The chain detects accidental edits; the signature stops deliberate ones.

>>> head = genesis_hash("toy", "0" * 64, "1" * 64, seed=7)
>>> d = Decision(turn=1, input="up", cost_usd=0.0, latency_ms=1.5)
>>> len(link_hash(head, d))
64
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from playproof.core.canonical import canonical_json, digest

__all__ = ["MAX_INPUT_BYTES", "Decision", "chain_head", "genesis_hash", "link_hash"]

MAX_INPUT_BYTES = 64 * 1024
"""The largest input (UTF-8 bytes) one decision may carry."""

GENESIS_SCHEMA = "playproof/chain/v1"


class Decision(BaseModel):
    """One decision: the turn (1-based), the input applied, its measured cost and latency.

    ``cost_usd`` is ``None`` when the driver could not measure the cost; a cost
    is never invented.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: Annotated[int, Field(ge=1)]
    input: Annotated[str, Field(min_length=1)]
    cost_usd: Annotated[float, Field(ge=0)] | None
    latency_ms: Annotated[float, Field(ge=0)]

    @field_validator("input")
    @classmethod
    def _bounded_input(cls, value: str) -> str:
        if len(value.encode("utf-8")) > MAX_INPUT_BYTES:
            raise ValueError(f"input is over {MAX_INPUT_BYTES} bytes")
        return value

    @field_validator("cost_usd", "latency_ms")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be finite")
        return value

    def canonical(self) -> bytes:
        """The RFC 8785 form the chain hashes."""
        return canonical_json(
            {
                "turn": self.turn,
                "input": self.input,
                "cost_usd": self.cost_usd,
                "latency_ms": self.latency_ms,
            }
        )


def genesis_hash(game_id: str, build_digest: str, contract_hash: str, *, seed: int) -> str:
    """The chain's starting hash, bound to the target and the seed."""
    return digest(
        {
            "schema": GENESIS_SCHEMA,
            "game": game_id,
            "build": build_digest,
            "contract": contract_hash,
            "seed": seed,
        }
    )


def link_hash(previous: str, decision: Decision) -> str:
    """SHA-256 over the previous hash (hex, ASCII) and the canonical decision."""
    return hashlib.sha256(previous.encode("ascii") + b"\n" + decision.canonical()).hexdigest()


def chain_head(genesis: str, decisions: Iterable[Decision]) -> str:
    """Fold :func:`link_hash` over ``decisions`` from ``genesis``."""
    head = genesis
    for decision in decisions:
        head = link_hash(head, decision)
    return head
