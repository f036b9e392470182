"""Campaigns: one episode played in segments, steered between them, saved and resumable.

A campaign runs the same decision loop as a single episode, stopping at
segment boundaries. After every segment the ledger is saved atomically, a
:class:`SegmentReport` is handed to ``on_segment``, and (when play goes on)
the analyst and steering hooks are asked for guidance or a stop. When the
ledger file exists the campaign resumes: it checks the ledger against itself
and against this run, replays the recorded inputs from the seed on the live
game, checks that replay reproduces the saved milestones, and continues. A
resumed campaign has the same chain head, milestones, spend, turns and inputs
as a continuous one with the same driver, seed and limits (drivers whose
choices depend only on what they are shown: observation, text history and
context).

Cancellation (the ``cancel`` event), Ctrl-C and driver errors save the
decisions already taken and mark the segment interrupted.

A campaign with a ledger file needs the campaign's key (``ledger_key``, a
``playproof.sign.SigningKey`` or anything with its ``key_id``, ``sign`` and
``verifying_key``): every save is signed with it, and a resume refuses a ledger
that this key did not sign or that was changed since. While it plays it holds
the ledger's lock (see ``hold_ledger``): a second campaign on the same file is
refused rather than left to overwrite the first one's segments.

Every older copy of a ledger is signed too, so with ``guard`` (a folder out of
the agent's reach) a note of the campaign's last save is kept there and a
resume refuses a ledger older than it (see ``playproof.engine._guard``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from playproof.core.agent import Driver
from playproof.core.contract import Contract
from playproof.core.game import Game
from playproof.core.record import ClaimedMilestone, RunRecord, StopReason
from playproof.core.score import identity_ids
from playproof.engine._episode import close_driver
from playproof.engine._guard import (
    CampaignState,
    campaign_id,
    hold_campaign,
    open_guard,
    read_state,
    rollback_problems,
    state_of,
    write_state,
)
from playproof.engine._ledger import (
    AnalysisEntry,
    Ledger,
    LedgerDecisions,
    LedgerSegment,
    LedgerSigner,
    SegmentStatus,
    SteeringEntry,
    hold_ledger,
    inputs_digest,
    ledger_content_problems,
    ledger_structure_problems,
    load_ledger,
    run_mismatches,
    save_ledger,
    still_saved,
)
from playproof.engine._loop import DecisionLoop, EpisodeConfig, TurnReport, now
from playproof.engine._segments import (
    DEFAULT_RECENT,
    Analyst,
    SegmentReport,
    SteeringHook,
    TrajectoryStep,
    ask_analyst,
    ask_steering,
    next_guidance,
)
from playproof.errors import LedgerError, RunError

__all__ = ["CampaignResult", "run_campaign"]


@dataclass(frozen=True)
class CampaignResult:
    """Where a campaign call left off: finished (with a record), paused or interrupted."""

    status: Literal["finished", "paused", "interrupted"]
    ledger: Ledger
    record: RunRecord | None
    reports: tuple[SegmentReport, ...]
    """The reports of the segments played by this call."""


class _Campaign:
    """The ledger side of a campaign: segments, hook answers, guidance, saving."""

    def __init__(
        self,
        loop: DecisionLoop,
        segment_turns: int,
        path: Path | None,
        key: LedgerSigner | None,
        recent: int,
        guard: Path | None = None,
    ) -> None:
        self.loop = loop
        self.segment_turns = segment_turns
        self.path = path
        self.key = key
        self.guard = guard
        """The guard folder the campaign's last save is noted in (None: no guard)."""
        self.recent = recent
        self.covered = 0
        """Turns the saved segments cover (the loop may hold more while a segment plays)."""
        self.segments: list[LedgerSegment] = []
        self.analyses: list[AnalysisEntry] = []
        self.steering: list[SteeringEntry] = []
        self.guidance = loop.config.guidance
        self.started_at = loop.started_at
        self.stop: StopReason | None = None
        self.updated_at = now()
        self.saved_columns = LedgerDecisions.model_construct()
        """The columns of the turns last saved or adopted (columns() extends them)."""

    def adopt(self, saved: Ledger) -> None:
        """Take over a saved ledger, after checking it against this run and by replay.

        The ledger's own consistency (digests, spend, chain heads: a pass over
        every decision) is checked while a game in another process replays the
        inputs, so for worker games it costs no extra time.
        """
        loop = self.loop
        where = str(self.path)
        # What disagrees with this run first (cheap, and it decides whether to replay at all).
        mismatches = run_mismatches(
            saved,
            target=loop.pin(),
            actor=loop.actor(),
            seed=loop.config.seed,
            limits=loop.limits(),
        ) + ledger_structure_problems(saved)
        if mismatches:
            raise LedgerError(where, mismatches)

        def check_content() -> None:
            problems = ledger_content_problems(saved)
            if problems:
                raise LedgerError(where, problems)

        columns = saved.decisions
        # The chain is checked against the ledger's heads by check_content.
        loop.resume(
            columns.inputs,
            columns.costs_usd,
            columns.latencies_ms,
            head=saved.chain_head,
            alongside=check_content,
        )
        replayed = tuple(ClaimedMilestone(id=p.id, turn=p.turn) for p in loop.tracker.verified)
        problems = []
        if replayed != saved.verified:
            problems.append(
                f"the ledger's verified milestones are {_milestones(saved.verified)}, "
                f"replaying its inputs verifies {_milestones(replayed)}"
            )
        if saved.finished and saved.game_over != bool(loop.over):
            problems.append(f"the ledger says game_over={saved.game_over}, replay disagrees")
        if problems:
            raise LedgerError(where, problems)
        self.covered = len(saved.decisions)
        self.saved_columns = saved.decisions
        self.segments = list(saved.segments)
        self.analyses = list(saved.analyses)
        self.steering = list(saved.steering)
        self.guidance = saved.guidance
        self.started_at = saved.started_at
        self.updated_at = saved.updated_at
        self.stop = saved.stop_reason

    def ledger(self) -> Ledger:
        """The ledger of the state as it stands."""
        loop = self.loop
        return Ledger(
            target=loop.pin(),
            actor=loop.actor(),
            seed=loop.config.seed,
            limits=loop.limits(),
            segment_turns=self.segment_turns,
            decisions=self.columns(),
            segments=tuple(self.segments),
            analyses=tuple(self.analyses),
            steering=tuple(self.steering),
            guidance=self.guidance,
            spent_usd=loop.spent,
            unmeasured_decisions=loop.unmeasured,
            chain_head=loop.head,
            verified=tuple(ClaimedMilestone(id=p.id, turn=p.turn) for p in loop.tracker.verified),
            finished=self.stop is not None,
            stop_reason=self.stop,
            game_over=bool(self.loop.over),
            started_at=self.started_at,
            updated_at=self.updated_at,
        )

    def columns(self) -> LedgerDecisions:
        """The decisions the saved segments cover, as the ledger's columns.

        The columns of the last call (or of the adopted ledger) are kept and
        only the turns decided since are added, so a save after a resume of
        millions of decisions does not rebuild them.
        """
        known = self.saved_columns
        done = len(known)
        if done > self.covered:  # never the case: covered only grows
            known, done = LedgerDecisions.model_construct(), 0
        if done == self.covered:
            return known
        fresh = self.loop.decisions[done : self.covered]
        columns = LedgerDecisions.model_construct(
            inputs=known.inputs + tuple(w for _, w, _, _ in fresh),
            costs_usd=known.costs_usd + tuple(c for _, _, c, _ in fresh),
            latencies_ms=known.latencies_ms + tuple(ms for _, _, _, ms in fresh),
        )
        self.saved_columns = columns
        return columns

    def save(self) -> Ledger:
        """Save the ledger (when the campaign has a file) and return it."""
        self.updated_at = now()
        ledger = self.ledger()
        if self.path is not None and self.key is not None:
            save_ledger(ledger, self.path, self.key)
            # Only once the ledger is durable: the state never runs ahead of it.
            self.note_save(ledger)
        return ledger

    def note_save(self, ledger: Ledger, noted: CampaignState | None = None) -> None:
        """Write the guard's state for the save ``ledger`` (unless it already says ``noted``)."""
        if self.guard is None or self.key is None:
            return
        state = state_of(ledger, self.key.key_id)
        if state != noted:
            write_state(self.guard, state, str(self.path))

    def close_segment(
        self, first: int, started_at: str, status: SegmentStatus, stop: StopReason | None
    ) -> LedgerSegment | None:
        """Record the segment that played turns ``first``.. (None when it played none)."""
        loop = self.loop
        last = loop.turn
        if last < first:
            return None
        index = len(self.segments)
        fresh = loop.decisions[first - 1 : last]
        self.covered = last
        spent = 0.0
        for _, _, cost, _ in fresh:
            if cost is not None:
                spent += cost
        low = 0 if index == 0 else first
        segment = LedgerSegment(
            index=index,
            first_turn=first,
            last_turn=last,
            status=status,
            stop_reason=stop,
            guidance=self.guidance,
            inputs_digest=inputs_digest([w for _, w, _, _ in fresh]),
            spent_usd=spent,
            chain_head=loop.head,
            new_milestones=tuple(p.id for p in loop.tracker.verified if low <= p.turn <= last),
            started_at=started_at,
            finished_at=now(),
        )
        self.segments.append(segment)
        return segment

    def report(self, segment: LedgerSegment) -> SegmentReport:
        """The report on ``segment`` as the state stands."""
        loop = self.loop
        budget = loop.config.budget_usd
        recent = list(loop.history)[-self.recent :] if self.recent else []
        return SegmentReport(
            segment=segment.index,
            status=segment.status,
            stop_reason=segment.stop_reason,
            first_turn=segment.first_turn,
            last_turn=segment.last_turn,
            turns=loop.turn,
            max_turns=loop.config.max_turns,
            spent_usd=loop.spent,
            budget_usd=budget,
            remaining_usd=None if budget is None else max(budget - loop.spent, 0.0),
            new_milestones=segment.new_milestones,
            verified=tuple(ClaimedMilestone(id=p.id, turn=p.turn) for p in loop.tracker.verified),
            milestones_total=len(loop.contract.milestones),
            identity_milestones=tuple(sorted(identity_ids(loop.contract))),
            observation=loop.observation.text,
            trajectory=tuple(
                TrajectoryStep(turn=h.turn, observation=h.observation, input=h.input)
                for h in recent
            ),
            latencies_ms=tuple(
                ms for _, _, _, ms in loop.decisions[segment.first_turn - 1 : segment.last_turn]
            ),
            guidance=segment.guidance,
            finished=self.stop is not None,
        )

    async def consult(self, analyst: Analyst | None, steering: SteeringHook | None) -> bool:
        """Ask the hooks about the last segment; True when one of them stopped the campaign."""
        segment = self.segments[-1]
        report = self.report(segment)
        analysis = await ask_analyst(analyst, report) if analyst is not None else None
        steer = await ask_steering(steering, report) if steering is not None else None
        if analysis is not None:
            self.analyses.append(AnalysisEntry(segment=segment.index, analysis=analysis))
        if steer is not None:
            self.steering.append(SteeringEntry(segment=segment.index, steer=steer))
        self.guidance, stopped_by = next_guidance(self.guidance, analysis, steer)
        self.segments[-1] = segment.model_copy(update={"consulted": True, "stopped_by": stopped_by})
        if stopped_by is not None:
            self.stop = StopReason.STOPPED
        return stopped_by is not None

    def pending(self) -> bool:
        """True when the last segment ended at its limit and the hooks have not answered yet."""
        if not self.segments or self.stop is not None:
            return False
        last = self.segments[-1]
        return last.stop_reason is StopReason.SEGMENT_LIMIT and not last.consulted


