"""What the pages show, built from the services (no HTTP here): the page models.

Routes call these with a read-only session and hand the result to a
template. Record values are data: templates escape them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from playproof.core.chain import Decision
from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord
from playproof.service.checks import GroupResult
from playproof.service.deployments.services import list_targets
from playproof.service.leaderboards.services import BoardPage
from playproof.service.problems import Problem
from playproof.service.proofs.models import ProofDocument
from playproof.service.runs.models import Run
from playproof.service.runs.services import signed_record
from playproof.service.web.frames import FrameIndex, cached_index
from playproof.service.web.plots import series_plot, timeline_plot
from playproof.service.web.policy import ACTIONS_PAGE, PolicyView
from playproof.targets import get_target

__all__ = [
    "DECISIONS_PAGE",
    "BoardView",
    "RunView",
    "TargetView",
    "board_view",
    "decisions_shown",
    "run_view",
    "target_views",
]

DECISIONS_PAGE = ACTIONS_PAGE
"""Decisions a run page lists (``?page=N``); its plots and totals cover every decision."""


@dataclass(frozen=True)
class TargetView:
    """One packaged target as the targets page lists it."""

    name: str
    platform: str
    build_digest: str
    calibration: str
    reason: str


def _separation_note(name: str) -> str:
    try:
        return get_target(name).spec.separation_note
    except Exception:  # a target that left the registry keeps its stored verdict
        return ""


def target_views(session: Session) -> list[TargetView]:
    """Every packaged target the service knows, with its calibration verdict and the reason."""
    return [
        TargetView(
            name=t.name,
            platform=t.platform,
            build_digest=t.build_digest,
            calibration=t.calibration,
            reason=_separation_note(t.name) if t.calibration != "separates" else "",
        )
        for t in list_targets(session)
    ]


@dataclass(frozen=True)
class BoardLine:
    """A leaderboard row with the agent that played it."""

    rank: int
    run_id: str
    agent: str
    earned: int
    earnable: int
    cost_usd: float | None
    turns: int
    seed: int
    submitted_at: datetime


@dataclass(frozen=True)
class BoardView:
    """A page of a leaderboard as shown: rows, paging, the column it is sorted by."""

    target: str
    total: int
    page: int
    pages: int
    sort: str
    rows: list[BoardLine]

    @property
    def sort_label(self) -> str:
        """The order the board is shown in, as a person reads it."""
        return SORT_LABELS.get(self.sort, self.sort)


SORT_LABELS = {
    "rank": "rank",
    "cost": "cost (lowest first, unmeasured last)",
    "turns": "turns (fewest first)",
    "submitted": "upload time (oldest first)",
    "agent": "agent (A to Z)",
}
"""How a page names each whole-board order of the service (``leaderboards.SORTS``)."""


def _agents(session: Session, run_ids: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for run in session.scalars(select(Run).where(Run.id.in_(run_ids))):
        record = signed_record(run)
        found[run.id] = f"{record.actor.kind}:{record.actor.id}" if record else "unknown"
    return found


def board_view(session: Session, board: BoardPage, sort: str) -> BoardView:
    """The rows of ``board`` (already in ``sort`` order over the whole board) with their agents.

    The agent is the stored column; only a row without one has its record opened.
    """
    agents = _agents(session, [row.run_id for row in board.rows if row.agent is None])
    lines = [
        BoardLine(
            rank=row.rank,
            run_id=row.run_id,
            agent=row.agent or agents.get(row.run_id, "unknown"),
            earned=row.earned,
            earnable=row.earnable,
            cost_usd=row.cost_usd,
            turns=row.turns,
            seed=row.seed,
            submitted_at=row.submitted_at,
        )
        for row in board.rows
    ]
    pages = max(1, -(-board.total // board.limit))
    return BoardView(
        target=board.target,
        total=board.total,
        page=board.offset // board.limit + 1,
        pages=pages,
        sort=sort,
        rows=lines,
    )


@dataclass(frozen=True)
class RunView:
    """Everything the run page (the proof card) shows."""

    proof: ProofDocument
    record: RunRecord
    marks: list[tuple[str, int]]
    marks_source: str
    frames: FrameIndex | None
    timeline: object
    cost_plot: object
    latency_plot: object
    failed_checks: list[str] = field(default_factory=list)
    policy: PolicyView | None = None
    decisions: tuple[Decision, ...] = ()
    """The decisions of page ``page`` only (at most DECISIONS_PAGE), in turn order."""
    decision_count: int = 0
    """Every decision of the run."""
    first: int = 0
    """The 1-based position of the first decision shown (0 when there is none)."""
    page: int = 1
    pages: int = 1

    @property
    def groups(self) -> list[GroupResult]:
        """The check groups shown: the proof document's, and any the policy section added."""
        return self.policy.groups if self.policy is not None else list(self.proof.cats)


def decisions_shown(count: int, page: int) -> range:
    """The 0-based positions of the decisions page ``page`` shows of ``count``.

    :class:`Problem` 404 for a page past the last (a run without decisions has one, empty).
    """
    pages = max(1, -(-count // DECISIONS_PAGE))
    if page > pages:
        raise Problem(404, "unknown-page", f"page {page} of a run with {pages} pages of decisions")
    first = (page - 1) * DECISIONS_PAGE
    return range(first, min(first + DECISIONS_PAGE, count))


def run_view(
    proof: ProofDocument,
    record: RunRecord,
    frames_cache: Path,
    policy: PolicyView | None = None,
    page: int = 1,
) -> RunView:
    """The proof card of a run: its proof document, its record, the plots (and its policy).

    The decisions of page ``page`` are listed (:class:`Problem` 404 past the
    last page); the plots are drawn from the record's columns and cover
    every decision, as do the totals (which are the proof document's).
    """
    log = record.log
    count = len(log)
    shown = decisions_shown(count, page)
    frames = cached_index(frames_cache, proof.evidence.record_digest)
    if frames is not None:
        marks = [(m.id, m.turn) for m in frames.verified]
        source = "the server's replay"
        diverged = frames.diverged_at
    else:
        verified = set(proof.run.verified_milestones)
        # A record may list one milestone any number of times: the timeline marks
        # each verified milestone once, at its first claim, so it stays as small
        # as the contract whatever the record holds.
        first: dict[str, int] = {}
        for claim in record.claimed:
            if claim.id in verified:
                first.setdefault(claim.id, claim.turn)
        marks = list(first.items())
        source = (
            "the record (open the replay viewer to recompute them)"
            if proof.run.verification_mode == VerificationMode.REPLAY.value
            else "the record, checked against what the verdict trusts (there is no replay)"
        )
        diverged = None
    failed = [
        f"{group.group}/{check.id}"
        for group in proof.cats
        for check in group.checks
        if not check.passed
    ]
    return RunView(
        proof=proof,
        record=record,
        marks=marks,
        marks_source=source,
        frames=frames,
        timeline=timeline_plot(count, marks, diverged_at=diverged),
        cost_plot=series_plot(log.costs_usd, title="Cost per decision", unit="USD", plot_id="cost"),
        latency_plot=series_plot(
            log.latencies_ms, title="Latency per decision", unit="ms", plot_id="latency"
        ),
        failed_checks=failed,
        policy=policy,
        decisions=log[shown.start : shown.stop],
        decision_count=count,
        first=shown.start + 1 if shown else 0,
        page=page,
        pages=max(1, -(-count // DECISIONS_PAGE)),
    )
