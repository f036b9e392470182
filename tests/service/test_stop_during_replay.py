"""Stopping the app while a replay is under way ends its replay process.

Before, the app's own pool was shut down without waiting and its process left
running: a replay that never finishes then also kept the server process from
exiting (the interpreter waits for a pool's work at exit).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from playproof.corpus import sign_grade
from playproof.service import app as service_app
from playproof.service.app import create_app
from playproof.service.db import make_engine, upgrade
from playproof.service.grades.models import Grade
from playproof.service.runs.tasks import ReplayQueue
from playproof.service.settings import ServiceSettings
from playproof.sign import SigningKey

from .conftest import Service

JOIN_BOUND_S = 60.0
"""How long a killed replay process may take to be gone (far above what it needs)."""
STORED_BOUND_S = 60.0
"""How long the ended replay's outcome may take to reach the queue (far above what it needs)."""


def test_stopping_the_app_ends_a_replay_under_way(
    tmp_path: Path, signer: SigningKey, signed_2048: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    database_url = f"sqlite:///{tmp_path / 'service.db'}"
    engine = make_engine(database_url)
    upgrade(engine)
    engine.dispose()
    pools: list[ProcessPoolExecutor] = []
    make_pool = service_app.make_replay_pool

    def noted_pool(workers: int) -> ProcessPoolExecutor:
        pools.append(make_pool(workers))
        return pools[-1]

    monkeypatch.setattr(service_app, "make_replay_pool", noted_pool)
    # The replay is held back far longer than the test: it is under way when the app stops.
    settings = ServiceSettings(database_url=database_url, replay_delay_s=3600)
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=True) as client:
        service = Service(client, app.state.service.sessions, database_url)
        token = service.owner("alice", (signer.verifying_key,))
        assert service.upload(signed_2048, token).status_code == 202
        assert app.state.service.queue.in_flight() == 1
        (pool,) = pools
        processes = list(pool._processes.values())
        assert processes
    for process in processes:
        process.join(JOIN_BOUND_S)
        assert not process.is_alive(), "the replay process was left running"
    with service.sessions() as session:
        from playproof.service.runs.models import Run

        (run,) = session.query(Run).all()
        assert run.status == "pending"  # replayed at the next start


def test_a_replay_ended_by_stopping_is_logged_as_info_not_as_an_error(
    tmp_path: Path,
    signer: SigningKey,
    signed_2048: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The stop ends the replay's process on purpose: nothing failed, the run waits."""
    database_url = f"sqlite:///{tmp_path / 'service.db'}"
    engine = make_engine(database_url)
    upgrade(engine)
    engine.dispose()
    settings = ServiceSettings(database_url=database_url, replay_delay_s=3600)
    app = create_app(settings)
    stored = threading.Event()
    caplog.set_level(logging.INFO, logger="playproof.service")
    with TestClient(app, raise_server_exceptions=True) as client:
        service = Service(client, app.state.service.sessions, database_url)
        token = service.owner("alice", (signer.verifying_key,))
        run_id = service.upload(signed_2048, token).json()["id"]
        (future,) = app.state.service.queue._inflight.values()
        # Callbacks run in order: this one runs once the queue has handled the outcome.
        future.add_done_callback(lambda _: stored.set())
    assert stored.wait(STORED_BOUND_S), "the ended replay never reached the queue"
    assert isinstance(future.exception(), BrokenProcessPool)
    mine = [r for r in caplog.records if r.name == "playproof.service" and run_id in r.getMessage()]
    assert [r.levelno for r in mine] == [logging.INFO], [r.getMessage() for r in mine]
    message = mine[0].getMessage()
    assert "ended because the service stopped" in message
    assert "replayed at the next start" in message
    with service.sessions() as session:
        from playproof.service.runs.models import Run

        assert session.get(Run, run_id).status == "pending"  # type: ignore[union-attr]


class BrokenExecutor(Executor):
    """Every job fails as a pool whose process died does, with the service still running."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(BrokenProcessPool("a process in the pool died"))
        return future


def test_a_pool_that_breaks_while_the_service_runs_is_still_an_error(
    service: Service,
    signer: SigningKey,
    signed_2048: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = service.client.app.state.service  # type: ignore[attr-defined]
    state.queue = ReplayQueue(state.sessions, BrokenExecutor())
    caplog.set_level(logging.INFO, logger="playproof.service")
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload(signed_2048, token).json()["id"]
    assert service.verdict(run_id)["status"] == "failed"
    raised = [r for r in caplog.records if f"replay of run {run_id} raised" in r.getMessage()]
    assert raised
    assert all(r.levelno == logging.ERROR for r in raised)
    assert all("BrokenProcessPool" in r.getMessage() for r in raised)
    assert not any("service stopped" in r.getMessage() for r in caplog.records)


class HeldExecutor(Executor):
    """Every job is under way until the test ends it, as a pool's running job is."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()  # running: closing the queue cannot cancel it
        self.futures.append(future)
        return future


def _pending_grade(service: Service, signer: SigningKey, executor: Executor) -> tuple[str, Any]:
    """Upload a grade record whose check ``executor`` holds; its id and the queue."""
    from .test_grades import _post, _record

    state = service.client.app.state.service  # type: ignore[attr-defined]
    state.queue = ReplayQueue(state.sessions, executor)
    token = service.owner("alice", (signer.verifying_key,))
    accepted = _post(service, sign_grade(_record(), signer).to_bytes(), token)
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["id"]), state.queue


def test_a_grade_check_ended_by_stopping_is_logged_as_info_and_checked_at_the_next_start(
    service: Service, signer: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    """As for a run: the stop ends the check's process on purpose, the grade waits."""
    held = HeldExecutor()
    grade_id, queue = _pending_grade(service, signer, held)
    (future,) = held.futures
    caplog.set_level(logging.INFO, logger="playproof.service")
    queue.close()
    future.set_exception(BrokenProcessPool("the pool's processes were ended"))
    mine = [
        r for r in caplog.records if r.name == "playproof.service" and grade_id in r.getMessage()
    ]
    assert [r.levelno for r in mine] == [logging.INFO], [r.getMessage() for r in mine]
    message = mine[0].getMessage()
    assert "ended because the service stopped" in message
    assert "checked again at the next start" in message
    with service.sessions() as session:
        assert session.get(Grade, grade_id).status == "pending"  # type: ignore[union-attr]
    # What the message says: the next start submits the grade's check again.
    again = HeldExecutor()
    assert ReplayQueue(service.sessions, again).resume() == 1
    assert len(again.futures) == 1


def test_a_pool_that_breaks_during_a_grade_check_while_the_service_runs_is_still_an_error(
    service: Service, signer: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="playproof.service")
    grade_id, _ = _pending_grade(service, signer, BrokenExecutor())
    raised = [r for r in caplog.records if f"verifying grade {grade_id} raised" in r.getMessage()]
    assert raised
    assert all(r.levelno == logging.ERROR for r in raised)
    assert all("BrokenProcessPool" in r.getMessage() for r in raised)
    assert not any("service stopped" in r.getMessage() for r in caplog.records)
