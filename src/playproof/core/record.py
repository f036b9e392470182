"""The run record: everything needed to re-check one episode.

A record pins the target (game id, build digest, contract hash, platform and
verification mode), names the actor, and lists the seed, the limits, every
decision, the chain head, the claimed milestones, the accounting, the stop
reason and the recorder's provenance. It is published inside a signed DSSE
envelope (see :mod:`playproof.sign`).

Fields added after the first records were written are optional and mean
"unknown" when absent; :meth:`RunRecord.to_json` leaves an unknown one out, so
an older record re-serializes to exactly the bytes that were signed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from playproof.core.canonical import parse_model
from playproof.core.chain import Decision
from playproof.core.game import MAX_SEED, VerificationMode
from playproof.core.score import Score

__all__ = [
    "MAX_RECORD_BYTES",
    "RECORD_SCHEMA",
    "Accounting",
    "Actor",
    "ClaimedMilestone",
    "Limits",
    "Provenance",
    "RunRecord",
    "RunSettings",
    "SourceCheckout",
    "StopReason",
    "TargetPin",
    "parse_run_record",
]

RECORD_SCHEMA = "playproof/run/v1"

MAX_RECORD_BYTES = 16 * 1024 * 1024
"""The largest bare record (JSON bytes) a reader accepts, as large as a signed envelope."""

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ShortText = Annotated[str, Field(min_length=1, max_length=256)]


SettingValue = str | int | float | bool | None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _unknown(value: object) -> bool:
    return value is None


def _later() -> Any:
    """A field added after the first records: None (unknown) by default, and then not written."""
    return Field(None, exclude_if=_unknown)


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
    registry, an ad-hoc spec (``gym:CartPole-v1``, ``gb:rom.gb``) when the game
    was built from the command line, else None (a game the verifier must be
    handed). ``calibrated`` says whether the contract was published through
    calibration: False for ad-hoc targets and contracts a user supplied, None
    when the record does not say.
    """

    name: ShortText | None = None
    game_id: ShortText
    build_digest: Sha256Hex
    contract_hash: Sha256Hex
    platform: ShortText
    verification_mode: VerificationMode
    calibrated: bool | None = _later()

    @property
    def label(self) -> str:
        """The name a listing shows: the target name (or game id), marked when uncalibrated."""
        name = self.name or self.game_id
        return f"{name} (uncalibrated)" if self.calibrated is False else name


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


class SourceCheckout(_Frozen):
    """The git commit playproof ran from, and whether the work tree had uncommitted changes."""

    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
    dirty: bool


class RunSettings(_Frozen):
    """How the run was configured beyond its limits; never holds a key or a header value.

    ``agent`` is the agent as it was named, with secrets removed (a command's
    arguments are not recorded, only its program). ``worker`` is True when the
    game ran in a child process. ``options`` holds the remaining driver options
    (prices, reply mode, an API base URL without credentials or query).
    """

    agent: Annotated[str, Field(max_length=512)] | None = None
    worker: bool | None = None
    vision: bool | None = None
    history: Annotated[int, Field(ge=0)] | None = None
    agent_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    options: dict[Annotated[str, Field(max_length=64)], SettingValue] = Field(
        default_factory=dict, max_length=32
    )


class Provenance(_Frozen):
    """What recorded the run and how: versions, ROM digests, source checkout, settings.

    ``libraries`` maps each library that defines the game (``gymnasium``,
    ``numpy`` ...) to its installed version; ``roms`` maps a ROM's name to the
    SHA-256 of its bytes; ``source`` is the git checkout playproof ran from
    (None when it was not a checkout or git could not say); ``settings`` is the
    run's configuration. ``roms``, ``source`` and ``settings`` are absent from
    records written before they existed.
    """

    playproof: ShortText
    python: ShortText
    libraries: dict[str, str] = Field(default_factory=dict)
    driver: dict[str, Any] = Field(default_factory=dict)
    roms: dict[ShortText, Sha256Hex] | None = _later()
    source: SourceCheckout | None = _later()
    settings: RunSettings | None = _later()


