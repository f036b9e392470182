"""Public documents of leaderboards and challenges: every field listed by hand."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from playproof.service.leaderboards.services import (
    MAX_CHALLENGE_BUDGET_USD,
    MAX_CHALLENGE_SEEDS,
    BoardPage,
    BoardRow,
)

__all__ = [
    "BoardDocument",
    "BoardRowDocument",
    "ChallengeDocument",
    "ChallengeRequest",
    "board_document",
]


class _Public(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class BoardRowDocument(_Public):
    """One ranked run; ``cost_usd`` null: not measured (an unpriced decision)."""

    rank: int
    run_id: str
    seed: int
    earned: int
    earnable: int
    score_ratio: float
    cost_usd: float | None
    turns: int
    budget_usd: float | None
    submitted_at: datetime
    proof_url: str
    agent: str | None
    """The record's actor as ``KIND:ID`` (null: the record could not be read)."""


class BoardDocument(_Public):
    """A page of a leaderboard: ``total`` rows in all, this page from ``offset``."""

    target: str
    challenge_id: str | None
    total: int
    limit: int
    offset: int
    rows: list[BoardRowDocument]


def _row(row: BoardRow) -> BoardRowDocument:
    return BoardRowDocument(
        rank=row.rank,
        run_id=row.run_id,
        seed=row.seed,
        earned=row.earned,
        earnable=row.earnable,
        score_ratio=row.score_ratio,
        cost_usd=row.cost_usd,
        turns=row.turns,
        budget_usd=row.budget_usd,
        submitted_at=row.submitted_at,
        proof_url=row.proof_url,
        agent=row.agent,
    )


def board_document(page: BoardPage, challenge_id: str | None = None) -> BoardDocument:
    """The document of a board page."""
    return BoardDocument(
        target=page.target,
        challenge_id=challenge_id,
        total=page.total,
        limit=page.limit,
        offset=page.offset,
        rows=[_row(r) for r in page.rows],
    )


class ChallengeRequest(BaseModel):
    """``POST /api/v1/challenges`` (administrators): target, seeds, budget, window."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    target: Annotated[str, Field(min_length=1, max_length=128)]
    seeds: Annotated[
        list[Annotated[int, Field(ge=0, lt=2**63)]],
        Field(min_length=1, max_length=MAX_CHALLENGE_SEEDS),
    ]
    budget_usd: Annotated[float, Field(ge=0, le=MAX_CHALLENGE_BUDGET_USD, allow_inf_nan=False)]
    opens_at: Annotated[AwareDatetime, Field(strict=False)]
    """ISO 8601 with a zone (JSON has no datetime type, so text is read here)."""
    closes_at: Annotated[AwareDatetime, Field(strict=False)]


class ChallengeDocument(_Public):
    """A challenge: its target, seed set, budget and submission window."""

    id: str
    target: str
    seeds: list[int]
    budget_usd: float
    opens_at: datetime
    closes_at: datetime
    leaderboard_url: str
