"""The campaign ledger: a validated JSON document a long run is saved to and resumed from.

It holds the target pin, the actor, the seed and limits, every decision (as
columns: inputs, costs and latencies in turn order; the segment of each
follows from the segments' turn ranges), the segments (with a digest of their
inputs, their spend and the chain head at their end), the analyst's and the
steering hook's answers, the guidance in effect, the spend and the verified
milestones. Columns keep a ledger of millions of decisions small and quick to
load: resuming costs little more than replaying its inputs.

:func:`save_ledger` writes atomically (a temporary file in the same folder,
fsync, rename, fsync of the folder), so a crash at any point leaves either
the previous ledger or the new one. :func:`load_ledger` refuses a missing,
oversized or malformed file, and :func:`ledger_problems` /
:func:`run_mismatches` name every way a ledger disagrees with itself or with
the run it claims to continue.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from playproof.core.canonical import canonical_strings, parse_json
from playproof.core.chain import (
    MAX_INPUT_BYTES,
    ChainLinker,
    Decision,
    genesis_hash,
    input_too_large,
)
from playproof.core.game import MAX_SEED
from playproof.core.record import Actor, ClaimedMilestone, Limits, StopReason, TargetPin
from playproof.errors import FormatError, LedgerError

__all__ = [
    "LEDGER_SCHEMA",
    "MAX_GUIDANCE_CHARS",
    "MAX_LEDGER_BYTES",
    "MAX_SUMMARY_CHARS",
    "Analysis",
    "AnalysisEntry",
    "Ledger",
    "LedgerDecisions",
    "LedgerSegment",
    "Recommendation",
    "SegmentStatus",
    "Steer",
    "SteeringEntry",
    "inputs_digest",
    "ledger_content_problems",
    "ledger_problems",
    "ledger_structure_problems",
    "load_ledger",
    "run_mismatches",
    "save_ledger",
]

LEDGER_SCHEMA = "playproof/ledger/v2"
MAX_LEDGER_BYTES = 512 << 20
"""The largest ledger file read (about five million decisions)."""
MAX_GUIDANCE_CHARS = 4000
"""The longest guidance a hook may leave for the driver."""
MAX_SUMMARY_CHARS = 4000
"""The longest analyst summary kept."""

Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Stamp = Annotated[str, Field(min_length=1, max_length=64)]
Guidance = Annotated[str, Field(max_length=MAX_GUIDANCE_CHARS)]
Money = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Recommendation(StrEnum):
    """What an analyst recommends after a segment."""

    CONTINUE = "continue"
    STEER = "steer"
    STOP = "stop"


class Analysis(_Frozen):
    """An analyst's answer: a summary, a recommendation, optional guidance and progress score.

    ``steer`` must carry guidance (blank clears the guidance in effect);
    ``continue`` keeps the guidance in effect unless it carries new guidance.
    """

    summary: Annotated[str, Field(max_length=MAX_SUMMARY_CHARS)]
    recommendation: Recommendation = Recommendation.CONTINUE
    guidance: Guidance | None = None
    progress: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _steer_has_guidance(self) -> Analysis:
        if self.recommendation is Recommendation.STEER and self.guidance is None:
            raise ValueError("recommendation 'steer' needs guidance (blank clears it)")
        return self


class AnalysisEntry(_Frozen):
    """An analyst's answer after one segment."""

    segment: Annotated[int, Field(ge=0)]
    analysis: Analysis


class Steer(_Frozen):
    """A steering note (human or program): guidance for the driver (blank clears it), or stop."""

    note: Guidance = ""
    stop: bool = False


class SteeringEntry(_Frozen):
    """A steering note left after one segment."""

    segment: Annotated[int, Field(ge=0)]
    steer: Steer


class SegmentStatus(StrEnum):
    """How a segment ended."""

    COMPLETE = "complete"
    """A stop rule (segment limit, turn limit, budget, game over) ended it."""
    INTERRUPTED = "interrupted"
    """Cancellation, Ctrl-C or an error ended it; the next call resumes after it."""