class RunRecord(_Frozen):
    """One episode, as recorded (see the module docstring).

    ``milestones_identity`` is how many of ``milestones_total`` are identity
    milestones (``save-hash``/``frame-hash`` checks, scored apart) and
    ``identity_claimed`` which claimed ids are identity milestones; both are
    None in records written before identity milestones were counted apart.
    """

    schema_: Literal["playproof/run/v1"] = Field("playproof/run/v1", alias="schema")
    target: TargetPin
    actor: Actor
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    limits: Limits
    decisions: tuple[Decision, ...]
    chain_head: Sha256Hex
    claimed: tuple[ClaimedMilestone, ...]
    milestones_total: Annotated[int, Field(ge=1)]
    milestones_identity: Annotated[int, Field(ge=0)] | None = _later()
    identity_claimed: tuple[ShortText, ...] | None = _later()
    accounting: Accounting
    stop_reason: StopReason
    game_over: bool
    provenance: Provenance
    started_at: ShortText
    finished_at: ShortText

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _identity_consistent(self) -> Self:
        count, claimed = self.milestones_identity, self.identity_claimed
        if (count is None) != (claimed is None):
            raise ValueError("milestones_identity and identity_claimed come together")
        if count is None or claimed is None:
            return self
        if count > self.milestones_total:
            raise ValueError(
                f"{count} identity milestones of {self.milestones_total} milestones in all"
            )
        if len(set(claimed)) != len(claimed):
            raise ValueError("identity_claimed lists a milestone twice")
        unknown = set(claimed) - {c.id for c in self.claimed}
        if unknown:
            raise ValueError(f"identity_claimed names unclaimed milestones {sorted(unknown)}")
        if len(claimed) > count:
            raise ValueError(f"{len(claimed)} identity milestones claimed of {count}")
        return self

    def __repr__(self) -> str:
        # Short on purpose: a record can hold millions of decisions, and asyncio
        # formats a finished task's result when asyncio.run() shuts down.
        name = self.target.label
        return (
            f"RunRecord(target={name!r}, actor={self.actor.kind}:{self.actor.id}, "
            f"seed={self.seed}, decisions={len(self.decisions)}, score={self.score.text!r}, "
            f"stop={self.stop_reason.value})"
        )

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input log, in order."""
        return tuple(d.input for d in self.decisions)

    def to_json(self) -> dict[str, Any]:
        """The JSON form that is signed and hashed (unknown later fields left out)."""
        return self.model_dump(mode="json", by_alias=True)

    @property
    def score(self) -> Score:
        """The claimed score: earned over earnable, identity milestones apart.

        Reads ``"5 of 7"``, or ``"3 of 4 earnable (5 of 6 verified, 2 of 2
        replay-identity)"`` when the contract has identity milestones. For a
        record that predates the identity count, every milestone counts as
        earnable. A verifier recomputes the score from the contract instead.
        """
        identity, claimed = self.milestones_identity, self.identity_claimed
        if identity is None or claimed is None:
            return Score(
                earned=len(self.claimed), earnable=self.milestones_total, identity_total=None
            )
        return Score(
            earned=len(self.claimed) - len(claimed),
            earnable=self.milestones_total - identity,
            identity_reached=len(claimed),
            identity_total=identity,
        )


def parse_run_record(data: Any) -> RunRecord:
    """Read a record strictly from JSON text (at most MAX_RECORD_BYTES) or parsed JSON.

    Strict as the published schema is: ``"seed": "0"``, ``"game_over": "yes"``
    or ``"turn": 1.0`` are refused, not coerced. Raises
    :class:`~playproof.errors.FormatError` and nothing else for any input.
    """
    if isinstance(data, RunRecord):
        return data
    return parse_model(RunRecord, data, limit=MAX_RECORD_BYTES, what="record")
