"""The one decision loop: play a game with a driver under declared limits.

Before each decision the loop checks, in order: game over (when armed), the
turn limit, the budget. A decision whose cost overshoots the budget is applied
and recorded at full cost, then the run stops. Costs are what the driver
measured (``None`` = unmeasured; refused under a budget); latency is the wall
time around the driver call. A driver error, an empty or oversized input, or
a negative or non-finite cost ends the run with a typed error and no record.
"""

from __future__ import annotations

import asyncio
import math
import platform
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata

from pydantic import TypeAdapter

from playproof.core.agent import Action, DecisionContext, Driver, HistoryEntry, provenance_of
from playproof.core.chain import (
    MAX_INPUT_BYTES,
    Decision,
    canonical_decision,
    genesis_hash,
    link_hash,
)
from playproof.core.contract import Contract
from playproof.core.game import Advancing, Game, Snapshot, VerificationMode
from playproof.core.observation import Observation
from playproof.core.record import (
    Accounting,
    Actor,
    ClaimedMilestone,
    Limits,
    Provenance,
    RunRecord,
    StopReason,
    TargetPin,
)
from playproof.core.tracker import MilestoneTracker
from playproof.errors import CostError, DriverError, InputError, ModeError, RunError

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_MAX_TURNS",
    "EpisodeConfig",
    "TurnReport",
    "check_mode",
    "play",
]

# Decisions are kept as plain tuples on the hot path and validated in one batch.
_DECISIONS: TypeAdapter[tuple[Decision, ...]] = TypeAdapter(tuple[Decision, ...])

DEFAULT_MAX_TURNS = 1000
DEFAULT_HISTORY = 32
"""How many past turns (text only) a driver is shown."""


@dataclass(frozen=True, slots=True)
class TurnReport:
    """Progress after one decision, for displays: never contains evidence values."""

    turn: int
    max_turns: int
    input: str
    spent_usd: float
    new_milestones: tuple[str, ...]
    verified: int
    milestones_total: int


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
    target_name: str | None = None

    def __post_init__(self) -> None:
        if self.budget_usd is not None and not (
            math.isfinite(self.budget_usd) and self.budget_usd >= 0
        ):
            raise RunError(f"budget must be a finite number >= 0, not {self.budget_usd}")
        if self.max_turns < 0:
            raise RunError(f"max_turns must be >= 0, not {self.max_turns}")
        if self.history < 0:
            raise RunError(f"history must be >= 0, not {self.history}")


