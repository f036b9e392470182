"""The one decision loop, as resumable state: episodes and campaigns both run through it.

A :class:`DecisionLoop` holds everything a run accumulates (game state, the
milestone tracker, the chain head, the decisions, the spend, the text history
shown to the driver). :meth:`DecisionLoop.start` powers the game on;
:meth:`DecisionLoop.resume` rebuilds the same state from a recorded input log
(the prefix of a campaign) in one pass over the live game; :meth:`run` plays
until a stop rule fires, optionally at a segment boundary; :meth:`record`
turns the state into a run record.

Before each decision :meth:`run` checks, in order: game over (when armed), the
turn limit, the budget, the segment limit, cancellation.
"""

from __future__ import annotations

import asyncio
import logging
import math
import platform
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from typing import cast

from pydantic import TypeAdapter

from playproof.core.agent import Action, DecisionContext, Driver, HistoryEntry, provenance_of
from playproof.core.chain import (
    MAX_INPUT_BYTES,
    ChainLinker,
    Decision,
    genesis_hash,
)
from playproof.core.contract import Contract
from playproof.core.game import (
    Advancing,
    BatchReplaying,
    Game,
    OutOfProcess,
    ReplayResult,
    VerificationMode,
    advance_many,
)
from playproof.core.observation import Observation
from playproof.core.record import (
    Accounting,
    Actor,
    ClaimedMilestone,
    Limits,
    Provenance,
    RecorderPin,
    RunRecord,
    RunSettings,
    SourceCheckout,
    StopReason,
    TargetPin,
)
from playproof.core.replay import replay_in_session
from playproof.core.score import Score, identity_ids
from playproof.core.tracker import MilestoneTracker
from playproof.core.transcript import Recording, Transcript
from playproof.errors import CostError, DriverError, InputError, ModeError, RunError

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_MAX_TURNS",
    "DecisionLoop",
    "EpisodeConfig",
    "TurnReport",
    "check_mode",
    "now",
]

log = logging.getLogger("playproof.engine")

# Decisions are kept as plain tuples on the hot path and validated in one batch.
_DECISIONS: TypeAdapter[tuple[Decision, ...]] = TypeAdapter(tuple[Decision, ...])

DEFAULT_MAX_TURNS = 1000
DEFAULT_HISTORY = 32
"""How many past turns (text only) a driver is shown."""
LATENCY_DECIMALS = 4
"""A decision's latency is kept in milliseconds to this many decimals (0.1 µs).

Finer digits are below what timing one Python call can resolve, and a number
of at most 15 significant digits has a short canonical form: a record with
rounded latencies is about a third smaller and reads faster.
"""

RawDecision = tuple[int, str, float | None, float]
"""(turn, input, cost_usd, latency_ms): a decision before batch validation."""


@dataclass(frozen=True, slots=True)
class TurnReport:
    """Progress after one decision, for displays: never contains evidence values."""

    turn: int
    max_turns: int
    input: str
    spent_usd: float
    new_milestones: tuple[str, ...]
    verified: int
    """Milestones reached so far, identity milestones included."""
    milestones_total: int
    earned: int = 0
    """Earnable (legible) milestones reached so far."""
    earnable: int = 0
    """The contract's milestones that are not identity milestones."""

    @property
    def score(self) -> Score:
        """The score so far (earned over earnable, identity milestones apart)."""
        identity = self.milestones_total - self.earnable
        return Score(
            earned=self.earned,
            earnable=self.earnable,
            identity_reached=self.verified - self.earned,
            identity_total=identity,
        )


