"""Anonymous reads of stored proof documents, answered ahead of the routes: the route's answer."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, update

from playproof.core.record import RunRecord
from playproof.service import db
from playproof.service.log.services import LogCache
from playproof.service.proofs import fast, routes
from playproof.service.runs.models import Run
from playproof.sign import SigningKey

from .conftest import Service, calls_to


@pytest.fixture
def route_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run ids the proof route itself was asked for (the middleware's misses)."""
    return calls_to(monkeypatch, routes, "stored_proof", argument=1)


def test_an_anonymous_read_is_answered_without_the_route_and_says_the_same(
    service: Service, signer: SigningKey, record_2048: RunRecord, route_reads: list[str]
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    path = f"/api/v1/verifier/runs/{run_id}"
    anonymous = service.client.get(path)
    assert route_reads == []  # answered ahead of the routes
    with_token = service.client.get(path, headers={"Authorization": f"Bearer {token}"})
    assert route_reads == [run_id]  # a token goes to the route, which decides on it
    assert anonymous.status_code == with_token.status_code == 200
    assert anonymous.content == with_token.content
    for name in ("content-type", "content-length"):
        assert anonymous.headers[name] == with_token.headers[name]
    assert anonymous.json()["transparency"]["leaf_index"] >= 0


def test_refusals_are_the_routes_refusals(
    service: Service, signer: SigningKey, record_2048: RunRecord, route_reads: list[str]
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    unknown = service.client.get(f"/api/v1/verifier/runs/{'0' * 32}")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    assert unknown.json()["type"].endswith("/unknown-run")
    with service.sessions() as session:  # now the owner's only
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(trust_label="benchmark_compatible_customized_instance")
        )
        session.commit()
    private = service.client.get(f"/api/v1/verifier/runs/{run_id}")
    assert private.status_code == 401
    assert private.headers["www-authenticate"] == "Bearer"
    assert private.json()["type"].endswith("/owner-only")
    assert route_reads == []  # both refused ahead of the routes, as the route refuses
    # What is not a run id, or not a GET, is the app's to answer, as before.
    odd = service.client.get("/api/v1/verifier/runs/NOT-AN-ID")
    assert odd.status_code == 404
    assert odd.json()["type"].endswith("/unknown-run")
    assert service.client.post(f"/api/v1/verifier/runs/{run_id}").status_code == 405
    assert service.client.get(f"/api/v1/verifier/runs/{run_id}/more").status_code == 404


def test_a_stale_stored_document_is_never_served_to_anyone(
    service: Service, signer: SigningKey, record_2048: RunRecord, route_reads: list[str]
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    fresh = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()
    with service.sessions() as session:  # as if built by another verifier version
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(proof_document=b'{"planted":"STALE","transparency":', proof_key="0" * 64)
        )
        session.commit()
    answer = service.client.get(f"/api/v1/verifier/runs/{run_id}")
    assert answer.status_code == 200
    assert b"STALE" not in answer.content
    assert answer.json() == fresh
    assert route_reads == [run_id]  # the miss went to the route, which built it


def test_a_check_group_is_read_from_the_stored_document_and_decided_only_without_one(
    service: Service, signer: SigningKey, record_2048: RunRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.service.proofs import services

    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()
    decided = calls_to(monkeypatch, services, "decide_group")
    for group in proof["cats"]:
        answer = service.client.get(f"/api/v1/cats/{group['group']}/{run_id}")
        assert answer.status_code == 200
        assert answer.json() == group
    assert decided == []  # no evidence was read again
    with service.sessions() as session:  # no stored document: decided from the evidence
        session.execute(update(Run).where(Run.id == run_id).values(proof_document=None))
        session.commit()
    again = service.client.get(f"/api/v1/cats/{proof['cats'][0]['group']}/{run_id}")
    assert again.json() == proof["cats"][0]
    assert len(decided) == 1
    assert service.client.get(f"/api/v1/cats/wallet_safety/{run_id}").status_code == 404


def _statements(engine: Any) -> list[str]:
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def _wait_usable(state: Any) -> None:
    deadline = time.monotonic() + 10
    while state.inline.usable() is None:
        assert time.monotonic() < deadline, "the loop's connection was not opened again"
        time.sleep(0.02)


def test_on_postgresql_reads_are_made_on_the_loops_connection_and_outlive_its_failures(
    service: Service,
    signer: SigningKey,
    record_2048: RunRecord,
    route_reads: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = service.client.app.state.service  # type: ignore[attr-defined]
    if not service.database_url.startswith("postgresql"):
        assert state.inline.engine is None  # SQLite reads on worker threads
        return
    monkeypatch.setattr(db, "INLINE_REST_S", 0.0)  # no rest after a failure: reopen at once
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    path = f"/api/v1/verifier/runs/{run_id}"
    inline = _statements(state.inline.engine)
    on_threads = calls_to(monkeypatch, fast, "_read", argument=1)
    first = service.client.get(path)
    assert first.status_code == 200
    assert inline
    assert on_threads == []
    dsn = service.database_url.replace("postgresql+psycopg", "postgresql")

    # The server ends the loop's connection: that read is made again on a worker thread.
    with psycopg.connect(dsn, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            (db.INLINE_APPLICATION_NAME,),
        ).fetchall()
    assert ended == [(True,)]
    assert service.client.get(path).content == first.content
    assert on_threads == [run_id]
    _wait_usable(state)  # opened again off the loop
    inline.clear()
    assert service.client.get(path).content == first.content
    assert inline
    assert on_threads == [run_id]

    # A statement stuck behind a lock is cancelled on the loop; a worker thread waits instead.
    with psycopg.connect(dsn) as holder:
        holder.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        release = threading.Timer(2 * db.INLINE_STATEMENT_TIMEOUT_MS / 1000, holder.commit)
        release.start()
        try:
            assert service.client.get(path).content == first.content
        finally:
            release.join()
    assert on_threads == [run_id, run_id]  # cancelled on the loop, then read on a thread

    # A process whose copy of the log is further behind than a read on the loop may load
    # (as after a restart) catches up on a worker thread.
    _wait_usable(state)
    monkeypatch.setattr(fast, "INLINE_CATCH_UP", 0)
    monkeypatch.setattr(state, "log_cache", LogCache())
    assert service.client.get(path).content == first.content
    assert on_threads == [run_id] * 3
    assert state.log_cache.size >= 1
    assert route_reads == []  # every answer came ahead of the routes


def test_a_loop_connection_that_cannot_open_leaves_reads_on_worker_threads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    inline = db.InlineReads(db.make_inline_engine(f"postgresql+psycopg://x@127.0.0.1:{port}/x"))
    with caplog.at_level("WARNING", logger="playproof.service"):
        inline.open()
        inline.open()
    assert inline.usable() is None
    assert not inline.needs_opening()
    warned = [r for r in caplog.records if "stay on worker threads" in r.getMessage()]
    assert len(warned) == 1
    inline.dispose()
