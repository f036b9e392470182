"""The run record: everything needed to re-check one episode.

A record pins the target (game id, build digest, contract hash, platform and
verification mode), names the actor, and lists the seed, the limits, every
decision, the chain head, the claimed milestones, the accounting, the stop
reason and the recorder's provenance. It is published inside a signed DSSE
envelope (see :mod:`playproof.sign`).

Two forms of the record exist. ``playproof/run/v2`` (what playproof writes)
stores the decisions as three columns (``inputs``, ``costs_usd``,
``latencies_ms``), a decision's turn being its position; ``playproof/run/v1``
stored one ``{turn, input, cost_usd, latency_ms}`` object per decision. Both
are read; each re-serializes in its own form, so a v1 record keeps the digest
it was signed with. In memory the decisions are a :class:`DecisionLog` either
way: the columns, with :class:`Decision` objects built only when asked for.

Fields added after the first records were written are optional and mean
"unknown" when absent; :meth:`RunRecord.to_json` leaves an unknown one out, so
an older record re-serializes to exactly the bytes that were signed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Annotated, Any, Final, Literal, Self, overload

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    field_serializer,
    model_validator,
)
from pydantic_core import CoreSchema, core_schema

from playproof.core.agent import MAX_DRIVER_REPORT_BYTES
from playproof.core.canonical import (
    parse_json,
    parse_model,
    paused_gc,
    plain_json_problem,
    validate_strict,
)
from playproof.core.chain import (
    MAX_INPUT_BYTES,
    Decision,
    DecisionInput,
    Measured,
    first_too_large,
)
from playproof.core.game import MAX_SEED, VerificationMode
from playproof.core.receipts import Receipts
from playproof.core.score import Score
from playproof.errors import FormatError

__all__ = [
    "MAX_RECORD_BYTES",
    "RECORD_SCHEMA",
    "RECORD_SCHEMA_V1",
    "Accounting",
    "Actor",
    "ClaimedMilestone",
    "DecisionLog",
    "RecorderPin",
    "Limits",
    "Provenance",
    "RunRecord",
    "RunSettings",
    "SourceCheckout",
    "StopReason",
    "TargetPin",
    "parse_run_record",
    "read_decision_columns",
    "read_parsed_record",
]

RECORD_SCHEMA: Final = "playproof/run/v2"
"""The schema new records are written in (decisions as columns)."""
RECORD_SCHEMA_V1: Final = "playproof/run/v1"
"""The first schema (one object per decision); still read, and re-written as it was."""

MAX_RECORD_BYTES = 16 * 1024 * 1024
"""The largest bare record (JSON bytes) a reader accepts, as large as a signed envelope."""

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ShortText = Annotated[str, Field(min_length=1, max_length=256)]


SettingValue = str | int | Annotated[float, Field(allow_inf_nan=False)] | bool | None


def _plain_driver_report(value: dict[str, Any]) -> dict[str, Any]:
    problem = plain_json_problem(value, MAX_DRIVER_REPORT_BYTES)
    if problem is not None:
        raise ValueError(f"the driver's report is refused: {problem}")
    return value


DriverReport = Annotated[dict[str, Any], AfterValidator(_plain_driver_report)]
"""A driver's free-form provenance report: plain JSON, finite numbers, at most 64 KiB."""


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
    driver: DriverReport = Field(default_factory=dict)
    roms: dict[ShortText, Sha256Hex] | None = _later()
    source: SourceCheckout | None = _later()
    settings: RunSettings | None = _later()


class RecorderPin(_Frozen):
    """The transcript a trusted recorder signed for a ``trusted-recorder`` run.

    ``transcript_sha256`` is the SHA-256 of the transcript's exact payload
    bytes (what the recorder's signature covers) and ``key_id`` the id of the
    recorder's Ed25519 key (SHA-256 of its raw public key). A verifier checks
    the recorder's signature with a key it trusts under that id and
    recomputes the milestones from the transcript; it never runs the game.
    """

    transcript_sha256: Sha256Hex
    key_id: Sha256Hex