class LedgerDecisions(_Frozen):
    """Every decision in turn order, as three columns: position ``i`` is turn ``i + 1``.

    Each decision is what the run record carries (input, measured cost or
    None, latency); the segment that took it follows from the segments' turn
    ranges.
    """

    inputs: tuple[Annotated[str, Field(min_length=1, max_length=MAX_INPUT_BYTES)], ...] = ()
    costs_usd: tuple[Money | None, ...] = ()
    latencies_ms: tuple[Money, ...] = ()

    @model_validator(mode="after")
    def _aligned(self) -> LedgerDecisions:
        sizes = (len(self.inputs), len(self.costs_usd), len(self.latencies_ms))
        if len(set(sizes)) != 1:
            raise ValueError(
                "inputs, costs_usd and latencies_ms hold {}, {} and {} entries; "
                "every decision has all three".format(*sizes)
            )
        return self

    def __len__(self) -> int:
        return len(self.inputs)

    def rows(self) -> Iterator[tuple[int, str, float | None, float]]:
        """``(turn, input, cost_usd, latency_ms)`` for every decision, in turn order."""
        return zip(
            range(1, len(self.inputs) + 1),
            self.inputs,
            self.costs_usd,
            self.latencies_ms,
            strict=True,
        )


class LedgerSegment(_Frozen):
    """One stretch of play: its turns, how it ended, and digests of what it decided."""

    index: Annotated[int, Field(ge=0)]
    first_turn: Annotated[int, Field(ge=1)]
    last_turn: Annotated[int, Field(ge=1)]
    status: SegmentStatus
    stop_reason: StopReason | None
    stopped_by: Literal["analyst", "steering"] | None = None
    consulted: bool = False
    """True once the hooks have answered after this segment."""
    guidance: Guidance | None
    inputs_digest: Sha256Hex
    spent_usd: Money
    chain_head: Sha256Hex
    new_milestones: tuple[str, ...]
    started_at: Stamp
    finished_at: Stamp


class Ledger(_Frozen):
    """A campaign as saved between segments (see the module docstring)."""

    schema_: Literal["playproof/ledger/v2"] = Field("playproof/ledger/v2", alias="schema")
    target: TargetPin
    actor: Actor
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    limits: Limits
    segment_turns: Annotated[int, Field(ge=1)]
    decisions: LedgerDecisions
    segments: tuple[LedgerSegment, ...]
    analyses: tuple[AnalysisEntry, ...] = ()
    steering: tuple[SteeringEntry, ...] = ()
    guidance: Guidance | None = None
    """The guidance the next segment's driver will see."""
    spent_usd: Money
    unmeasured_decisions: Annotated[int, Field(ge=0)]
    chain_head: Sha256Hex
    verified: tuple[ClaimedMilestone, ...]
    finished: bool = False
    stop_reason: StopReason | None = None
    game_over: bool = False
    started_at: Stamp
    updated_at: Stamp

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def __repr__(self) -> str:
        # Short on purpose: a ledger can hold millions of decisions.
        return (
            f"Ledger(target={self.target.name or self.target.game_id!r}, seed={self.seed}, "
            f"decisions={len(self.decisions)}, segments={len(self.segments)}, "
            f"finished={self.finished})"
        )

    def __str__(self) -> str:
        return repr(self)

    def record_decisions(self) -> tuple[Decision, ...]:
        """The decisions as the run record carries them (no segment)."""
        return tuple(
            Decision.model_construct(turn=turn, input=word, cost_usd=cost, latency_ms=latency)
            for turn, word, cost, latency in self.decisions.rows()
        )


def inputs_digest(inputs: Sequence[str]) -> str:
    """SHA-256 of the canonical JSON list of ``inputs`` (a segment's input digest)."""
    return hashlib.sha256(canonical_strings(inputs)).hexdigest()


def save_ledger(ledger: Ledger, path: Path) -> Path:
    """Write ``ledger`` to ``path`` atomically; a crash leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = ledger.model_dump_json(by_alias=True).encode("utf-8")
    try:
        with temporary.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    # The rename is durable only once the folder's entry is on disk.
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return path


def load_ledger(path: Path, *, consistent: bool = True) -> Ledger:
    """Read and validate a ledger; LedgerError when it is missing, too big or malformed.

    With ``consistent`` (the default) a ledger that disagrees with itself is
    refused too (see :func:`ledger_problems`).
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_LEDGER_BYTES + 1)
    except FileNotFoundError as exc:
        raise LedgerError(str(path), ["the file does not exist"]) from exc
    except OSError as exc:
        raise LedgerError(str(path), [f"cannot be read: {exc.strerror}"]) from exc
    ledger = _saved_form(data)
    if ledger is None:
        ledger = _strict_parse(data, path)
    problems = ledger_problems(ledger) if consistent else []
    if problems:
        raise LedgerError(str(path), problems)
    return ledger


