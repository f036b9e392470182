"""Status long polls (``?wait=S``), and the few queries an upload and a proof read make."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

import playproof
from playproof.core.record import RunRecord
from playproof.service.app import create_app
from playproof.service.db import make_engine, upgrade
from playproof.service.owners.services import add_key, add_owner, create_token
from playproof.service.runs.models import Run
from playproof.service.runs.routes import MAX_STATUS_WAIT_S
from playproof.service.settings import ServiceSettings
from playproof.sign import SigningKey

from .conftest import calls_to

Held = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class HeldExecutor(Executor):
    """Runs nothing until ``release``: a replay that is under way for as long as a test likes."""

    def __init__(self) -> None:
        self.held: list[
            tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]
        ] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self.held.append((future, fn, args, kwargs))
        return future

    def release(self) -> None:
        """Run every held replay now, in this thread."""
        for future, fn, args, kwargs in self.held:
            future.set_result(fn(*args, **kwargs))
        self.held.clear()


@pytest.fixture
def held(database_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, HeldExecutor, Any]]:
    engine = make_engine(database_url)
    upgrade(engine)
    engine.dispose()
    executor = HeldExecutor()
    settings = ServiceSettings(database_url=database_url, log_key_file=tmp_path / "log.key")
    app = create_app(settings, executor=executor)
    with TestClient(app) as client:
        yield client, executor, app.state.service.sessions


@pytest.fixture
def pending(
    held: tuple[TestClient, HeldExecutor, Any], signed_2048: bytes, signer: SigningKey
) -> tuple[TestClient, HeldExecutor, Any, str]:
    """The held app and the id of one uploaded run whose replay is held back."""
    client, executor, sessions = held
    return client, executor, sessions, _upload(client, signed_2048, _token(sessions, signer))


def _token(sessions: Any, signer: SigningKey) -> str:
    with sessions() as session:
        owner = add_owner(session, "alice")
        add_key(session, owner, signer.verifying_key)
        token = create_token(session, owner)
        session.commit()
    return token


def _upload(client: TestClient, body: bytes, token: str) -> str:
    answer = client.post("/api/v1/runs", content=body, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 202, answer.text
    return str(answer.json()["id"])


def test_a_long_poll_answers_as_soon_as_the_verdict_is_stored(
    pending: tuple[TestClient, HeldExecutor, Any, str],
) -> None:
    client, executor, _sessions, run_id = pending
    assert client.get(f"/api/v1/runs/{run_id}").json()["status"] == "pending"
    timer = threading.Timer(1.0, executor.release)
    timer.start()
    started = time.monotonic()
    answer = client.get(f"/api/v1/runs/{run_id}", params={"wait": 20})
    waited = time.monotonic() - started
    timer.join()
    assert answer.status_code == 200
    assert answer.json()["status"] == "verified"
    assert 0.9 <= waited < 10  # held until the verdict, not for the whole wait


def test_a_long_poll_that_runs_out_answers_pending(
    pending: tuple[TestClient, HeldExecutor, Any, str],
) -> None:
    client, _executor, _sessions, run_id = pending
    started = time.monotonic()
    answer = client.get(f"/api/v1/runs/{run_id}", params={"wait": 1.0})
    assert answer.json()["status"] == "pending"
    assert time.monotonic() - started >= 0.95


def test_a_verdict_another_process_stored_ends_the_wait(
    pending: tuple[TestClient, HeldExecutor, Any, str],
) -> None:
    client, _executor, sessions, run_id = pending

    def store_elsewhere() -> None:  # as a second server process on the same database would
        with sessions() as session:
            session.execute(update(Run).where(Run.id == run_id).values(status="rejected"))
            session.commit()

    timer = threading.Timer(0.5, store_elsewhere)
    timer.start()
    started = time.monotonic()
    answer = client.get(f"/api/v1/runs/{run_id}", params={"wait": 20})
    timer.join()
    assert answer.json()["status"] == "rejected"
    assert time.monotonic() - started < 5


def test_a_finished_run_is_answered_at_once_and_the_wait_is_bounded(
    pending: tuple[TestClient, HeldExecutor, Any, str],
) -> None:
    client, executor, _sessions, run_id = pending
    executor.release()
    started = time.monotonic()
    assert client.get(f"/api/v1/runs/{run_id}", params={"wait": 20}).json()["status"] == "verified"
    assert time.monotonic() - started < 5
    for wait in (MAX_STATUS_WAIT_S + 1, -1, "soon", "nan", "inf"):
        answer = client.get(f"/api/v1/runs/{run_id}", params={"wait": wait})
        assert answer.status_code == 422
        assert answer.headers["content-type"].startswith("application/problem+json")


def test_an_unknown_run_is_404_without_waiting(
    held: tuple[TestClient, HeldExecutor, Any],
) -> None:
    client, _executor, _sessions = held
    started = time.monotonic()
    answer = client.get(f"/api/v1/runs/{'0' * 32}", params={"wait": 20})
    assert answer.status_code == 404
    assert time.monotonic() - started < 5


def test_no_waiter_is_left_behind(
    pending: tuple[TestClient, HeldExecutor, Any, str],
) -> None:
    client, executor, _sessions, run_id = pending
    client.get(f"/api/v1/runs/{run_id}", params={"wait": 0.2})
    queue = client.app.state.service.queue  # type: ignore[attr-defined]
    assert queue._waiters == {}  # what a long poll leaves behind: nothing
    executor.release()


def test_an_upload_and_a_proof_read_cost_few_queries(
    held: tuple[TestClient, HeldExecutor, Any],
    signed_2048: bytes,
    record_2048: RunRecord,
    signer: SigningKey,
) -> None:
    from sqlalchemy import event

    client, executor, sessions = held
    token = _token(sessions, signer)
    state = client.app.state.service  # type: ignore[attr-defined]
    # The service's engine, and on PostgreSQL the event loop's own connection.
    engines = [e for e in (state.engine, state.inline.engine) if e is not None]
    seen: list[str] = []

    def count(_c: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(statement.split(None, 1)[0].upper())

    for engine in engines:
        event.listen(engine, "before_cursor_execute", count)
    try:
        run_id = _upload(client, signed_2048, token)
        # The token with its owner and the owner's keys, the target, the insert: the
        # replay is handed what the upload read instead of reading it back.
        assert [s for s in seen if s in ("SELECT", "INSERT", "UPDATE")] == [
            "SELECT",
            "SELECT",
            "INSERT",
        ]
        seen.clear()  # another upload of the same target: it is known to be packaged now
        again = RunRecord.model_validate({**record_2048.to_json(), "started_at": "again"})
        _upload(client, playproof.sign_record(again, signer).to_bytes(), token)
        assert [s for s in seen if s in ("SELECT", "INSERT", "UPDATE")] == ["SELECT", "INSERT"]
        executor.release()
        assert client.get(f"/api/v1/verifier/runs/{run_id}").status_code == 200
        seen.clear()  # the first read also caught the in-process tree up with the new leaf
        assert client.get(f"/api/v1/verifier/runs/{run_id}").status_code == 200
        assert [s for s in seen if s in ("SELECT", "INSERT", "UPDATE")] == ["SELECT"]
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", count)


def test_a_long_poll_reads_the_run_once_or_twice_when_it_waited(
    pending: tuple[TestClient, HeldExecutor, Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.service.runs import routes

    client, executor, _sessions, run_id = pending
    reads = calls_to(monkeypatch, routes, "get_run", argument=1)

    def release_once_read() -> None:  # the verdict comes while the poll waits
        deadline = time.monotonic() + 10
        while not reads and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        executor.release()

    releaser = threading.Thread(target=release_once_read)
    releaser.start()
    waited = client.get(f"/api/v1/runs/{run_id}", params={"wait": 20})
    releaser.join()
    assert waited.json()["status"] == "verified"
    assert reads == [run_id, run_id]  # pending (after the wait was registered), the verdict
    reads.clear()
    done = client.get(f"/api/v1/runs/{run_id}", params={"wait": 20})
    assert done.json()["status"] == "verified"
    assert reads == [run_id]  # finished already: answered from one read


def test_a_wake_up_whose_verdict_was_not_stored_does_not_spin(
    pending: tuple[TestClient, HeldExecutor, Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from playproof.service.runs import tasks

    client, executor, _sessions, run_id = pending

    def fails(*_args: object, **_kwargs: object) -> bool:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(tasks, "finish_run", fails)  # stored never: the run stays pending
    reads: list[float] = []
    real = tasks.ReplayQueue.settled

    async def counting(self: Any, run: str, timeout: float, still_pending: Any) -> None:
        async def counted() -> Any:
            reads.append(time.monotonic())
            return await still_pending()

        await real(self, run, timeout, counted)

    monkeypatch.setattr(tasks.ReplayQueue, "settled", counting)
    timer = threading.Timer(0.3, executor.release)
    timer.start()
    answer = client.get(f"/api/v1/runs/{run_id}", params={"wait": 2.5})
    timer.join()
    assert answer.json()["status"] == "pending"
    # Registered, woken once by the failed storing, then once a second: a handful of reads.
    assert len(reads) <= 6
