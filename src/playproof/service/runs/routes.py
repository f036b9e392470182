"""HTTP side of the runs domain: upload a signed record, read a run's status."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from playproof.service.db import read_only
from playproof.service.owners.routes import (
    AuthenticatedOwner,
    authenticated_uploader,
    optional_owner,
)
from playproof.service.problems import Problem, problem_responses
from playproof.service.proofs.models import RunStatusDocument
from playproof.service.proofs.services import check_run_read, status_document
from playproof.service.runs.services import get_run, ingest
from playproof.service.runs.uploads import MAX_TRANSCRIPT_UPLOAD_BYTES, is_run_upload
from playproof.service.state import service_state
from playproof.sign import RUN_UPLOAD_MEDIA_TYPE, RUN_UPLOAD_SCHEMA

__all__ = ["ENVELOPE_BODY", "RUN_UPLOAD_BODY", "read_bounded_body", "router"]

router = APIRouter(prefix="/api/v1/runs", tags=["runs"])

ENVELOPE_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "A signed run record: a DSSE envelope (JSON).",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["payload", "payloadType", "signatures"],
                    "properties": {
                        "payload": {"type": "string"},
                        "payloadType": {"type": "string"},
                        "signatures": {"type": "array", "items": {"type": "object"}},
                    },
                }
            }
        },
    }
}

RUN_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": (
            "A signed run record: a DSSE envelope (application/json); or, for a trusted-recorder "
            f"record, a run upload ({RUN_UPLOAD_MEDIA_TYPE}): the envelope with the "
            "recorder-signed transcript and, for a target the service does not package, the "
            "contract. The whole body is bounded by the upload limit, the transcript by "
            f"{MAX_TRANSCRIPT_UPLOAD_BYTES} bytes."
        ),
        "content": {
            "application/json": ENVELOPE_BODY["requestBody"]["content"]["application/json"],
            RUN_UPLOAD_MEDIA_TYPE: {
                "schema": {
                    "type": "object",
                    "required": ["schema", "envelope"],
                    "properties": {
                        "schema": {"const": RUN_UPLOAD_SCHEMA},
                        "envelope": {"type": "object"},
                        "transcript": {"type": "object"},
                        "contract": {"type": "object"},
                    },
                    "additionalProperties": False,
                }
            },
        },
    }
}


async def read_bounded_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise Problem(400, "bad-content-length", "Content-Length is not a number")
        if int(declared) > limit:
            raise Problem(413, "too-large", f"the body is over the {limit}-byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, "too-large", f"the body is over the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


@router.post(
    "",
    status_code=202,
    response_model=RunStatusDocument,
    openapi_extra=RUN_UPLOAD_BODY,
    responses=problem_responses(400, 401, 403, 404, 413, 422),
    summary="Upload a signed record",
)
async def upload_run(
    request: Request,
    response: Response,
    owner: Annotated[AuthenticatedOwner, Depends(authenticated_uploader)],
    deployment: Annotated[
        str | None,
        Query(max_length=64, description="The id of the owner's deployment the run played on."),
    ] = None,
) -> RunStatusDocument:
    """Check the signature now, store the run ``pending``, replay it in the background.

    202 for a new run; 200 with the existing run when this envelope came before.
    A trusted-recorder record comes as a run upload, with its transcript.
    """
    state = service_state(request)
    body = await read_bounded_body(request, state.settings.max_upload_bytes)
    bundled = is_run_upload(request.headers.get("content-type"))

    def store() -> tuple[RunStatusDocument, bool]:
        with state.sessions() as session:
            made = ingest(
                session,
                owner.id,
                body,
                deployment_id=deployment,
                bundled=bundled,
                keys=owner.keys,
                known_targets=state.packaged_targets,
            )
            document = status_document(made.run, made.record)
        if made.created:  # stored and committed: hand it to the replays in the same trip
            state.queue.submit(document.id, made.job)
        return document, made.created

    document, created = await run_in_threadpool(store)
    if not created:
        response.status_code = 200
    return document


MAX_STATUS_WAIT_S = 30.0
"""The longest a status request may wait for a verdict (``?wait=``)."""


@router.get(
    "/{run_id}",
    response_model=RunStatusDocument,
    responses=problem_responses(401, 403, 404, 422),
    summary="A run's verification status",
)
async def run_status(
    run_id: str,
    request: Request,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_STATUS_WAIT_S,
            description=(
                "Seconds to wait for the verdict of a pending run before answering "
                "(a long poll; 0 answers at once)."
            ),
        ),
    ] = 0.0,
) -> RunStatusDocument:
    """``pending``, ``verified``, ``rejected`` or ``failed`` (apart from the run's stop reason).

    A customized instance's status is its owner's only (401/403). With
    ``wait``, a pending run's answer comes as soon as its verdict is stored
    (or when the wait is over, still ``pending``), so clients need not poll.
    """
    state = service_state(request)
    viewer: list[int | None] = []

    def read() -> RunStatusDocument:
        # Clients poll this while the replay runs: one trip to a worker thread.
        if not viewer:
            owner = optional_owner(request)
            viewer.append(owner.id if owner else None)
        with read_only(state.sessions) as session:
            run = get_run(session, run_id, envelope=False)
            check_run_read(run, viewer[0])
            return status_document(run)  # reads the envelope only for an unknown stop reason

    if wait <= 0:
        return await run_in_threadpool(read)
    found: list[RunStatusDocument] = []

    async def still_pending() -> bool:
        found.append(await run_in_threadpool(read))
        return found[-1].status == "pending"

    # The first read comes after the wait is registered (so no verdict stored in
    # between is missed): a long poll costs one read, or two when it waited.
    await state.queue.settled(run_id, wait, still_pending)
    return found[-1]