def _saved_form(data: bytes) -> Ledger | None:
    """The ledger when ``data`` is exactly what :func:`save_ledger` writes for it, else None.

    Pydantic's JSON parser keeps the last of repeated keys, so a document it
    accepts is only taken when re-serializing the result gives back the same
    bytes: the serializer writes each key once and no NaN, so such a document
    has neither, and the strict parse would have read the same ledger. Anything
    else (hand edits, other formatting, errors) goes through :func:`_strict_parse`.
    """
    if len(data) > MAX_LEDGER_BYTES:
        return None
    try:
        ledger = Ledger.model_validate_json(data)
    except ValidationError:
        return None
    saved = Ledger.__pydantic_serializer__.to_json(ledger, by_alias=True)
    return ledger if saved == data else None


def _strict_parse(data: bytes, path: Path) -> Ledger:
    """Parse refusing NaN and repeated keys, then validate; LedgerError names the problems."""
    try:
        raw = parse_json(data, limit=MAX_LEDGER_BYTES, what="the file")
    except FormatError as exc:
        raise LedgerError(str(path), [str(exc)]) from exc
    if isinstance(raw, dict) and raw.get("schema") != LEDGER_SCHEMA:
        schema = str(raw.get("schema"))[:60]
        if schema.startswith("playproof/ledger/"):
            raise LedgerError(
                str(path),
                [
                    f"the ledger format is {schema}, this playproof reads {LEDGER_SCHEMA} only; "
                    "finish that campaign with the playproof version that started it"
                ],
            )
    try:
        return Ledger.model_validate(raw)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or 'document'}: {err['msg']}"
            for err in exc.errors()[:20]
        ]
        raise LedgerError(str(path), ["not a playproof ledger", *problems]) from exc


def _segment_problems(ledger: Ledger) -> list[str]:
    problems: list[str] = []
    count = len(ledger.decisions)
    next_turn = 1
    for position, segment in enumerate(ledger.segments):
        if segment.index != position:
            problems.append(
                f"segment at position {position} has index {segment.index}: "
                "a segment was dropped or reordered"
            )
        if segment.first_turn != next_turn:
            problems.append(
                f"segment {segment.index} starts at turn {segment.first_turn}, expected "
                f"{next_turn}: segments are not contiguous"
            )
        if segment.last_turn < segment.first_turn:
            problems.append(f"segment {segment.index} is empty or ends before it starts")
        if segment.stopped_by is not None and position != len(ledger.segments) - 1:
            problems.append(f"segment {segment.index} stopped the campaign but is not the last")
        next_turn = segment.last_turn + 1
    if next_turn - 1 != count:
        problems.append(
            f"segments cover turns 1..{next_turn - 1} but there are {count} decisions: "
            "segments do not cover the decisions"
        )
    return problems


def ledger_content_problems(ledger: Ledger) -> list[str]:
    """Per-segment digests, spend and chain heads against the decisions they cover.

    Meaningful once the segments cover the decisions (see
    :func:`ledger_structure_problems`); this is the pass over every decision.
    """
    problems: list[str] = []
    inputs, costs = ledger.decisions.inputs, ledger.decisions.costs_usd
    chain = ChainLinker(
        genesis_hash(
            ledger.target.game_id,
            ledger.target.build_digest,
            ledger.target.contract_hash,
            seed=ledger.seed,
        )
    )
    spent = 0.0
    unmeasured = 0
    for segment in ledger.segments:
        low, high = segment.first_turn - 1, segment.last_turn
        words, prices = inputs[low:high], costs[low:high]
        if inputs_digest(words) != segment.inputs_digest:
            problems.append(
                f"segment {segment.index}: its inputs do not match its digest "
                "(an input was edited, dropped or reordered)"
            )
        segment_spent = 0.0
        for cost in prices:
            if cost is None:
                unmeasured += 1
            else:
                # Summed in turn order, as the loop sums them, so totals compare exactly.
                spent += cost
                segment_spent += cost
        try:
            chain.extend(segment.first_turn, words, prices)
        except UnicodeEncodeError:
            problems.append(f"segment {segment.index}: an input is not valid Unicode")
            return problems
        if segment_spent != segment.spent_usd:
            problems.append(
                f"segment {segment.index}: costs sum to {segment_spent!r}, the segment says "
                f"{segment.spent_usd!r} (a cost was edited)"
            )
        if chain.head != segment.chain_head:
            problems.append(
                f"segment {segment.index}: its decisions do not chain to its recorded head "
                "(a decision, the seed or the target pin was edited)"
            )
    if spent != ledger.spent_usd:
        problems.append(f"costs sum to {spent!r}, the ledger's spend says {ledger.spent_usd!r}")
    if unmeasured != ledger.unmeasured_decisions:
        problems.append(
            f"{unmeasured} decisions have unmeasured costs, the ledger says "
            f"{ledger.unmeasured_decisions}"
        )
    if chain.head != ledger.chain_head:
        problems.append("the decisions do not chain to the ledger's chain head")
    return problems


