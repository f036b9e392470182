"""Stopping the app while a replay is under way ends its replay process.

Before, the app's own pool was shut down without waiting and its process left
running: a replay that never finishes then also kept the server process from
exiting (the interpreter waits for a pool's work at exit).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from playproof.service import app as service_app
from playproof.service.app import create_app
from playproof.service.db import make_engine, upgrade
from playproof.service.settings import ServiceSettings
from playproof.sign import SigningKey

from .conftest import Service

JOIN_BOUND_S = 60.0
"""How long a killed replay process may take to be gone (far above what it needs)."""


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