class DecisionColumns(_Frozen):
    """The v2 JSON form of the decisions: one column per field, turn implied by position."""

    inputs: tuple[DecisionInput, ...]
    costs_usd: tuple[Measured | None, ...]
    latencies_ms: tuple[Measured, ...]


DecisionForm = Literal["rows", "columns"]


class DecisionLog(Sequence[Decision]):
    """A run's decisions as columns: inputs, costs and latencies, turn by position.

    A sequence of :class:`Decision` (indexing and iteration build them on
    demand), so ``record.decisions[0].input`` reads as it always did, while a
    long record holds three flat tuples rather than a million models.
    ``turns`` is only stored for decisions built in Python or read from a v1
    record whose turns are not 1, 2, 3 ...: a verifier reports those, and a v2
    record cannot be written from them.
    """

    __slots__ = ("_turns", "costs_usd", "form", "inputs", "latencies_ms")

    inputs: tuple[str, ...]
    costs_usd: tuple[float | None, ...]
    latencies_ms: tuple[float, ...]
    form: DecisionForm | None
    """How the log was read from JSON (None when it was built in Python)."""

    def __init__(
        self,
        inputs: Iterable[str],
        costs_usd: Iterable[float | None],
        latencies_ms: Iterable[float],
        *,
        turns: Iterable[int] | None = None,
        form: DecisionForm | None = None,
    ) -> None:
        self.inputs = tuple(inputs)
        self.costs_usd = tuple(costs_usd)
        self.latencies_ms = tuple(latencies_ms)
        count = len(self.inputs)
        if len(self.costs_usd) != count or len(self.latencies_ms) != count:
            raise ValueError(
                f"the decision columns differ in length: {count} inputs, "
                f"{len(self.costs_usd)} costs, {len(self.latencies_ms)} latencies"
            )
        listed = None if turns is None else tuple(turns)
        if listed is not None and len(listed) != count:
            raise ValueError(f"{len(listed)} turns for {count} decisions")
        self._turns = None if listed is None or _positional(listed) else listed
        self.form = form

    @classmethod
    def of(cls, decisions: Iterable[Decision], *, form: DecisionForm | None = None) -> DecisionLog:
        """The columns of ``decisions`` (taken as they are: nothing is validated again)."""
        if isinstance(decisions, DecisionLog):
            return decisions
        rows = decisions if isinstance(decisions, list | tuple) else list(decisions)
        return cls(
            map(_INPUT, rows),
            map(_COST, rows),
            map(_LATENCY, rows),
            turns=map(_TURN, rows),
            form=form,
        )

    @property
    def turns(self) -> Sequence[int]:
        """Each decision's turn: its 1-based position, unless the decisions said otherwise."""
        return self._turns if self._turns is not None else range(1, len(self.inputs) + 1)

    @property
    def positional(self) -> bool:
        """True when the turns are 1, 2, 3 ... (always so for a v2 record)."""
        return self._turns is None

    def __len__(self) -> int:
        return len(self.inputs)

    def _decision(self, index: int) -> Decision:
        turn = self._turns[index] if self._turns is not None else index + 1
        return Decision.model_construct(
            turn=turn,
            input=self.inputs[index],
            cost_usd=self.costs_usd[index],
            latency_ms=self.latencies_ms[index],
        )

    @overload
    def __getitem__(self, index: int) -> Decision: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Decision, ...]: ...
    def __getitem__(self, index: int | slice) -> Decision | tuple[Decision, ...]:
        if isinstance(index, slice):
            return tuple(self._decision(i) for i in range(*index.indices(len(self))))
        count = len(self.inputs)
        if not -count <= index < count:
            raise IndexError("decision index out of range")
        return self._decision(index % count)

    def __iter__(self) -> Iterator[Decision]:
        return (self._decision(i) for i in range(len(self.inputs)))

    def _key(self) -> tuple[Any, ...]:
        return (self.inputs, self.costs_usd, self.latencies_ms, tuple(self.turns))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DecisionLog):
            return self._key() == other._key()
        if isinstance(other, tuple | list):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"DecisionLog({len(self)} decisions)"

    def rows(self) -> list[dict[str, Any]]:
        """The v1 JSON form: one ``{turn, input, cost_usd, latency_ms}`` object per decision."""
        return [
            {"turn": t, "input": w, "cost_usd": c, "latency_ms": ms}
            for t, w, c, ms in zip(
                self.turns, self.inputs, self.costs_usd, self.latencies_ms, strict=True
            )
        ]

    def columns(self) -> dict[str, list[Any]]:
        """The v2 JSON form: three columns; ValueError when the turns are not positions."""
        if self._turns is not None:
            index, turn = next((i, t) for i, t in enumerate(self._turns, start=1) if t != i)
            raise ValueError(
                f"decision {index} is numbered turn {turn}: a v2 record's turns are positions"
            )
        return {
            "inputs": list(self.inputs),
            "costs_usd": list(self.costs_usd),
            "latencies_ms": list(self.latencies_ms),
        }

    @classmethod
    def _from_columns(cls, columns: DecisionColumns) -> DecisionLog:
        return cls(columns.inputs, columns.costs_usd, columns.latencies_ms, form="columns")

    @classmethod
    def _from_rows(cls, rows: tuple[Decision, ...]) -> DecisionLog:
        return cls.of(rows, form="rows")

    @classmethod
    def _from_python(cls, value: Any) -> DecisionLog:
        if isinstance(value, DecisionColumns):
            return cls._from_columns(value)
        return cls.of(value)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, _source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        columns = core_schema.no_info_after_validator_function(
            cls._from_columns, handler.generate_schema(DecisionColumns)
        )
        rows = core_schema.no_info_after_validator_function(
            cls._from_rows, handler.generate_schema(tuple[Decision, ...])
        )
        python_rows = core_schema.no_info_after_validator_function(
            cls._from_python, handler.generate_schema(tuple[Decision, ...])
        )
        return core_schema.json_or_python_schema(
            json_schema=core_schema.union_schema([(columns, "columns"), (rows, "rows")]),
            python_schema=core_schema.union_schema(
                [
                    (core_schema.is_instance_schema(cls), "log"),
                    (columns, "columns"),
                    (python_rows, "rows"),
                ]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(_plain_form),
        )


def _plain_form(log: DecisionLog) -> Any:
    """A log's JSON form out of a record: columns when its turns allow, else rows."""
    return log.columns() if log.positional else log.rows()


def _positional(turns: Sequence[int]) -> bool:
    return set(map(type, turns)) <= {int} and list(turns) == list(range(1, len(turns) + 1))


_TURN, _INPUT = attrgetter("turn"), attrgetter("input")
_COST, _LATENCY = attrgetter("cost_usd"), attrgetter("latency_ms")


_FORM_BY_SCHEMA: dict[str, Any] = {
    "if": {"properties": {"schema": {"const": RECORD_SCHEMA_V1}}},
    "then": {"properties": {"decisions": {"type": "array"}}},
    "else": {"properties": {"decisions": {"type": "object"}}},
}
"""In the published schema: v1 records list decision objects, v2 records (the default) columns."""


class RunRecord(_Frozen):
    """One episode, as recorded (see the module docstring).

    ``milestones_identity`` is how many of ``milestones_total`` are identity
    milestones (``save-hash``/``frame-hash`` checks, scored apart) and
    ``identity_claimed`` which claimed ids are identity milestones; both are
    None in records written before identity milestones were counted apart.
    """

    schema_: Literal["playproof/run/v1", "playproof/run/v2"] = Field(RECORD_SCHEMA, alias="schema")
    target: TargetPin
    actor: Actor
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    limits: Limits
    decisions: DecisionLog
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
    recorder: RecorderPin | None = _later()
    """The signed transcript of a ``trusted-recorder`` run (absent in every other mode)."""
    receipts: Receipts | None = _later()
    """The pinned provider responses of a ``platform-attested`` run (absent in other modes)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        json_schema_extra={"allOf": [_FORM_BY_SCHEMA]},
    )

    @field_serializer("decisions")
    def _decisions_json(self, decisions: Sequence[Decision]) -> Any:
        return self.decisions_json()

    def decisions_json(self) -> Any:
        """The decisions in this record's schema: v1 rows or v2 columns (values as they are)."""
        log = self.log
        return log.rows() if self.schema_ == RECORD_SCHEMA_V1 else log.columns()

    @model_validator(mode="after")
    def _form_matches_schema(self) -> Self:
        form = self.decisions.form if isinstance(self.decisions, DecisionLog) else None
        expected = "rows" if self.schema_ == RECORD_SCHEMA_V1 else "columns"
        if form is not None and form != expected:
            raise ValueError(
                f"a {self.schema_} record lists its decisions as {expected}, not as {form}"
            )
        return self

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
        return self.log.inputs

    @property
    def log(self) -> DecisionLog:
        """The decisions as columns (converted when a copy was given a plain tuple)."""
        return DecisionLog.of(self.decisions)

    def as_schema(self, schema: Literal["playproof/run/v1", "playproof/run/v2"]) -> RunRecord:
        """The same record written in ``schema`` (same decisions, same chain head)."""
        return self.model_copy(update={"schema_": schema})

    def to_json(self) -> dict[str, Any]:
        """The JSON form that is signed and hashed (unknown later fields left out).

        The decisions are v1 rows or v2 columns, as the record's schema says.
        """
        rest = self.model_dump(mode="json", by_alias=True, exclude={"decisions"})
        document: dict[str, Any] = {}
        for key, value in rest.items():
            document[key] = value
            if key == "limits":
                document["decisions"] = self.decisions_json()
        return document

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

    A v2 record's columns are checked in bulk (:func:`read_decision_columns`)
    and kept as parsed, so a long record is parsed once, never into one model
    per decision.
    """
    if isinstance(data, RunRecord):
        return data
    if isinstance(data, bytes | bytearray | memoryview | str):
        text: bytes | str = bytes(data) if not isinstance(data, str) else data
        with paused_gc():
            parsed = parse_json(text, limit=MAX_RECORD_BYTES, what="record")
        if not _columnar(parsed):
            del parsed
            return validate_strict(RunRecord, text, what="record")
        return read_parsed_record(parsed)
    return read_parsed_record(data)


def _columnar(data: Any) -> bool:
    return (
        type(data) is dict
        and data.get("schema") == RECORD_SCHEMA
        and type(data.get("decisions")) is dict
    )


_NO_DECISIONS: Final[dict[str, list[Any]]] = {"inputs": [], "costs_usd": [], "latencies_ms": []}


def read_parsed_record(data: Any) -> RunRecord:
    """Read a record strictly from parsed JSON (no NaN, no repeated keys, as a JSON parser gives).

    A v2 record's columns are checked by :func:`read_decision_columns` and
    kept (no copy of a long column is made); everything else is judged by the
    schema exactly as :func:`parse_run_record` judges text, within
    MAX_RECORD_BYTES as JSON. The columns are not written out to be measured:
    a record is refused when its decisions alone could not be written in
    MAX_RECORD_BYTES (the inputs' characters, their quotes, and at least one
    character for each number and each comma), which bounds how many
    decisions, and how much input text, a parsed record may carry.
    """
    if not _columnar(data):
        return parse_model(RunRecord, data, limit=MAX_RECORD_BYTES, what="record")
    log = read_decision_columns(data["decisions"])
    count = len(log.inputs)
    if count:
        # Per decision: the input in quotes, two numbers, three commas (one fewer per column).
        least = sum(map(len, log.inputs)) + 7 * count - 3
        if least > MAX_RECORD_BYTES:
            raise FormatError(
                f"record is over the {MAX_RECORD_BYTES}-byte limit: its {count} decisions "
                f"alone take at least {least} bytes as JSON"
            )
    record = parse_model(
        RunRecord, {**data, "decisions": _NO_DECISIONS}, limit=MAX_RECORD_BYTES, what="record"
    )
    return record.model_copy(update={"decisions": log})


_COLUMN_NAMES: Final = ("inputs", "costs_usd", "latencies_ms")
_NUMBER_TYPES: Final = frozenset({float, int})


def read_decision_columns(columns: Any) -> DecisionLog:
    """A v2 record's decision columns, checked in bulk as strictly as the schema says.

    ``inputs`` are non-empty strings of at most MAX_INPUT_BYTES in UTF-8;
    ``costs_usd`` non-negative finite numbers or null; ``latencies_ms``
    non-negative finite numbers; the three of one length. Raises
    :class:`~playproof.errors.FormatError` naming the first bad value. A
    property test holds this to the same verdicts as the schema's model.
    """
    where = "record is not valid: decisions"
    if type(columns) is not dict:
        raise FormatError(f"{where}: a v2 record's decisions are an object of three columns")
    if set(columns) != set(_COLUMN_NAMES):
        names = sorted(map(str, columns))[:8]
        raise FormatError(f"{where}: the columns are {list(_COLUMN_NAMES)}, not {names}")
    for name in _COLUMN_NAMES:
        if type(columns[name]) is not list:
            raise FormatError(f"{where}.{name}: must be an array")
    inputs, costs, latencies = (columns[name] for name in _COLUMN_NAMES)
    if not len(inputs) == len(costs) == len(latencies):
        raise FormatError(
            f"{where}: the columns differ in length: {len(inputs)} inputs, {len(costs)} costs, "
            f"{len(latencies)} latencies"
        )
    bad = _first_bad_input(inputs)
    if bad is not None:
        raise FormatError(
            f"{where}.inputs.{bad}: must be a non-empty string of at most "
            f"{MAX_INPUT_BYTES} bytes in UTF-8"
        )
    costs = _measured(costs, f"{where}.costs_usd", nullable=True)
    latencies = _measured(latencies, f"{where}.latencies_ms", nullable=False)
    return DecisionLog(inputs, costs, latencies, form="columns")


def _first_bad_input(inputs: list[Any]) -> int | None:
    if not set(map(type, inputs)) <= {str}:
        return next(i for i, word in enumerate(inputs) if type(word) is not str)
    if "" in inputs:
        return inputs.index("")
    return first_too_large(inputs)


def _measured(values: list[Any], where: str, *, nullable: bool) -> list[Any]:
    """``values`` as floats (None kept when ``nullable``); FormatError at the first bad one."""
    kinds = set(map(type, values))
    allowed = _NUMBER_TYPES | ({type(None)} if nullable else set())
    ok = kinds <= allowed
    numbers = values if type(None) not in kinds else [v for v in values if v is not None]
    if ok and int in kinds:
        try:
            values = _as_floats(values)
        except OverflowError:
            ok = False
        else:
            numbers = [v for v in values if v is not None]
    if ok and all(map(math.isfinite, numbers)) and (not numbers or min(numbers) >= 0):
        return values
    index = next(i for i, v in enumerate(values) if not _one_measured(v, nullable=nullable))
    what = "a non-negative finite number or null" if nullable else "a non-negative finite number"
    raise FormatError(f"{where}.{index}: must be {what}")


def _as_floats(values: list[Any]) -> list[Any]:
    """Integers as floats (a float field reads 0 as 0.0), one float object per distinct integer.

    In C throughout: the integers are picked out by type, and every value is
    looked up in a table of their floats, defaulting to itself (a float or
    None). A float equal to a listed integer gets that integer's float, the
    same number.
    """
    integers = set(compress(values, map(is_, map(type, values), repeat(int))))
    floats = {value: float(value) for value in integers}
    return list(map(floats.get, values, values))


def _one_measured(value: Any, *, nullable: bool) -> bool:
    if value is None:
        return nullable
    if type(value) not in _NUMBER_TYPES:
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:
        return False
