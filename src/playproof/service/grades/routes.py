"""HTTP side of grades: upload a signed grade record, its status, its proof document."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from playproof.service.grades.documents import (
    GradeDocument,
    GradeProofDocument,
    GradeStatusDocument,
)
from playproof.service.grades.models import Grade
from playproof.service.grades.services import (
    get_grade,
    ingest_grade,
    stored_grade_report,
)
from playproof.service.log.services import as_utc
from playproof.service.owners.routes import AuthenticatedOwner, authenticated_owner
from playproof.service.problems import problem_responses
from playproof.service.proofs.services import verifier_version
from playproof.service.runs.routes import ENVELOPE_BODY, read_bounded_body
from playproof.service.state import read_session, service_state

__all__ = ["grade_proof", "grade_status", "router"]

router = APIRouter(prefix="/api/v1", tags=["grades"])

ReadSession = Annotated[Session, Depends(read_session)]


def grade_status(grade: Grade) -> GradeStatusDocument:
    """Where the service is with ``grade``."""
    report = stored_grade_report(grade)
    status = grade.status if grade.status in {"verified", "rejected", "failed"} else "pending"
    return GradeStatusDocument(
        id=grade.id,
        status=status,  # type: ignore[arg-type]
        failed_checks=[f"{c.id}: {c.reason}" for c in report.failed()] if report else [],
        error_kind=grade.error_kind,
        submitted_at=as_utc(grade.created_at),
        finished_at=as_utc(grade.finished_at) if grade.finished_at else None,
        proof_url=f"/api/v1/verifier/grades/{grade.id}",
    )


def _record(grade: Grade) -> GradeDocument | None:
    """The record block stored at upload (None when the record does not read)."""
    if grade.record_document is None:
        return None
    return GradeDocument.model_validate_json(grade.record_document)


def grade_proof(grade: Grade) -> GradeProofDocument:
    """The public proof document of ``grade``."""
    report = stored_grade_report(grade)
    return GradeProofDocument(
        verifier_version=verifier_version(),
        grade=grade_status(grade),
        record=_record(grade),
        record_digest=grade.record_digest,
        signer_key_id=grade.key_id,
        checks=list(report.checks) if report is not None else [],
    )


@router.post(
    "/grades",
    status_code=202,
    response_model=GradeStatusDocument,
    openapi_extra=ENVELOPE_BODY,
    responses=problem_responses(400, 401, 413, 422),
    summary="Upload a signed grade record",
)
async def upload_grade(
    request: Request,
    response: Response,
    owner: Annotated[AuthenticatedOwner, Depends(authenticated_owner)],
) -> GradeStatusDocument:
    """Check the signature now, store the grade ``pending``, verify it again on the server."""
    state = service_state(request)
    body = await read_bounded_body(request, state.settings.max_upload_bytes)

    def store() -> tuple[GradeStatusDocument, bool]:
        with state.sessions() as session:
            grade, created = ingest_grade(session, owner.id, body, state.settings.max_grade_cases)
            return grade_status(grade), created

    document, created = await run_in_threadpool(store)
    if created:
        await run_in_threadpool(state.queue.submit_grade, document.id)
    else:
        response.status_code = 200
    return document


@router.get(
    "/grades/{grade_id}",
    response_model=GradeStatusDocument,
    responses=problem_responses(404),
    summary="A grade's verification status",
)
def grade_status_route(grade_id: str, session: ReadSession) -> GradeStatusDocument:
    """``pending``, ``verified``, ``rejected`` or ``failed``."""
    return grade_status(get_grade(session, grade_id))


@router.get(
    "/verifier/grades/{grade_id}",
    response_model=GradeProofDocument,
    responses=problem_responses(404),
    summary="The public proof document of a grade",
)
def grade_proof_route(grade_id: str, session: ReadSession) -> GradeProofDocument:
    """The grade's status, the record's public fields and the server's checks."""
    return grade_proof(get_grade(session, grade_id))
