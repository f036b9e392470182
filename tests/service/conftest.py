"""Fixtures of the service tests: every API test runs on SQLite and on a real PostgreSQL.

The PostgreSQL server is started once per session from the Debian binaries
(``scripts/system-deps.sh`` installs them): as root, ``initdb`` and ``pg_ctl``
run as the ``postgres`` user in a temporary folder, listening on 127.0.0.1
and a free port. Each test gets a fresh database.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the service needs the server extra")

from sqlalchemy.orm import Session, sessionmaker

import playproof
from playproof.core.record import RunRecord
from playproof.service.app import create_app
from playproof.service.db import make_engine, upgrade
from playproof.service.owners.services import add_key, add_owner, create_token
from playproof.service.runs.tasks import make_replay_pool
from playproof.service.settings import ServiceSettings
from playproof.sign import SigningKey, VerifyingKey

with warnings.catch_warnings():
    # This starlette asks for another HTTP client package; the httpx one still works.
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

PG_START_TIMEOUT_S = 60
VERDICT_WAIT_S = 120.0
"""Longest a test waits for a replay verdict (a bound, not a timed assertion)."""
RECORD_TURNS = 30


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _as_postgres(command: list[str], root: bool) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if root else command


@pytest.fixture(scope="session")
def postgres_root_url() -> Iterator[str]:
    """A PostgreSQL server for this test session; its URL without a database name."""
    binaries = _pg_bin()
    root = os.geteuid() == 0
    if binaries is None:
        pytest.skip("PostgreSQL is not installed: run scripts/system-deps.sh (Debian postgresql)")
    base = Path(tempfile.mkdtemp(prefix="playproof-pg-"))
    if root:
        shutil.chown(base, "postgres", "postgres")
    data = base / "data"
    port = free_port()
    subprocess.run(
        _as_postgres(
            [
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            root,
        ),
        check=True,
        capture_output=True,
        timeout=PG_START_TIMEOUT_S,
    )
    options = f"-h 127.0.0.1 -p {port} -k {base} -F"
    ctl = str(binaries / "pg_ctl")
    subprocess.run(
        _as_postgres(
            [
                ctl,
                "-D",
                str(data),
                "-l",
                str(base / "server.log"),
                "-w",
                "-t",
                str(PG_START_TIMEOUT_S),
                "-o",
                options,
                "start",
            ],
            root,
        ),
        check=True,
        capture_output=True,
        timeout=PG_START_TIMEOUT_S + 10,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(
            _as_postgres([ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], root),
            check=False,
            capture_output=True,
            timeout=PG_START_TIMEOUT_S,
        )
        shutil.rmtree(base, ignore_errors=True)


def _postgres_admin(root_url: str, statement: str) -> None:
    import psycopg

    dsn = root_url.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(statement)  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file, or a fresh database on the session's PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'service.db'}"
        return
    root_url = request.getfixturevalue("postgres_root_url")
    name = f"t_{uuid.uuid4().hex[:12]}"
    _postgres_admin(root_url, f"CREATE DATABASE {name}")
    try:
        yield f"{root_url}/{name}"
    finally:
        _postgres_admin(root_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def replay_pool() -> Iterator[ProcessPoolExecutor]:
    """One replay process shared by every in-process app of the session."""
    pool = make_replay_pool(1)
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def signer() -> SigningKey:
    """The key that signs the test records."""
    return SigningKey.generate()


@pytest.fixture(scope="session")
def record_2048() -> RunRecord:
    """A short real run of the packaged 2048 target."""
    return playproof.run(
        "native/2048", playproof.BaselineDriver("round-robin"), max_turns=RECORD_TURNS
    )


@pytest.fixture(scope="session")
def signed_2048(record_2048: RunRecord, signer: SigningKey) -> bytes:
    """That run, signed."""
    return playproof.sign_record(record_2048, signer).to_bytes()


@dataclass
class Service:
    """An in-process service on one database, and helpers to drive it."""

    client: TestClient
    sessions: sessionmaker[Session]
    database_url: str

    def owner(
        self, name: str, keys: tuple[VerifyingKey, ...] = (), contact: str | None = None
    ) -> str:
        """Add an owner with ``keys``; its fresh API token."""
        with self.sessions() as session:
            owner = add_owner(session, name, contact)
            for key in keys:
                add_key(session, owner, key)
            token = create_token(session, owner)
            session.commit()
        return token

    def upload(self, body: bytes, token: str, **headers: str) -> httpx.Response:
        """POST a body to the upload route with a bearer token."""
        return self.client.post(
            "/api/v1/runs",
            content=body,
            headers={"Authorization": f"Bearer {token}", **headers},
        )

    def upload_verified(self, signer: SigningKey, record: RunRecord, token: str) -> str:
        """Sign a fresh copy of ``record`` (a new start time), upload it; its id once verified."""
        again = RunRecord.model_validate({**record.to_json(), "started_at": uuid.uuid4().hex})
        accepted = self.upload(playproof.sign_record(again, signer).to_bytes(), token)
        assert accepted.status_code == 202, accepted.text
        run_id = str(accepted.json()["id"])
        assert self.verdict(run_id)["status"] == "verified"
        return run_id

    def verdict(self, run_id: str, token: str | None = None) -> dict[str, Any]:
        """The run's status once it is no longer pending (bounded wait; ``token`` reads it)."""
        deadline = time.monotonic() + VERDICT_WAIT_S
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        while True:
            answer = self.client.get(f"/api/v1/runs/{run_id}", headers=headers).json()
            if answer["status"] != "pending" or time.monotonic() > deadline:
                return dict(answer)
            time.sleep(0.05)


def calls_to(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, argument: int = 0
) -> list[Any]:
    """Patch ``owner.name`` to note its ``argument``-th positional argument at every call."""
    noted: list[Any] = []
    real = getattr(owner, name)

    def noting(*args: Any, **kwargs: Any) -> Any:
        noted.append(args[argument])
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, noting)
    return noted


@pytest.fixture
def service(
    database_url: str, replay_pool: ProcessPoolExecutor, tmp_path: Path
) -> Iterator[Service]:
    """A migrated database and an app serving it, replays on the shared pool."""
    engine = make_engine(database_url)
    upgrade(engine)
    engine.dispose()
    settings = ServiceSettings(database_url=database_url, log_key_file=tmp_path / "log.key")
    app = create_app(settings, executor=replay_pool)
    with TestClient(app, raise_server_exceptions=True) as client:
        state = app.state.service
        yield Service(client=client, sessions=state.sessions, database_url=database_url)