@dataclass(frozen=True)
class EpisodeConfig:
    """Limits and options of one episode."""

    seed: int = 0
    budget_usd: float | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    stop_at_game_over: bool = True
    mode: VerificationMode | None = None
    history: int = DEFAULT_HISTORY
    guidance: str | None = None
    libraries: Mapping[str, str] = field(default_factory=dict)
    """Versions of the libraries that define the game (recorded as provenance)."""
    target_name: str | None = None
    calibrated: bool | None = None
    """Whether the target's contract was published through calibration (None: unknown)."""
    roms: Mapping[str, str] | None = None
    """ROM name -> SHA-256 of its bytes, for games that run a ROM."""
    source: SourceCheckout | None = None
    """The git checkout playproof runs from, when it is one."""
    settings: RunSettings | None = None
    """The run's configuration, secrets removed."""
    seal: Callable[[Transcript], RecorderPin] | None = None
    """A trusted-recorder run's recorder: signs the transcript and names it for the record."""

    def __post_init__(self) -> None:
        if self.budget_usd is not None and not (
            math.isfinite(self.budget_usd) and self.budget_usd >= 0
        ):
            raise RunError(f"budget must be a finite number >= 0, not {self.budget_usd}")
        if self.max_turns < 0:
            raise RunError(f"max_turns must be >= 0, not {self.max_turns}")
        if self.history < 0:
            raise RunError(f"history must be >= 0, not {self.history}")


def now() -> str:
    """The current UTC time in ISO 8601, as records store it."""
    return datetime.now(UTC).isoformat()


@cache
def _playproof_version() -> str:
    # Cached: reading package metadata costs milliseconds, once per record otherwise.
    try:
        return metadata.version("playproof")
    except metadata.PackageNotFoundError:
        return "unknown"


def check_mode(game: Game, mode: VerificationMode | None) -> VerificationMode:
    """The mode a run uses; ModeError when the platform does not declare it."""
    modes = game.descriptor.platform.modes
    if mode is None:
        return modes[0]
    if mode not in modes:
        declared = ", ".join(m.value for m in modes)
        raise ModeError(
            f"{game.descriptor.id} ({game.descriptor.platform.family}) supports {declared}, "
            f"not {mode.value}"
        )
    return mode


