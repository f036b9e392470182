"""Storing artifacts once per digest and reading a run's artifacts back (no HTTP here)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from playproof.errors import ServiceError
from playproof.service.artifacts.models import Artifact, RunArtifact
from playproof.service.artifacts.roles import MAX_ARTIFACT_BYTES, ArtifactBytes

__all__ = [
    "ArtifactMeta",
    "link_artifacts",
    "run_artifact_bytes",
    "run_artifacts",
    "store_artifact",
]


@dataclass(frozen=True)
class ArtifactMeta:
    """What a proof document may say of an artifact: never where or how it is stored."""

    role: str
    digest: str
    size: int
    media_type: str


def store_artifact(session: Session, content: bytes, media_type: str) -> Artifact:
    """The artifact holding ``content``, added when no artifact has its digest yet (no commit).

    Raises :class:`ServiceError` over :data:`MAX_ARTIFACT_BYTES`. Two writers
    adding the same new digest at once: one commit fails on the primary key,
    and that writer's retry finds the stored artifact.
    """
    if len(content) > MAX_ARTIFACT_BYTES:
        raise ServiceError(
            f"an artifact of {len(content)} bytes is over the {MAX_ARTIFACT_BYTES}-byte limit"
        )
    digest = hashlib.sha256(content).hexdigest()
    found = session.get(Artifact, digest)
    if found is not None:
        return found
    artifact = Artifact(digest=digest, size=len(content), media_type=media_type, content=content)
    session.add(artifact)
    return artifact


def link_artifacts(session: Session, run_id: str, artifacts: Iterable[ArtifactBytes]) -> int:
    """Store ``artifacts`` and link them to the run under their roles (no commit); how many.

    An artifact over the size limit is left out (the checks that need it
    then fail with their input missing); a role already linked keeps its artifact.
    """
    linked = 0
    for item in artifacts:
        if len(item.content) > MAX_ARTIFACT_BYTES:
            continue
        stored = store_artifact(session, item.content, item.media_type)
        if session.get(RunArtifact, (run_id, item.role)) is None:
            session.add(RunArtifact(run_id=run_id, role=item.role, digest=stored.digest))
            linked += 1
    session.flush()
    return linked


_RUN_ARTIFACTS = (
    select(RunArtifact.role, Artifact.digest, Artifact.size, Artifact.media_type)
    .join(Artifact, Artifact.digest == RunArtifact.digest)
    .where(RunArtifact.run_id == bindparam("run_id"))
    .order_by(RunArtifact.role)
)
"""Built once: every proof document a verdict stores reads it."""


def run_artifacts(session: Session, run_id: str) -> list[ArtifactMeta]:
    """The public metadata of the run's artifacts, by role."""
    rows = session.execute(_RUN_ARTIFACTS, {"run_id": run_id}).all()
    return [ArtifactMeta(role=r, digest=d, size=s, media_type=m) for r, d, s, m in rows]


def run_artifact_bytes(session: Session, run_id: str) -> dict[str, bytes]:
    """The run's artifact bytes by role, checked against their digests (a mismatch is left out)."""
    rows = session.execute(
        select(RunArtifact.role, Artifact.digest, Artifact.content)
        .join(Artifact, Artifact.digest == RunArtifact.digest)
        .where(RunArtifact.run_id == run_id)
    ).all()
    return {
        role: bytes(content)
        for role, digest, content in rows
        if hashlib.sha256(bytes(content)).hexdigest() == digest
    }