def _limit_problems(ledger: Ledger) -> list[str]:
    problems: list[str] = []
    limits = ledger.limits
    count = len(ledger.decisions)
    if count > limits.max_turns:
        problems.append(f"{count} decisions exceed the {limits.max_turns}-turn limit")
    if limits.budget_usd is not None:
        spent = 0.0
        for turn, cost in enumerate(ledger.decisions.costs_usd, start=1):
            if cost is None:
                problems.append(f"turn {turn} has no measured cost under a budget")
                break
            if spent >= limits.budget_usd:
                problems.append(f"turn {turn} was taken after the budget was spent")
                break
            spent += cost
    oversized = next(
        (t for t, word in enumerate(ledger.decisions.inputs, start=1) if input_too_large(word)),
        None,
    )
    if oversized is not None:
        problems.append(f"turn {oversized} has an input over {MAX_INPUT_BYTES} bytes")
    if ledger.finished != (ledger.stop_reason is not None):
        problems.append("a finished ledger names its stop reason, an unfinished one does not")
    return problems


def _hook_problems(ledger: Ledger) -> list[str]:
    problems: list[str] = []
    known = len(ledger.segments)
    for kind, entries in (("analysis", ledger.analyses), ("steering note", ledger.steering)):
        seen: set[int] = set()
        for entry in entries:
            if entry.segment >= known:
                problems.append(f"{kind} for segment {entry.segment}, which does not exist")
            if entry.segment in seen:
                problems.append(f"two of {kind} for segment {entry.segment}")
            seen.add(entry.segment)
    return problems


def ledger_structure_problems(ledger: Ledger) -> list[str]:
    """How the ledger's segments, limits and hook answers disagree with its decisions.

    Cheap checks (no hashing); :func:`ledger_content_problems` checks the
    decisions themselves once these pass.
    """
    return [*_segment_problems(ledger), *_limit_problems(ledger), *_hook_problems(ledger)]


def ledger_problems(ledger: Ledger) -> list[str]:
    """Every way ``ledger`` disagrees with itself (empty when consistent)."""
    segments = _segment_problems(ledger)
    # Digests and chain heads are only meaningful over decisions the segments cover.
    content = ledger_content_problems(ledger) if not segments else []
    return [*segments, *content, *_limit_problems(ledger), *_hook_problems(ledger)]


def run_mismatches(
    ledger: Ledger, *, target: TargetPin, actor: Actor, seed: int, limits: Limits
) -> list[str]:
    """Every way ``ledger`` disagrees with the run it claims to continue (empty when it agrees)."""
    problems: list[str] = []
    mine, theirs = ledger.target, target
    for label, saved, wanted in (
        ("target", mine.name, theirs.name),
        ("game id", mine.game_id, theirs.game_id),
        ("build digest", mine.build_digest, theirs.build_digest),
        ("contract hash", mine.contract_hash, theirs.contract_hash),
        ("platform", mine.platform, theirs.platform),
        ("verification mode", mine.verification_mode.value, theirs.verification_mode.value),
        ("actor", f"{ledger.actor.kind}:{ledger.actor.id}", f"{actor.kind}:{actor.id}"),
        ("seed", ledger.seed, seed),
        ("budget", ledger.limits.budget_usd, limits.budget_usd),
        ("turn limit", ledger.limits.max_turns, limits.max_turns),
        ("stop at game over", ledger.limits.stop_at_game_over, limits.stop_at_game_over),
    ):
        if saved != wanted:
            problems.append(f"the ledger's {label} is {saved!r}, this run's is {wanted!r}")
    return problems
