"""Leaderboards and challenges (no HTTP here).

A board lists verified runs that are in the transparency log and labelled
``benchmarked_canonical_template``: customized instances never appear on a
public board. Rows are ranked by earned over earnable (descending), then cost
(ascending; a run with an unpriced decision has no measured cost and ranks
after every measured one), then turns (ascending). Rows equal on all three
share a rank, and the next rank skips (1, 1, 3).
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from sqlalchemy import ColumnElement, Select, and_, case, func, select
from sqlalchemy.orm import Session

from playproof.errors import ServiceError
from playproof.service.deployments.labels import TrustLabel
from playproof.service.deployments.models import Target
from playproof.service.leaderboards.models import Challenge
from playproof.service.log.models import LogLeaf
from playproof.service.log.services import as_utc
from playproof.service.problems import Problem
from playproof.service.runs.models import Run, RunStatus

__all__ = [
    "DEFAULT_PAGE",
    "MAX_CHALLENGE_BUDGET_USD",
    "MAX_CHALLENGE_SEEDS",
    "MAX_PAGE",
    "MAX_OFFSET",
    "SORTS",
    "SortName",
    "BoardPage",
    "BoardRow",
    "add_challenge",
    "challenge_leaderboard",
    "challenge_seeds",
    "get_challenge",
    "leaderboard",
    "list_challenges",
]

DEFAULT_PAGE = 50
"""Rows a board page holds when the caller does not say."""
MAX_PAGE = 200
"""The most rows one page may hold."""
MAX_OFFSET = 1_000_000
"""The furthest a page may start."""
MAX_CHALLENGE_SEEDS = 1000
"""The most seeds a challenge may name."""
MAX_CHALLENGE_BUDGET_USD = 1_000_000.0

SortName = Literal["rank", "cost", "turns", "submitted", "agent"]
"""A whole-board order (see :data:`SORTS`)."""
SORTS: tuple[str, ...] = get_args(SortName)
"""Orders a board may be read in, each over the whole board: the ranking (default), cost
(unmeasured last), turns, upload time, agent (by code point on every database; a run with
no stored agent last); ties always fall back to the ranking, then upload time and run id,
so the order is total and pages never overlap."""

_CHALLENGE_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True)
class BoardRow:
    """One ranked run: the ranking keys, what the run was, and where its proof is."""

    rank: int
    run_id: str
    target: str
    seed: int
    earned: int
    earnable: int
    score_ratio: float
    cost_usd: float | None
    """None: a decision was unpriced, so the cost is not measured."""
    turns: int
    budget_usd: float | None
    submitted_at: datetime
    proof_url: str
    agent: str | None = None
    """The record's actor as ``KIND:ID``; None for a run whose record could not be read."""


@dataclass(frozen=True)
class BoardPage:
    """A page of a board: its rows, the total row count, and where the page starts."""

    target: str
    total: int
    limit: int
    offset: int
    rows: list[BoardRow]


