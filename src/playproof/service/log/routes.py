"""HTTP side of the log: the signed tree head (read only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from playproof.service.log.services import tree_head
from playproof.service.problems import Problem, problem_responses
from playproof.service.state import read_session, service_state
from playproof.sign import SigningKey
from playproof.transparency import TreeHead

__all__ = ["LogKeyDocument", "router"]

router = APIRouter(prefix="/api/v1/log", tags=["log"])


class LogKeyDocument(BaseModel):
    """The log's public key: what checks its tree heads offline."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    log_id: str
    public_key_pem: str


def _log_key(request: Request) -> SigningKey:
    key = service_state(request).log_key
    if key is None:
        raise Problem(404, "no-log", "this service keeps no transparency log")
    return key


@router.get(
    "/key",
    response_model=LogKeyDocument,
    responses=problem_responses(404),
    summary="The log's public key",
)
def log_key(request: Request) -> LogKeyDocument:
    """The PEM public key whose key id is the log id."""
    key = _log_key(request).verifying_key
    return LogKeyDocument(log_id=key.key_id, public_key_pem=key.to_pem().decode("ascii"))


@router.get(
    "/head",
    response_model=TreeHead,
    responses=problem_responses(404),
    summary="The log's signed tree head",
)
def head(request: Request, session: Annotated[Session, Depends(read_session)]) -> TreeHead:
    """The size and root of the log, signed with the log's key."""
    return tree_head(session, _log_key(request))
