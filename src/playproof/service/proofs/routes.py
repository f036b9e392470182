"""HTTP side of proofs: the public proof document and single check groups (read only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session

from playproof.service.checks import GroupResult, group_named
from playproof.service.problems import Problem, problem_responses
from playproof.service.proofs.models import ProofDocument
from playproof.service.proofs.services import group_result, proof_document
from playproof.service.runs.services import get_run
from playproof.service.state import read_session, service_state

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["proofs"])

ReadSession = Annotated[Session, Depends(read_session)]


@router.get(
    "/verifier/runs/{run_id}",
    response_model=ProofDocument,
    responses=problem_responses(404, 409),
    summary="The public proof document of a run",
)
def proof(run_id: str, request: Request, session: ReadSession) -> ProofDocument:
    """``run``, ``lineage``, ``evidence``, ``cats`` and ``transparency`` of one run."""
    return proof_document(session, get_run(session, run_id), service_state(request).log_key)


@router.get(
    "/cats/{group}/{run_id}",
    response_model=GroupResult,
    responses=problem_responses(404),
    summary="One check group of a run",
)
def cats(group: str, run_id: str, session: ReadSession) -> GroupResult:
    """One check group decided on the run's stored evidence."""
    found = group_named(group)
    if found is None:
        raise Problem(404, "unknown-check-group", f"no check group named {group[:64]!r}")
    return group_result(get_run(session, run_id), found)