def _page_bounds(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise Problem(422, "bad-page", f"limit is 1 to {MAX_PAGE}, not {limit}")
    if not 0 <= offset <= MAX_OFFSET:
        raise Problem(422, "bad-page", f"offset is 0 to {MAX_OFFSET}, not {offset}")


def _check_sort(sort: str) -> None:
    if sort not in SORTS:
        raise Problem(422, "bad-sort", f"sort is one of {', '.join(SORTS)}, not {sort[:32]!r}")


def _eligible(*conditions: object) -> Select[str]:
    """The ids of the runs a public board may list, filtered further by ``conditions``."""
    logged = select(LogLeaf.run_id).where(LogLeaf.run_id == Run.id).exists()
    return select(Run.id).where(
        Run.status == RunStatus.VERIFIED.value,
        Run.trust_label == TrustLabel.CANONICAL.value,
        Run.score_ratio.is_not(None),
        logged,
        *conditions,  # type: ignore[arg-type]
    )


def _agent_by_code_point(session: Session) -> ColumnElement[Any]:
    """``runs.agent`` compared by code point: PostgreSQL's default collation follows the
    locale, SQLite's compares bytes, and a board must read the same on both."""
    agent = Run.agent.expression
    return agent.collate("C") if session.get_bind().dialect.name == "postgresql" else agent


def _ranked(
    session: Session, target: str, limit: int, offset: int, *where: object, sort: str = "rank"
) -> BoardPage:
    _page_bounds(limit, offset)
    _check_sort(sort)
    unmeasured = case((Run.cost_usd.is_(None), 1), else_=0)
    cost = func.coalesce(Run.cost_usd, 0.0)
    order = (Run.score_ratio.desc(), unmeasured, cost, Run.decision_count)
    rank = func.rank().over(order_by=order).label("rank")
    first: tuple[Any, ...] = {
        "rank": (),
        "cost": (unmeasured, cost),
        "turns": (Run.decision_count,),
        "submitted": (Run.created_at,),
        "agent": (case((Run.agent.is_(None), 1), else_=0), _agent_by_code_point(session)),
    }[sort]
    ids = _eligible(Run.target_name == target, *where).subquery()
    query = (
        select(
            rank,
            Run.id,
            Run.seed,
            Run.earned,
            Run.earnable,
            Run.score_ratio,
            Run.cost_usd,
            Run.decision_count,
            Run.budget_usd,
            Run.created_at,
            Run.agent,
        )
        .where(Run.id.in_(select(ids.c.id)))
        .order_by(*first, *order, Run.created_at, Run.id)
        .limit(limit)
        .offset(offset)
    )
    total = session.scalar(select(func.count()).select_from(ids)) or 0
    rows = [
        BoardRow(
            rank=int(r[0]),
            run_id=r[1],
            target=target,
            seed=int(r[2] or 0),
            earned=int(r[3] or 0),
            earnable=int(r[4] or 0),
            score_ratio=float(r[5] or 0.0),
            cost_usd=None if r[6] is None else float(r[6]),
            turns=int(r[7]),
            budget_usd=None if r[8] is None else float(r[8]),
            submitted_at=as_utc(r[9]),
            proof_url=f"/api/v1/verifier/runs/{r[1]}",
            agent=r[10],
        )
        for r in session.execute(query)
    ]
    return BoardPage(target=target, total=int(total), limit=limit, offset=offset, rows=rows)


def leaderboard(
    session: Session,
    target: str,
    *,
    limit: int = DEFAULT_PAGE,
    offset: int = 0,
    sort: str = "rank",
) -> BoardPage:
    """The public board of a packaged target (e.g. ``native/2048``); 404 for an unknown one.

    ``sort`` (one of :data:`SORTS`) orders the whole board before it is cut into pages.
    """
    _check_sort(sort)
    known = session.get(Target, target) if len(target) <= 128 else None
    if known is None:
        raise Problem(404, "unknown-target", f"no packaged target named {target[:64]!r}")
    return _ranked(session, known.name, limit, offset, sort=sort)


def get_challenge(session: Session, challenge_id: str) -> Challenge:
    """The challenge with this id; a 404 problem when there is none."""
    found = session.get(Challenge, challenge_id) if _CHALLENGE_ID.fullmatch(challenge_id) else None
    if found is None:
        raise Problem(404, "unknown-challenge", f"no challenge with id {challenge_id[:64]!r}")
    return found


def challenge_seeds(challenge: Challenge) -> list[int]:
    """The challenge's seed set, sorted."""
    return [int(seed) for seed in json.loads(challenge.seeds)]


def challenge_leaderboard(
    session: Session,
    challenge_id: str,
    *,
    limit: int = DEFAULT_PAGE,
    offset: int = 0,
    sort: str = "rank",
) -> BoardPage:
    """The board of a challenge: its target's public runs that meet its terms.

    A run counts when its seed is in the set, its budget is set and at most
    the challenge's, and it was uploaded inside the window (both ends
    included).
    """
    challenge = get_challenge(session, challenge_id)
    return _ranked(
        session,
        challenge.target_name,
        limit,
        offset,
        Run.seed.in_(challenge_seeds(challenge)),
        and_(Run.budget_usd.is_not(None), Run.budget_usd <= challenge.budget_usd),
        Run.created_at >= challenge.opens_at,
        Run.created_at <= challenge.closes_at,
        sort=sort,
    )


def list_challenges(session: Session, target: str | None = None) -> list[Challenge]:
    """Every challenge (of ``target``, when given), newest window first."""
    query = select(Challenge).order_by(Challenge.opens_at.desc(), Challenge.id)
    if target is not None:
        query = query.where(Challenge.target_name == target)
    return list(session.scalars(query))


def add_challenge(
    session: Session,
    target: str,
    seeds: Iterable[int],
    budget_usd: float,
    opens_at: datetime,
    closes_at: datetime,
) -> Challenge:
    """Create a challenge on a known target; ServiceError says what is wrong. Commits."""
    if session.get(Target, target) is None:
        raise ServiceError(
            f"no packaged target named {target[:64]!r}: a challenge needs a packaged target"
        )
    chosen = sorted(set(seeds))
    if not chosen or len(chosen) > MAX_CHALLENGE_SEEDS:
        raise ServiceError(f"a challenge names 1 to {MAX_CHALLENGE_SEEDS} seeds")
    if any(not 0 <= seed < 2**63 for seed in chosen):
        raise ServiceError("a seed is a non-negative 64-bit integer")
    if not 0 <= budget_usd <= MAX_CHALLENGE_BUDGET_USD or math.isnan(budget_usd):
        raise ServiceError(f"a challenge budget is 0 to {MAX_CHALLENGE_BUDGET_USD:.0f} USD")
    opens, closes = as_utc(opens_at), as_utc(closes_at)
    if closes <= opens:
        raise ServiceError("a challenge window closes after it opens")
    challenge = Challenge(
        id=uuid.uuid4().hex,
        target_name=target,
        seeds=json.dumps(chosen),
        budget_usd=float(budget_usd),
        opens_at=opens,
        closes_at=closes,
    )
    session.add(challenge)
    session.commit()
    return challenge
