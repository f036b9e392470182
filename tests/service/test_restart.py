"""A real server process: admin commands, kill -9 during a replay, restart, ``submit``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import playproof
from playproof.core.record import ClaimedMilestone, RunRecord
from playproof.service.db import make_engine, session_factory, upgrade
from playproof.service.runs.models import Run
from playproof.sign import SigningKey

from .conftest import free_port

READY_WAIT_S = 60.0
VERDICT_WAIT_S = 120.0
SLOW_REPLAY_S = 600.0
"""The first server holds its replay back this long: it is killed long before."""

LAUNCH = """
import sys
import uvicorn
from playproof.service.app import create_app, prepare_database
from playproof.service.settings import ServiceSettings
settings = ServiceSettings(database_url=sys.argv[1], replay_delay_s=float(sys.argv[3]))
prepare_database(settings)
uvicorn.run(create_app(settings), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def _playproof(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_cli(), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _cli() -> str:
    return str(Path(sys.executable).with_name("playproof"))


class Server:
    """A service process on a loopback port, in a process group of its own."""

    def __init__(self, database_url: str, delay_s: float) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, database_url, str(self.port), str(delay_s)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + READY_WAIT_S
        while True:
            try:
                httpx.get(f"{self.url}/openapi.json", timeout=2.0)
                return
            except httpx.HTTPError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError("the service did not start") from None
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the server and everything it started (its replay processes)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        if self.process.stderr is not None:
            self.process.stderr.close()

    def status(self, run_id: str) -> dict[str, object]:
        return dict(httpx.get(f"{self.url}/api/v1/runs/{run_id}", timeout=10.0).json())


@pytest.fixture
def migrated(database_url: str) -> str:
    engine = make_engine(database_url)
    upgrade(engine)
    engine.dispose()
    return database_url


def _admin(database_url: str, signer: SigningKey, tmp_path: Path) -> str:
    """Owner, key and token through the admin commands; the token."""
    public = signer.verifying_key.save(tmp_path / "signer.pub.pem")
    added = _playproof("service", "owner", "add", "alice", "--database-url", database_url)
    assert added.returncode == 0, added.stderr
    key = _playproof("service", "key", "add", "alice", str(public), "--database-url", database_url)
    assert key.returncode == 0, key.stderr
    made = _playproof("service", "token", "create", "alice", "--database-url", database_url)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("pp_")
    return token


@pytest.mark.slow
def test_a_run_pending_when_the_server_is_killed_is_verified_after_restart(
    migrated: str, signer: SigningKey, signed_2048: bytes, record_2048: RunRecord, tmp_path: Path
) -> None:
    token = _admin(migrated, signer, tmp_path)
    first = Server(migrated, delay_s=SLOW_REPLAY_S)
    try:
        answer = httpx.post(
            f"{first.url}/api/v1/runs",
            content=signed_2048,
            headers={"Authorization": f"Bearer {token}"},
            timeout=30.0,
        )
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["id"]
        assert first.status(run_id)["status"] == "pending"
    finally:
        first.kill()

    engine = make_engine(migrated)
    with session_factory(engine)() as session:
        stored = session.get(Run, run_id)
        assert stored is not None
        assert stored.status == "pending"
    engine.dispose()

    second = Server(migrated, delay_s=0.0)
    try:
        deadline = time.monotonic() + VERDICT_WAIT_S
        while second.status(run_id)["status"] == "pending" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert second.status(run_id)["status"] == "verified"

        # submit: the same envelope is the same, verified run (exit 0) ...
        good = tmp_path / "good.json"
        good.write_bytes(signed_2048)
        env = {"PP_TEST_TOKEN": token}
        done = _playproof(
            "submit",
            str(good),
            "--server",
            second.url,
            "--token-env",
            "PP_TEST_TOKEN",
            "--json",
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["id"] == run_id

        # ... and a signed claim replay does not reproduce is rejected (exit 1).
        claims = [c.model_dump() for c in record_2048.claimed]
        claims.append(ClaimedMilestone(id="tile-256", turn=len(record_2048.decisions)).model_dump())
        forged = RunRecord.model_validate({**record_2048.to_json(), "claimed": claims})
        bad = tmp_path / "bad.json"
        bad.write_bytes(playproof.sign_record(forged, signer).to_bytes())
        rejected = _playproof(
            "submit", str(bad), "--server", second.url, "--token-env", "PP_TEST_TOKEN", env=env
        )
        assert rejected.returncode == 1, rejected.stderr
        assert "claims-reproduced" in rejected.stdout
    finally:
        second.kill()


def test_submit_to_no_server_is_an_error(signed_2048: bytes, tmp_path: Path) -> None:
    record = tmp_path / "run.json"
    record.write_bytes(signed_2048)
    result = _playproof(
        "submit",
        str(record),
        "--server",
        f"http://127.0.0.1:{free_port()}",
        "--token-env",
        "PP_TEST_TOKEN",
        env={"PP_TEST_TOKEN": "pp_x"},
    )
    assert result.returncode == 3
    assert "ServiceError" in result.stderr


def test_submit_without_a_token_is_an_error(signed_2048: bytes, tmp_path: Path) -> None:
    record = tmp_path / "run.json"
    record.write_bytes(signed_2048)
    env = {k: v for k, v in os.environ.items() if k != "PP_NO_TOKEN"}
    result = subprocess.run(
        [
            _cli(),
            "submit",
            str(record),
            "--server",
            "http://127.0.0.1:1",
            "--token-env",
            "PP_NO_TOKEN",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 3
    assert "PP_NO_TOKEN" in result.stderr