def _checked_action(action: object, turn: int, budgeted: bool) -> Action:
    if not isinstance(action, Action):
        raise DriverError(f"driver returned {type(action).__name__} at turn {turn}, not an Action")
    word, cost = action.input, action.cost_usd
    if not isinstance(word, str) or not word.strip():
        raise InputError(f"driver gave an empty input at turn {turn}")
    if word.isascii():  # one byte per character, and nothing to encode (the usual case)
        size = len(word)
    else:
        try:
            size = len(word.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InputError(
                f"driver gave an input that is not valid Unicode at turn {turn}"
            ) from exc
    if size > MAX_INPUT_BYTES:
        raise InputError(f"driver gave an input over {MAX_INPUT_BYTES} bytes at turn {turn}")
    if cost is None:
        if budgeted:
            raise CostError(
                f"the driver could not measure the cost of turn {turn}, so a budget cannot be "
                "enforced; declare pricing for the driver or run without a budget"
            )
        return action
    if type(cost) is float and 0.0 <= cost < math.inf:
        return action  # already what the checks below would make of it
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        raise CostError(f"driver gave a cost of type {type(cost).__name__} at turn {turn}")
    if not math.isfinite(cost) or cost < 0:
        raise CostError(f"driver gave the cost {cost!r} at turn {turn}; costs are finite and >= 0")
    return Action(word, float(cost))


class DecisionLoop:
    """The resumable state of one episode (see the module docstring)."""

    def __init__(
        self, game: Game, contract: Contract, driver: Driver, config: EpisodeConfig
    ) -> None:
        self.mode = check_mode(game, config.mode)
        if self.mode is VerificationMode.TRUSTED_RECORDER and not (
            isinstance(game, Recording) and config.seal is not None
        ):
            raise ModeError(
                f"a trusted-recorder run of {game.descriptor.id} needs a game that records a "
                "transcript and a recorder key to sign it"
            )
        self.game = game
        self.contract = contract
        self.driver = driver
        self.config = config
        descriptor = game.descriptor
        self.contract_hash = contract.hash
        self.genesis = genesis_hash(
            descriptor.id, descriptor.build.digest, self.contract_hash, seed=config.seed
        )
        self.tracker = MilestoneTracker(contract)
        self.head = self.genesis
        self.decisions: list[RawDecision] = []
        self.history: deque[HistoryEntry] = deque(maxlen=config.history or None)
        self.spent = 0.0
        self.unmeasured = 0
        self.latency_total = 0.0
        self.over: bool | None = None
        self.observation = Observation(text="")
        self.started_at = now()

    @property
    def turn(self) -> int:
        """Decisions taken so far (the last turn played)."""
        return len(self.decisions)

    def start(self) -> None:
        """Power the game on in the state the seed fixes; snapshot 0 is tracked."""
        game = self.game
        game.reset(self.config.seed)
        self.tracker.observe(game.evidence(), 0)
        self.over = game.over()
        self.observation = game.observe()

    def resume(
        self,
        inputs: Sequence[str],
        costs: Sequence[float | None],
        latencies: Sequence[float],
        *,
        head: str | None = None,
        alongside: Callable[[], None] | None = None,
    ) -> None:
        """Rebuild the state after the decisions given as columns, in one pass over the game.

        The prefix whose observations nobody needs is replayed as a verifier
        would (in one call for games that batch-replay, e.g. inside their
        worker); only the last ``history`` snapshots are stepped with
        observations (one call for games that advance in batches), so this
        costs about what a replay costs. ``head`` is the chain head the caller
        already verified for these decisions (else the chain is recomputed here).

        ``alongside`` is the caller's own work (e.g. checking a ledger): it runs
        on another thread while a game in another process replays the prefix,
        else before the replay. If it raises, the replay is waited for and its
        error propagates (also when the replay failed too) before anything else
        changes.
        """
        if self.decisions:
            raise RunError("resume rebuilds a loop that has not played yet")
        if inputs and self.mode is VerificationMode.TRUSTED_RECORDER:
            raise ModeError(
                "a trusted-recorder game gets exactly one live pass: it cannot be resumed by "
                "replaying its inputs; start a new run instead"
            )
        count = len(inputs)
        if not count == len(costs) == len(latencies):
            raise RunError(
                f"resume needs one cost and one latency per input: {count} inputs, "
                f"{len(costs)} costs, {len(latencies)} latencies"
            )
        game, keep = self.game, self.config.history
        # The first snapshot the driver's history shows (the whole log when it shows none).
        live_from = max(count - keep, 0) if keep else count
        prefix = inputs[:live_from]

        def tally() -> tuple[str, float, int, float, list[RawDecision]]:
            """Chain head, spend, unmeasured count, latency and rows (no state changes here)."""
            chained = head
            if chained is None:
                chain = ChainLinker(self.head)
                chain.extend(1, inputs, costs)
                chained = chain.head
            spent, unmeasured, latency = self.spent, self.unmeasured, self.latency_total
            for cost in costs:
                if cost is None:
                    unmeasured += 1
                else:
                    spent += cost
            for ms in latencies:
                latency += ms
            if not (math.isfinite(spent) and math.isfinite(latency)):
                raise RunError(
                    f"the {'costs' if not math.isfinite(spent) else 'latencies'} of the "
                    "decisions to resume add up past the largest finite amount"
                )
            rows = list(zip(range(1, count + 1), inputs, costs, latencies, strict=True))
            return chained, spent, unmeasured, latency, rows

        if alongside is not None and live_from and isinstance(game, OutOfProcess):
            # The replay request leaves from this thread at once (the caller's work
            # on it would hold the interpreter lock and delay it); the caller's work
            # and the tally run on another thread while this one waits for the worker.
            gate = threading.Event()

            def check() -> tuple[str, float, int, float, list[RawDecision]]:
                gate.wait()
                alongside()
                return tally()

            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="playproof-check") as pool:
                # The thread is started and parked on the gate before the replay
                # begins, so opening the gate leaves this thread holding the lock.
                checking = pool.submit(check)
                gate.set()
                try:
                    result = self._replay_prefix(prefix)
                except BaseException as failure:
                    # A problem the caller found explains a failed replay: it is reported.
                    problem = checking.exception()
                    if problem is not None:
                        raise problem from failure
                    raise
                totals = checking.result()
        else:
            if alongside is not None:
                alongside()
            totals = tally()
            result = self._replay_prefix(prefix)
        if result is not None:
            self.tracker.restore(result.verified, result.events)
        observe, history = self.tracker.observe, self.history
        shown = game.observe()
        tail = inputs[live_from:]
        snapshots = advance_many(game, tail, observe=True) if tail else ()
        turns = range(live_from + 1, count + 1)
        for turn, word, snapshot in zip(turns, tail, snapshots, strict=True):
            history.append(HistoryEntry(turn, shown.text, word))
            observe(snapshot.evidence, turn)
            assert snapshot.observation is not None
            shown = snapshot.observation
        self.head, self.spent, self.unmeasured, self.latency_total, rows = totals
        self.decisions.extend(rows)
        self.over = game.over() if not snapshots else snapshots[-1].over
        self.observation = shown

    def _replay_prefix(self, prefix: Sequence[str]) -> ReplayResult | None:
        """Replay ``prefix`` from the seed (None when empty: the game is only reset)."""
        game, seed = self.game, self.config.seed
        if prefix:
            if isinstance(game, BatchReplaying):
                return game.replay(seed, prefix, self.contract)
            return replay_in_session(game, seed, prefix, self.contract)
        game.reset(seed)
        self.tracker.observe(game.evidence(), 0)
        return None

    async def run(
        self,
        *,
        segment_end: int | None = None,
        guidance: str | None = None,
        cancel: asyncio.Event | None = None,
        on_turn: Callable[[TurnReport], None] | None = None,
    ) -> StopReason:
        """Play until a stop rule fires; ``segment_end`` is the last turn of this segment.

        On any exception the state keeps every decision already taken (a decision
        is recorded before its input reaches the game), so a caller can save it.
        """
        config, game, tracker = self.config, self.game, self.tracker
        cancel = cancel or asyncio.Event()
        cancelled = cancel.is_set
        budget = config.budget_usd
        budgeted = budget is not None
        max_turns, seed, keep_history = config.max_turns, config.seed, bool(config.history)
        stop_at_game_over = config.stop_at_game_over
        vocabulary = game.descriptor.vocabulary
        decisions, record = self.decisions, self.decisions.append
        history, remember = self.history, self.history.append
        total = len(self.contract.milestones)
        identity = identity_ids(self.contract)
        earnable = total - len(identity)
        earned = sum(1 for p in tracker.verified if p.id not in identity)
        track, clock = tracker.observe, time.perf_counter
        # Bound once: the capability checks and method lookups are per-run facts.
        advance = game.advance if isinstance(game, Advancing) else None
        step, read, is_over, look = game.step, game.evidence, game.over, game.observe
        act: Callable[..., Awaitable[Action]] = self.driver.act
        finite = math.isfinite
        chain = ChainLinker(self.head)
        link = chain.link
        # A recording game's transcript has a size a verifier can take; the game says when.
        # (Only a trusted-recorder run records one: checked in __init__, so no isinstance
        # here, which costs microseconds against a Protocol.)
        full = None
        if self.mode is VerificationMode.TRUSTED_RECORDER:
            full = cast(Recording, game).transcript_full
        spent, unmeasured, latency_total = self.spent, self.unmeasured, self.latency_total
        over, observation = self.over, self.observation
        turn = len(decisions)
        stop: StopReason
        try:
            while True:
                if stop_at_game_over and over:
                    stop = StopReason.GAME_OVER
                    break
                if turn >= max_turns:
                    stop = StopReason.TURN_LIMIT
                    break
                if budget is not None and spent >= budget:
                    stop = StopReason.BUDGET
                    break
                if segment_end is not None and turn >= segment_end:
                    stop = StopReason.SEGMENT_LIMIT
                    break
                if cancelled():
                    stop = StopReason.STOPPED
                    break
                if full is not None and full():
                    log.warning(
                        "the transcript of %s is as long as it may grow; the run stops after "
                        "turn %d so that it can still be signed and verified",
                        game.descriptor.id,
                        turn,
                    )
                    stop = StopReason.STOPPED
                    break
                turn += 1
                context = DecisionContext(
                    turn,
                    max_turns,
                    seed,
                    spent,
                    None if budget is None else max(budget - spent, 0.0),
                    vocabulary,
                    guidance,
                    cancel,
                )
                begin = clock()
                try:
                    raw = await act(observation, tuple(history) if keep_history else (), context)
                except RunError:
                    raise
                except Exception as exc:
                    raise DriverError(f"driver failed at turn {turn}: {exc}") from exc
                latency_ms = round((clock() - begin) * 1000.0, LATENCY_DECIMALS)
                action = _checked_action(raw, turn, budgeted)
                word, cost = action.input, action.cost_usd
                if cost is not None and not finite(spent + cost):
                    raise CostError(
                        f"the costs add up past the largest finite amount at turn {turn}; "
                        "no honest decision costs that much"
                    )
                if not finite(latency_total + latency_ms):
                    raise RunError(
                        f"the latencies add up past the largest finite amount at turn {turn}; "
                        "the clock cannot be trusted"
                    )
                # From here to the game step nothing can fail: the decision is
                # taken (and paid for) once it is appended.
                link(turn, word, cost)
                record((turn, word, cost, latency_ms))
                if cost is None:
                    unmeasured += 1
                else:
                    spent += cost
                latency_total += latency_ms
                if keep_history:
                    remember(HistoryEntry(turn, observation.text, word))
                if advance is not None:
                    snapshot = advance(word, observe=True)
                    evidence, now_over, seen = (
                        snapshot.evidence,
                        snapshot.over,
                        snapshot.observation,
                    )
                else:
                    step(word)
                    evidence, now_over, seen = read(), is_over(), look()
                new = track(evidence, turn)
                assert seen is not None
                over, observation = now_over, seen
                if on_turn is not None:
                    if new:
                        earned += sum(1 for m in new if m not in identity)
                    on_turn(
                        TurnReport(
                            turn,
                            max_turns,
                            word,
                            spent,
                            new,
                            len(tracker.passed),
                            total,
                            earned,
                            earnable,
                        )
                    )
        finally:
            self.head, self.spent, self.unmeasured = chain.head, spent, unmeasured
            self.latency_total = latency_total
            self.over, self.observation = over, observation
        return stop

    def pin(self) -> TargetPin:
        """The target pin of this run."""
        descriptor = self.game.descriptor
        return TargetPin(
            name=self.config.target_name,
            game_id=descriptor.id,
            build_digest=descriptor.build.digest,
            contract_hash=self.contract_hash,
            platform=descriptor.platform.family,
            verification_mode=self.mode,
            calibrated=self.config.calibrated,
        )

    def limits(self) -> Limits:
        """The declared limits of this run."""
        config = self.config
        return Limits(
            budget_usd=config.budget_usd,
            max_turns=config.max_turns,
            stop_at_game_over=config.stop_at_game_over,
        )

    def actor(self) -> Actor:
        """Who plays this run."""
        return Actor(kind=self.driver.kind, id=self.driver.id)

    def record(
        self, stop: StopReason, *, started_at: str | None = None, finished_at: str | None = None
    ) -> RunRecord:
        """The (unsigned) run record of the state as it stands."""
        config = self.config
        identity = identity_ids(self.contract)
        claimed = tuple(ClaimedMilestone(id=p.id, turn=p.turn) for p in self.tracker.verified)
        recorder = None
        if self.mode is VerificationMode.TRUSTED_RECORDER:
            game, seal = self.game, config.seal
            assert isinstance(game, Recording)  # checked in __init__
            assert seal is not None
            recorder = seal(game.transcript(self.contract_hash, config.seed))
        return RunRecord(
            target=self.pin(),
            actor=self.actor(),
            seed=self.config.seed,
            limits=self.limits(),
            decisions=_DECISIONS.validate_python(
                [
                    {"turn": t, "input": w, "cost_usd": c, "latency_ms": ms}
                    for t, w, c, ms in self.decisions
                ]
            ),
            chain_head=self.head,
            claimed=claimed,
            milestones_total=len(self.contract.milestones),
            milestones_identity=len(identity),
            identity_claimed=tuple(c.id for c in claimed if c.id in identity),
            accounting=Accounting(
                spent_usd=self.spent,
                unmeasured_decisions=self.unmeasured,
                total_latency_ms=self.latency_total,
            ),
            stop_reason=stop,
            game_over=bool(self.over),
            provenance=Provenance(
                playproof=_playproof_version(),
                python=platform.python_version(),
                libraries=dict(config.libraries),
                driver=provenance_of(self.driver),
                roms=dict(config.roms) if config.roms is not None else None,
                source=config.source,
                settings=config.settings,
            ),
            started_at=started_at or self.started_at,
            finished_at=finished_at or now(),
            recorder=recorder,
        )
