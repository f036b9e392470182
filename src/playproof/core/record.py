"""The run record: everything needed to re-check one episode.

A record pins the target (game id, build digest, contract hash, platform and
verification mode), names the actor, and lists the seed, the limits, every
decision, the chain head, the claimed milestones, the accounting, the stop
reason and the recorder's provenance. It is published inside a signed DSSE
envelope (see :mod:`playproof.sign`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.chain import Decision
from playproof.core.game import MAX_SEED, VerificationMode

__all__ = [
    "RECORD_SCHEMA",
    "Accounting",
    "Actor",
    "ClaimedMilestone",
    "Limits",
    "Provenance",
    "RunRecord",
    "StopReason",
    "TargetPin",
]

RECORD_SCHEMA = "playproof/run/v1"

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ShortText = Annotated[str, Field(min_length=1, max_length=256)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StopReason(StrEnum):
    """Why an episode ended."""

    GAME_OVER = "game-over"
    TURN_LIMIT = "turn-limit"
    BUDGET = "budget"
    SEGMENT_LIMIT = "segment-limit"
    STOPPED = "stopped"
    """A hook or the caller asked the run to stop."""


class TargetPin(_Frozen):
    """Exactly what was played: target name, game id, build digest, contract hash, platform, mode.

    ``name`` is the registry name (``native/2048``) when the game came from the
    registry, else None (an ad hoc game the verifier must be handed).
    """

    name: ShortText | None = None
    game_id: ShortText
    build_digest: Sha256Hex
    contract_hash: Sha256Hex
    platform: ShortText
    verification_mode: VerificationMode


class Actor(_Frozen):
    """Who played: the driver kind (``scripted``, ``baseline``, ``openai`` ...) and an id."""

    kind: ShortText
    id: Annotated[str, Field(min_length=1, max_length=512)]


class Limits(_Frozen):
    """The declared limits: budget in USD (None = no budget), max turns, stop at game over."""

    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None
    max_turns: Annotated[int, Field(ge=0, le=10_000_000)]
    stop_at_game_over: bool


class ClaimedMilestone(_Frozen):
    """A milestone the recorder saw pass, and the turn (snapshot index) it passed at."""

    id: ShortText
    turn: Annotated[int, Field(ge=0)]


class Accounting(_Frozen):
    """Totals over the decisions: measured spend, unmeasured count, summed latency."""

    spent_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    unmeasured_decisions: Annotated[int, Field(ge=0)]
    total_latency_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Provenance(_Frozen):
    """What recorded the run: playproof and Python versions, library versions, driver notes."""

    playproof: ShortText
    python: ShortText
    libraries: dict[str, str] = Field(default_factory=dict)
    driver: dict[str, Any] = Field(default_factory=dict)


class RunRecord(_Frozen):
    """One episode, as recorded (see the module docstring)."""

    schema_: Literal["playproof/run/v1"] = Field("playproof/run/v1", alias="schema")
    target: TargetPin
    actor: Actor
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    limits: Limits
    decisions: tuple[Decision, ...]
    chain_head: Sha256Hex
    claimed: tuple[ClaimedMilestone, ...]
    milestones_total: Annotated[int, Field(ge=1)]
    accounting: Accounting
    stop_reason: StopReason
    game_over: bool
    provenance: Provenance
    started_at: ShortText
    finished_at: ShortText

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def __repr__(self) -> str:
        # Short on purpose: a record can hold millions of decisions, and asyncio
        # formats a finished task's result when asyncio.run() shuts down.
        name = self.target.name or self.target.game_id
        return (
            f"RunRecord(target={name!r}, actor={self.actor.kind}:{self.actor.id}, "
            f"seed={self.seed}, decisions={len(self.decisions)}, score={self.score!r}, "
            f"stop={self.stop_reason.value})"
        )

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input log, in order."""
        return tuple(d.input for d in self.decisions)

    def to_json(self) -> dict[str, Any]:
        """The JSON form that is signed and hashed."""
        return self.model_dump(mode="json", by_alias=True)

    @property
    def score(self) -> str:
        """Claimed milestones over the contract's total, e.g. ``"5 of 7"``."""
        return f"{len(self.claimed)} of {self.milestones_total}"
