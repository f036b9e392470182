"""HTTP side of leaderboards and challenges (reads only, but for adding a challenge).

A target name holds a slash (``native/2048``), so a target's board is at
``/api/v1/leaderboards/{platform}/{name}``: the two halves of the name.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from playproof.errors import ServiceError
from playproof.service.leaderboards.documents import (
    BoardDocument,
    ChallengeDocument,
    ChallengeRequest,
    board_document,
)
from playproof.service.leaderboards.models import Challenge
from playproof.service.leaderboards.services import (
    DEFAULT_PAGE,
    MAX_OFFSET,
    MAX_PAGE,
    SortName,
    add_challenge,
    challenge_leaderboard,
    challenge_seeds,
    get_challenge,
    leaderboard,
)
from playproof.service.log.services import as_utc
from playproof.service.owners.routes import AuthenticatedOwner, admin_owner
from playproof.service.problems import Problem, problem_responses
from playproof.service.state import read_session, service_state

__all__ = ["challenge_document", "router"]

router = APIRouter(prefix="/api/v1", tags=["leaderboards"])

ReadSession = Annotated[Session, Depends(read_session)]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Rows per page.")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Rows to skip.")]
Sort = Annotated[
    SortName,
    Query(description="The order of the whole board before it is cut into pages."),
]


def challenge_document(challenge: Challenge) -> ChallengeDocument:
    """The public fields of a challenge."""
    return ChallengeDocument(
        id=challenge.id,
        target=challenge.target_name,
        seeds=challenge_seeds(challenge),
        budget_usd=challenge.budget_usd,
        opens_at=as_utc(challenge.opens_at),
        closes_at=as_utc(challenge.closes_at),
        leaderboard_url=f"/api/v1/challenges/{challenge.id}/leaderboard",
    )


@router.get(
    "/leaderboards/{platform}/{name}",
    response_model=BoardDocument,
    responses=problem_responses(404, 422),
    summary="The public leaderboard of a packaged target",
)
def target_board(
    platform: str,
    name: str,
    session: ReadSession,
    limit: Limit = DEFAULT_PAGE,
    offset: Offset = 0,
    sort: Sort = "rank",
) -> BoardDocument:
    """Verified, logged, canonical runs of ``platform/name``, ranked; ties share a rank.

    ``sort`` orders the whole board (ties fall back to the ranking); ``rank`` stays the
    run's place in the ranking.
    """
    return board_document(
        leaderboard(session, f"{platform}/{name}", limit=limit, offset=offset, sort=sort)
    )


@router.get(
    "/challenges/{challenge_id}",
    response_model=ChallengeDocument,
    responses=problem_responses(404),
    summary="A challenge",
)
def challenge(challenge_id: str, session: ReadSession) -> ChallengeDocument:
    """The challenge's target, seed set, budget and window."""
    return challenge_document(get_challenge(session, challenge_id))


@router.get(
    "/challenges/{challenge_id}/leaderboard",
    response_model=BoardDocument,
    responses=problem_responses(404, 422),
    summary="The leaderboard of a challenge",
)
def challenge_board(
    challenge_id: str,
    session: ReadSession,
    limit: Limit = DEFAULT_PAGE,
    offset: Offset = 0,
    sort: Sort = "rank",
) -> BoardDocument:
    """The target's public runs on the challenge's seeds, within its budget and window."""
    page = challenge_leaderboard(session, challenge_id, limit=limit, offset=offset, sort=sort)
    return board_document(page, challenge_id)


@router.post(
    "/challenges",
    status_code=201,
    response_model=ChallengeDocument,
    responses=problem_responses(401, 403, 413, 422),
    summary="Add a challenge (administrators)",
)
async def new_challenge(
    body: ChallengeRequest,
    request: Request,
    _admin: Annotated[AuthenticatedOwner, Depends(admin_owner)],
) -> ChallengeDocument:
    """Open a challenge on a packaged target."""
    state = service_state(request)

    def store() -> ChallengeDocument:
        with state.sessions() as session:
            try:
                made = add_challenge(
                    session,
                    body.target,
                    body.seeds,
                    body.budget_usd,
                    body.opens_at,
                    body.closes_at,
                )
            except ServiceError as exc:
                raise Problem(422, "bad-challenge", str(exc)) from exc
            return challenge_document(made)

    return await run_in_threadpool(store)
