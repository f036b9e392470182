"""HTTP side of the log: tree heads, inclusion and consistency proofs (read only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from playproof.service.log.services import LogCache
from playproof.service.problems import Problem, problem_responses
from playproof.service.state import read_session, service_state
from playproof.sign import SigningKey
from playproof.transparency import MAX_TREE_SIZE, ConsistencyProof, InclusionProof, TreeHead

__all__ = ["LogKeyDocument", "router"]

router = APIRouter(prefix="/api/v1/log", tags=["log"])

ReadSession = Annotated[Session, Depends(read_session)]
TreeSize = Annotated[int, Query(ge=0, le=MAX_TREE_SIZE)]


class LogKeyDocument(BaseModel):
    """The log's public key: what checks its tree heads offline."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    log_id: str
    public_key_pem: str


def _log(request: Request) -> tuple[SigningKey, LogCache]:
    state = service_state(request)
    if state.log_key is None:
        raise Problem(404, "no-log", "this service keeps no transparency log")
    return state.log_key, state.log_cache


@router.get(
    "/key",
    response_model=LogKeyDocument,
    responses=problem_responses(404),
    summary="The log's public key",
)
def log_key(request: Request) -> LogKeyDocument:
    """The PEM public key whose key id is the log id."""
    key = _log(request)[0].verifying_key
    return LogKeyDocument(log_id=key.key_id, public_key_pem=key.to_pem().decode("ascii"))


@router.get(
    "/head",
    response_model=TreeHead,
    responses=problem_responses(404, 422),
    summary="The log's signed tree head",
)
def head(request: Request, session: ReadSession, size: TreeSize | None = None) -> TreeHead:
    """The size and root of the log (or of its first ``size`` leaves), signed with its key.

    A given size always gets the same head: its timestamp is when the newest
    of those leaves was appended.
    """
    key, cache = _log(request)
    return cache.head(session, key, size)


@router.get(
    "/inclusion",
    response_model=InclusionProof,
    responses=problem_responses(404, 422),
    summary="The inclusion proof of a leaf",
)
def inclusion(
    request: Request,
    session: ReadSession,
    leaf: Annotated[int, Query(ge=0, lt=MAX_TREE_SIZE)],
    size: TreeSize | None = None,
) -> InclusionProof:
    """The audit path of leaf ``leaf`` in the tree of ``size`` leaves (default: the whole log).

    Check it with the head of that size (``/api/v1/log/head?size=``) and
    ``playproof log verify inclusion``.
    """
    key, cache = _log(request)
    return cache.inclusion(session, leaf, key, size)[1]


@router.get(
    "/consistency",
    response_model=ConsistencyProof,
    responses=problem_responses(404, 422),
    summary="The consistency proof between two tree sizes (404 unless first <= second <= size)",
)
def consistency(
    request: Request, session: ReadSession, first: TreeSize, second: TreeSize
) -> ConsistencyProof:
    """The proof that the tree of ``second`` leaves only appended to the tree of ``first``.

    Check it with the heads of both sizes and ``playproof log verify consistency``.
    """
    key, cache = _log(request)
    return cache.consistency(session, key, first, second)
