"""HTTP side of deployments: create one, read one, list the packaged targets."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from playproof.service.deployments.documents import (
    DeploymentDocument,
    DeploymentRequest,
    DeploymentRunsDocument,
    TargetDocument,
)
from playproof.service.deployments.models import Deployment, Target
from playproof.service.deployments.services import (
    DEFAULT_RUNS_PAGE,
    MAX_RUNS_OFFSET,
    MAX_RUNS_PAGE,
    create_deployment,
    deployment_runs,
    get_deployment,
    list_targets,
    require_read,
)
from playproof.service.log.services import as_utc
from playproof.service.owners.routes import (
    AuthenticatedOwner,
    authenticated_owner,
    optional_owner,
)
from playproof.service.problems import problem_responses
from playproof.service.proofs.services import status_document
from playproof.service.state import read_session, service_state

__all__ = ["deployment_document", "router", "target_document"]

router = APIRouter(prefix="/api/v1", tags=["deployments"])


def deployment_document(deployment: Deployment) -> DeploymentDocument:
    """The public fields of a deployment."""
    return DeploymentDocument(
        id=deployment.id,
        target=deployment.target_name,
        template_version=deployment.template_version,
        customized=deployment.customized,
        configuration_sha256=deployment.configuration_sha256,
        has_policy_envelope=deployment.policy_envelope is not None,
        trust_label=deployment.trust_label,  # type: ignore[arg-type]
        created_at=as_utc(deployment.created_at),
    )


def target_document(target: Target) -> TargetDocument:
    """The public fields of a target."""
    return TargetDocument(
        name=target.name,
        platform=target.platform,
        build_digest=target.build_digest,
        calibration=target.calibration,  # type: ignore[arg-type]
        calibrated=target.calibrated,
        leaderboard_url=f"/api/v1/leaderboards/{target.name}",
    )


@router.post(
    "/deployments",
    status_code=201,
    response_model=DeploymentDocument,
    responses=problem_responses(401, 409, 413, 422),
    summary="Deploy a packaged target",
)
async def deploy(
    body: DeploymentRequest,
    request: Request,
    owner: Annotated[AuthenticatedOwner, Depends(authenticated_owner)],
) -> DeploymentDocument:
    """Record a deployment of a packaged target at its current build, with its configuration."""
    state = service_state(request)

    def store() -> DeploymentDocument:
        with state.sessions() as session:
            made = create_deployment(
                session,
                owner.id,
                body.target,
                configuration=body.configuration,
                policy_envelope=body.policy_envelope,
                version=body.version,
                runtime=body.runtime,
            )
            return deployment_document(made)

    return await run_in_threadpool(store)


@router.get(
    "/deployments/{deployment_id}",
    response_model=DeploymentDocument,
    responses=problem_responses(401, 403, 404),
    summary="A deployment",
)
def deployment(
    deployment_id: str,
    session: Annotated[Session, Depends(read_session)],
    viewer: Annotated[AuthenticatedOwner | None, Depends(optional_owner)],
) -> DeploymentDocument:
    """A canonical deployment is public; a customized one is its owner's only."""
    found = get_deployment(session, deployment_id)
    require_read(found.trust_label, found.owner_id, viewer.id if viewer else None, "the deployment")
    return deployment_document(found)


@router.get(
    "/deployments/{deployment_id}/runs",
    response_model=DeploymentRunsDocument,
    responses=problem_responses(401, 403, 404, 422),
    summary="A deployment's runs",
)
def runs_of_deployment(
    deployment_id: str,
    session: Annotated[Session, Depends(read_session)],
    viewer: Annotated[AuthenticatedOwner | None, Depends(optional_owner)],
    limit: Annotated[int, Query(ge=1, le=MAX_RUNS_PAGE, description="Runs per page.")] = (
        DEFAULT_RUNS_PAGE
    ),
    offset: Annotated[int, Query(ge=0, le=MAX_RUNS_OFFSET, description="Runs to skip.")] = 0,
) -> DeploymentRunsDocument:
    """The runs played on a deployment, oldest first, each with its status and proof link.

    The deployment's read rule applies (a customized one: 401 without its
    owner's token, 403 with another's); anyone but the owner sees canonical runs only.
    """
    found = get_deployment(session, deployment_id)
    who = viewer.id if viewer else None
    require_read(found.trust_label, found.owner_id, who, "the deployment")
    total, page = deployment_runs(session, found, who, limit=limit, offset=offset)
    return DeploymentRunsDocument(
        deployment_id=found.id,
        total=total,
        limit=limit,
        offset=offset,
        runs=[status_document(run) for run in page],
    )


@router.get(
    "/targets",
    response_model=list[TargetDocument],
    summary="The packaged targets",
)
def targets(session: Annotated[Session, Depends(read_session)]) -> list[TargetDocument]:
    """Every packaged target the service knows, with its build and calibration verdict."""
    return [target_document(t) for t in list_targets(session)]
