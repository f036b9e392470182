"""HTTP side of proofs: the public proof document and single check groups (read only)."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from playproof.service.artifacts.replay import is_policy_target
from playproof.service.checks import GroupResult, is_group_name
from playproof.service.db import read_connection, read_only
from playproof.service.owners.routes import AuthenticatedOwner, optional_owner
from playproof.service.problems import Problem, problem_responses
from playproof.service.proofs.cache import proof_bytes, stored_proof
from playproof.service.proofs.models import ProofDocument
from playproof.service.proofs.services import check_run_read, group_result
from playproof.service.runs.services import get_run
from playproof.service.state import read_session, service_state

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["proofs"])

ReadSession = Annotated[Session, Depends(read_session)]
Viewer = Annotated[AuthenticatedOwner | None, Depends(optional_owner)]


@router.get(
    "/verifier/runs/{run_id}",
    response_model=ProofDocument,
    responses=problem_responses(401, 403, 404, 409, 422),
    summary="The public proof document of a run",
)
async def proof(run_id: str, request: Request) -> Response:
    """``run``, ``lineage``, ``evidence``, ``cats`` and ``transparency`` of one run.

    A customized instance's proof is its owner's only (401 without a token,
    403 with another owner's).
    """
    state = service_state(request)

    def build() -> bytes:
        # One trip to a worker thread for the whole read (the session, the
        # viewer and the document), and the bytes are served as they are.
        viewer = optional_owner(request)
        owner = viewer.id if viewer else None
        with read_connection(state.engine) as connection:  # a stored document: one query
            found = stored_proof(connection, run_id, owner, state.log_key, state.log_cache)
        if found is not None:
            return found
        with read_only(state.sessions) as session:  # built, or from the in-process cache
            run = get_run(session, run_id)
            check_run_read(run, owner)  # again: the row is read anew
            return proof_bytes(session, run, state.log_key, state.log_cache, state.proof_cache)

    return Response(await run_in_threadpool(build), media_type="application/json")


@router.get(
    "/cats/{group}/{run_id}",
    response_model=GroupResult,
    responses=problem_responses(401, 403, 404, 422),
    summary="One check group of a run",
)
def cats(
    group: str, run_id: str, request: Request, session: ReadSession, viewer: Viewer
) -> GroupResult:
    """One check group decided on the run's stored evidence (read access as for the proof).

    A policy group (``wallet_safety``, ``rebalance_policy``) is a policy-bound run's only.
    A finished run's groups are read from its stored proof document (rendered
    from the same record and report by this verifier version); a run without a
    current one, and a policy-bound run (whose groups read its artifacts too),
    has its group decided again here.
    """
    if not is_group_name(group):
        raise Problem(404, "unknown-check-group", f"no check group named {group[:64]!r}")
    state = service_state(request)
    owner = viewer.id if viewer else None
    with read_connection(state.engine) as connection:  # the read rules come first
        stored = stored_proof(connection, run_id, owner, None, state.log_cache)
    document = json.loads(stored) if stored is not None else None
    # A policy-bound run's groups also read its stored artifacts (another table): decided
    # again on every request, so a missing or altered artifact shows at once.
    if document is not None and not is_policy_target(document["lineage"]["target"]):
        for found in document["cats"]:
            if found["group"] == group:
                return GroupResult.model_validate(found)
    run = get_run(session, run_id)
    check_run_read(run, owner)
    return group_result(session, run, group)