def _playproof_version() -> str:
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
    try:
        size = len(word.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InputError(f"driver gave an input that is not valid Unicode at turn {turn}") from exc
    if size > MAX_INPUT_BYTES:
        raise InputError(f"driver gave an input over {MAX_INPUT_BYTES} bytes at turn {turn}")
    if cost is None:
        if budgeted:
            raise CostError(
                f"the driver could not measure the cost of turn {turn}, so a budget cannot be "
                "enforced; declare pricing for the driver or run without a budget"
            )
        return action
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        raise CostError(f"driver gave a cost of type {type(cost).__name__} at turn {turn}")
    if not math.isfinite(cost) or cost < 0:
        raise CostError(f"driver gave the cost {cost!r} at turn {turn}; costs are finite and >= 0")
    return Action(word, float(cost))


async def play(
    game: Game,
    contract: Contract,
    driver: Driver,
    config: EpisodeConfig,
    *,
    cancel: asyncio.Event | None = None,
    on_turn: Callable[[TurnReport], None] | None = None,
) -> RunRecord:
    """Play one episode of ``game`` with ``driver`` and return its (unsigned) record."""
    mode = check_mode(game, config.mode)
    descriptor = game.descriptor
    contract_hash = contract.hash
    started_at = datetime.now(UTC).isoformat()
    cancel = cancel or asyncio.Event()
    tracker = MilestoneTracker(contract)
    budget = config.budget_usd
    head = genesis_hash(descriptor.id, descriptor.build.digest, contract_hash, seed=config.seed)
    decisions: list[tuple[int, str, float | None, float]] = []
    history: deque[HistoryEntry] = deque(maxlen=config.history or None)
    spent = 0.0
    unmeasured = 0
    latency_total = 0.0
    total = len(contract.milestones)
    advancing = isinstance(game, Advancing)

    game.reset(config.seed)
    tracker.observe(game.evidence(), 0)
    over = game.over()
    observation: Observation = game.observe()
    turn = 0
    stop: StopReason
    act: Callable[..., Awaitable[Action]] = driver.act
    try:
        while True:
            if config.stop_at_game_over and over:
                stop = StopReason.GAME_OVER
                break
            if turn >= config.max_turns:
                stop = StopReason.TURN_LIMIT
                break
            if budget is not None and spent >= budget:
                stop = StopReason.BUDGET
                break
            if cancel.is_set():
                stop = StopReason.STOPPED
                break
            turn += 1
            context = DecisionContext(
                turn=turn,
                max_turns=config.max_turns,
                seed=config.seed,
                spent_usd=spent,
                remaining_usd=None if budget is None else max(budget - spent, 0.0),
                vocabulary=descriptor.vocabulary,
                guidance=config.guidance,
                cancel=cancel,
            )
            begin = time.perf_counter()
            try:
                raw = await act(observation, tuple(history) if config.history else (), context)
            except RunError:
                raise
            except Exception as exc:
                raise DriverError(f"driver failed at turn {turn}: {exc}") from exc
            latency_ms = (time.perf_counter() - begin) * 1000.0
            action = _checked_action(raw, turn, budget is not None)
            head = link_hash(
                head, canonical_decision(turn, action.input, action.cost_usd)
            )
            decisions.append((turn, action.input, action.cost_usd, latency_ms))
            if action.cost_usd is None:
                unmeasured += 1
            else:
                spent += action.cost_usd
            latency_total += latency_ms
            if config.history:
                history.append(HistoryEntry(turn, observation.text, action.input))
            if advancing:
                snapshot = game.advance(action.input, observe=True)  # type: ignore[attr-defined]
            else:
                game.step(action.input)
                snapshot = Snapshot(game.evidence(), game.over(), game.observe())
            new = tracker.observe(snapshot.evidence, turn)
            over = snapshot.over
            assert snapshot.observation is not None
            observation = snapshot.observation
            if on_turn is not None:
                on_turn(
                    TurnReport(
                        turn, config.max_turns, action.input, spent, new, len(tracker.passed), total
                    )
                )
    finally:
        aclose = getattr(driver, "aclose", None)
        if callable(aclose):
            await aclose()

    return RunRecord(
        target=TargetPin(
            name=config.target_name,
            game_id=descriptor.id,
            build_digest=descriptor.build.digest,
            contract_hash=contract_hash,
            platform=descriptor.platform.family,
            verification_mode=mode,
        ),
        actor=Actor(kind=driver.kind, id=driver.id),
        seed=config.seed,
        limits=Limits(
            budget_usd=budget,
            max_turns=config.max_turns,
            stop_at_game_over=config.stop_at_game_over,
        ),
        decisions=_DECISIONS.validate_python(
            [{"turn": t, "input": w, "cost_usd": c, "latency_ms": ms} for t, w, c, ms in decisions]
        ),
        chain_head=head,
        claimed=tuple(ClaimedMilestone(id=p.id, turn=p.turn) for p in tracker.verified),
        milestones_total=total,
        accounting=Accounting(
            spent_usd=spent, unmeasured_decisions=unmeasured, total_latency_ms=latency_total
        ),
        stop_reason=stop,
        game_over=bool(over),
        provenance=Provenance(
            playproof=_playproof_version(),
            python=platform.python_version(),
            libraries=dict(config.libraries),
            driver=provenance_of(driver),
        ),
        started_at=started_at,
        finished_at=datetime.now(UTC).isoformat(),
    )
