"""Content-addressed artifacts: stored once per digest, size-capped; both databases."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from playproof.errors import ServiceError
from playproof.service.artifacts.models import Artifact, RunArtifact
from playproof.service.artifacts.roles import MAX_ARTIFACT_BYTES, ArtifactBytes
from playproof.service.artifacts.services import (
    link_artifacts,
    run_artifact_bytes,
    run_artifacts,
    store_artifact,
)
from playproof.service.db import make_engine, session_factory, upgrade
from playproof.service.owners.services import add_owner
from playproof.service.runs.models import Run


def _run(session: object, run_id: str, owner_id: int) -> Run:
    return Run(
        id=run_id,
        owner_id=owner_id,
        envelope_sha256=run_id * 2,
        envelope=b"{}",
        record_digest="c" * 64,
        key_id="k",
        decision_count=0,
        status="verified",
        trust_label="benchmarked_canonical_template",
        attempts=0,
    )


def test_the_same_bytes_are_stored_once_and_linked_to_each_run(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        sessions = session_factory(engine)
        events = ArtifactBytes("run-events", "application/json", b'["a","b"]')
        with sessions() as session:
            owner = add_owner(session, "o", None)
            session.flush()
            for run_id in ("a" * 32, "b" * 32):
                session.add(_run(session, run_id, owner.id))
            session.flush()
            assert link_artifacts(session, "a" * 32, [events]) == 1
            session.commit()
            assert link_artifacts(session, "b" * 32, [events]) == 1
            assert link_artifacts(session, "b" * 32, [events]) == 0  # the role is linked
            session.commit()
            assert session.scalar(select(func.count()).select_from(Artifact)) == 1
            assert session.scalar(select(func.count()).select_from(RunArtifact)) == 2
            [meta] = run_artifacts(session, "b" * 32)
            assert meta.digest == hashlib.sha256(events.content).hexdigest() == events.digest
            assert (meta.size, meta.media_type, meta.role) == (9, "application/json", "run-events")
            assert run_artifact_bytes(session, "a" * 32) == {"run-events": events.content}
            # Bytes that no longer hash to their digest are not handed to a check group.
            stored = session.get(Artifact, meta.digest)
            assert stored is not None
            stored.content = b'["a","x"]'
            session.flush()
            assert run_artifact_bytes(session, "a" * 32) == {}
            session.rollback()
    finally:
        engine.dispose()


def test_an_artifact_over_the_limit_is_refused_and_left_out(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        big = b"x" * (MAX_ARTIFACT_BYTES + 1)
        with session_factory(engine)() as session:
            with pytest.raises(ServiceError, match="over the"):
                store_artifact(session, big, "application/octet-stream")
            owner = add_owner(session, "o", None)
            session.flush()
            session.add(_run(session, "a" * 32, owner.id))
            session.flush()
            assert link_artifacts(session, "a" * 32, [ArtifactBytes("r", "m", big)]) == 0
            assert session.scalar(select(func.count()).select_from(Artifact)) == 0
    finally:
        engine.dispose()


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(chunks=st.lists(st.binary(max_size=64), min_size=1, max_size=6))
def test_one_row_per_distinct_content(chunks: list[bytes], tmp_path_factory: object) -> None:
    folder = tmp_path_factory.mktemp("artifacts")  # type: ignore[attr-defined]
    engine = make_engine(f"sqlite:///{folder / 'service.db'}")
    try:
        upgrade(engine)
        with session_factory(engine)() as session:
            for chunk in chunks + chunks:
                store_artifact(session, chunk, "application/octet-stream")
                session.flush()
            session.commit()
            digests = set(session.scalars(select(Artifact.digest)))
        assert digests == {hashlib.sha256(c).hexdigest() for c in chunks}
    finally:
        engine.dispose()