def _check_guard(
    guard: Path,
    ledger: Path,
    key: LedgerSigner,
    saved: Ledger | None,
    loop: DecisionLoop,
    held: contextlib.ExitStack,
) -> CampaignState | None:
    """Hold the campaign's lock in ``guard`` and check ``saved`` against its last save.

    Returns the state noted for the campaign (None when there is none yet).
    """
    where = str(ledger)
    open_guard(guard, where)
    if saved is None:
        # A new campaign: its id is new (it holds its start time), so nothing is noted yet.
        ident = campaign_id(loop.pin(), loop.actor(), loop.config.seed, loop.started_at, key.key_id)
        held.enter_context(hold_campaign(guard, ident, where))
        return None
    ident = campaign_id(saved.target, saved.actor, saved.seed, saved.started_at, key.key_id)
    held.enter_context(hold_campaign(guard, ident, where))
    state = read_state(guard, ident, where)
    if state is not None:
        problems = rollback_problems(saved, state)
        if problems:
            raise LedgerError(where, problems)
    return state


def _milestones(claimed: tuple[ClaimedMilestone, ...]) -> str:
    return "[" + ", ".join(f"{c.id}@{c.turn}" for c in claimed) + "]"


async def run_campaign(
    game: Game,
    contract: Contract,
    driver: Driver,
    config: EpisodeConfig,
    *,
    segment_turns: int,
    ledger: Path | None = None,
    ledger_key: LedgerSigner | None = None,
    analyst: Analyst | None = None,
    steering: SteeringHook | None = None,
    segments: int | None = None,
    saved: Ledger | None = None,
    cancel: asyncio.Event | None = None,
    on_turn: Callable[[TurnReport], None] | None = None,
    on_segment: Callable[[SegmentReport], None] | None = None,
    recent: int = DEFAULT_RECENT,
    guard: Path | None = None,
) -> CampaignResult:
    """Play (or resume) a campaign of ``segment_turns``-turn segments; see the module docstring.

    ``ledger`` is the file saved after every segment (resumed from when it
    exists; None keeps the campaign in memory), signed at every save with
    ``ledger_key`` (required with a file; a resume refuses a ledger this key
    did not sign). ``segments`` caps how many segments this call plays before
    it pauses. ``on_segment`` sees each report after its ledger is saved.

    ``saved`` is the ledger a caller already read from ``ledger`` with
    :func:`load_ledger` (under ``ledger_key.verifying_key``), so the file is
    not read and parsed twice; it is checked against itself, this run and
    replay exactly as a ledger read here would be.

    ``guard`` is a folder out of the agent's reach (the command line uses
    ``<key dir>/campaigns``, made with mode 0700) where a note of the
    campaign's last save is written after every save of ``ledger``. A resume
    then refuses (LedgerError) a ledger older than that save, or one that
    went another way from it, such as an older signed copy put back between
    two calls; a ledger ahead of the note is accepted. A campaign without a
    note yet resumes as before and is noted from then on. While it plays, the
    call holds the campaign's lock in ``guard``, so two copies of its ledger
    cannot be played at once.
    """
    if ledger is not None and ledger_key is None:
        raise RunError(
            "a campaign saved to a ledger file needs ledger_key (a playproof.sign.SigningKey) "
            "to sign every save; resume with the same key"
        )
    if segment_turns < 1:
        raise RunError(f"segment_turns must be >= 1, not {segment_turns}")
    if segments is not None and segments < 0:
        raise RunError(f"segments must be >= 0, not {segments}")
    if saved is not None and ledger is None:
        raise RunError("saved is the ledger read from the ledger file: pass that file as ledger")
    if guard is not None and ledger is None:
        raise RunError("guard notes the saves of a ledger file: pass that file as ledger")
    cancel = cancel or asyncio.Event()
    loop = DecisionLoop(game, contract, driver, config)
    campaign = _Campaign(loop, segment_turns, ledger, ledger_key, max(recent, 0), guard)
    reports: list[SegmentReport] = []
    status: Literal["finished", "paused", "interrupted"] = "paused"
    held = contextlib.ExitStack()
    try:
        if ledger is not None:
            # One campaign at a time: two saving one file would overwrite each other's segments.
            held.enter_context(hold_ledger(ledger))
            if saved is not None and not still_saved(ledger, saved):
                raise LedgerError(
                    str(ledger),
                    [
                        "it changed since it was read (another campaign saved it meanwhile); "
                        "read it again to resume from its latest save"
                    ],
                )
        if saved is None and ledger is not None and ledger_key is not None and ledger.exists():
            saved = load_ledger(ledger, ledger_key.verifying_key, consistent=False)
        noted: CampaignState | None = None
        if guard is not None and ledger is not None and ledger_key is not None:
            noted = _check_guard(guard, ledger, ledger_key, saved, loop, held)
        if saved is not None:
            campaign.adopt(saved)
            # A ledger from before the guard, or ahead of its note, is noted at once.
            campaign.note_save(saved, noted)
        else:
            loop.start()
        played = 0
        while campaign.stop is None:
            if campaign.pending():
                stopped = await campaign.consult(analyst, steering)
                campaign.save()  # the hooks' answers are kept before play goes on
                if stopped:
                    break
            if (segments is not None and played >= segments) or cancel.is_set():
                status = "interrupted" if cancel.is_set() else "paused"
                break
            first, started_at = loop.turn + 1, now()
            try:
                stop = await loop.run(
                    segment_end=loop.turn + segment_turns,
                    guidance=campaign.guidance,
                    cancel=cancel,
                    on_turn=on_turn,
                )
            except BaseException:
                # Ctrl-C, cancellation of the task, or a driver error: keep what was decided.
                if campaign.close_segment(first, started_at, SegmentStatus.INTERRUPTED, None):
                    campaign.save()
                raise
            if stop is StopReason.STOPPED:
                segment = campaign.close_segment(first, started_at, SegmentStatus.INTERRUPTED, None)
                status = "interrupted"
            else:
                if stop is not StopReason.SEGMENT_LIMIT:
                    campaign.stop = stop
                segment = campaign.close_segment(first, started_at, SegmentStatus.COMPLETE, stop)
            campaign.save()
            played += 1
            if segment is not None:
                report = campaign.report(segment)
                reports.append(report)
                if on_segment is not None:
                    on_segment(report)
            if status == "interrupted":
                break
    finally:
        try:
            await close_driver(driver)
        finally:
            held.close()
    final = campaign.ledger()
    if campaign.stop is None:
        return CampaignResult(status, final, None, tuple(reports))
    record = loop.record(campaign.stop, started_at=final.started_at, finished_at=final.updated_at)
    return CampaignResult("finished", final, record, tuple(reports))
