"""A real ``playproof serve`` on loopback with real signed runs and grades, and one Chromium.

The server runs in a subprocess on a free port with its SQLite database, log
key and frame cache in a temporary folder. Runs are uploaded through the API
as their owners would. The browser is Debian's ``chromium`` driven by
Playwright (launched by ``executable_path``: no browser is downloaded).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="the web pages need the server extra")
pytest.importorskip("jinja2", reason="the web pages need the server extra")

import playproof
from playproof.cli._desktop import upload_body
from playproof.core.contract import Contract
from playproof.core.game import VerificationMode
from playproof.core.record import ClaimedMilestone, RunRecord
from playproof.corpus import (
    CandidatePin,
    CaseResult,
    GradeRecord,
    load_manifest,
    shipped_paths,
    sign_grade,
)
from playproof.errors import PlayproofError
from playproof.service.app import prepare_database
from playproof.service.db import make_engine, session_factory
from playproof.service.leaderboards.services import add_challenge
from playproof.service.owners.services import add_key, add_owner, create_token
from playproof.service.settings import ServiceSettings
from playproof.sign import SigningKey
from playproof.targets import get_target

SERVER_START_S = 60.0
"""Longest the server may take to answer its first request (a bound, not an assertion)."""
VERDICT_WAIT_S = 120.0
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
SCREENSHOTS_ENV = "PLAYPROOF_WEB_SCREENSHOTS"
"""Set to a folder to keep the screenshots the tests take (default: a temporary folder)."""


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chromium_path() -> str | None:
    """Debian's chromium binary, if installed."""
    return next((p for p in CHROMIUM_CANDIDATES if Path(p).exists()), None)


@dataclass
class Server:
    """A running service and the runs uploaded to it, by name."""

    url: str
    folder: Path
    tokens: dict[str, str]
    runs: dict[str, str] = field(default_factory=dict)
    challenge: str = ""
    records: dict[str, RunRecord] = field(default_factory=dict)
    grades: dict[str, str] = field(default_factory=dict)
    grade_records: dict[str, GradeRecord] = field(default_factory=dict)

    def client(self) -> httpx.Client:
        """An HTTP client for the API."""
        return httpx.Client(base_url=self.url, timeout=30.0)

    def upload(
        self,
        name: str,
        record: RunRecord,
        key: SigningKey,
        owner: str,
        *,
        transcript: bytes | None = None,
        contract: Contract | None = None,
    ) -> str:
        """Sign ``record`` with ``key``, upload it as ``owner``, wait for the verdict.

        With a ``transcript`` (and the ad-hoc target's ``contract``), the upload is a run
        upload carrying them, as ``playproof submit`` sends a trusted-recorder run.
        """
        body, media_type = upload_body(
            playproof.sign_record(record, key).to_bytes(), transcript, contract
        )
        with self.client() as client:
            answer = client.post(
                "/api/v1/runs",
                content=body,
                headers={
                    "Authorization": f"Bearer {self.tokens[owner]}",
                    "Content-Type": media_type,
                },
            )
            assert answer.status_code in (200, 202), answer.text
            run_id = str(answer.json()["id"])
            deadline = time.monotonic() + VERDICT_WAIT_S
            while client.get(f"/api/v1/runs/{run_id}").json()["status"] == "pending":
                assert time.monotonic() < deadline, f"run {name} stayed pending"
                time.sleep(0.1)
        self.runs[name] = run_id
        self.records[name] = record
        return run_id

    def upload_many(self, records: list[RunRecord], key: SigningKey, owner: str) -> list[str]:
        """Upload every record at once, then wait until none is pending; their run ids."""
        headers = {"Authorization": f"Bearer {self.tokens[owner]}"}
        with self.client() as client:
            ids = []
            for record in records:
                body = playproof.sign_record(record, key).to_bytes()
                answer = client.post("/api/v1/runs", content=body, headers=headers)
                assert answer.status_code in (200, 202), answer.text
                ids.append(str(answer.json()["id"]))
            deadline = time.monotonic() + VERDICT_WAIT_S
            for run_id in ids:
                while client.get(f"/api/v1/runs/{run_id}").json()["status"] == "pending":
                    assert time.monotonic() < deadline, f"run {run_id} stayed pending"
                    time.sleep(0.1)
        return ids

    def upload_grade(self, name: str, record: GradeRecord, key: SigningKey, owner: str) -> str:
        """Sign a grade record, upload it as ``owner``, wait for the server's verdict."""
        with self.client() as client:
            answer = client.post(
                "/api/v1/grades",
                content=sign_grade(record, key).to_bytes(),
                headers={"Authorization": f"Bearer {self.tokens[owner]}"},
            )
            assert answer.status_code in (200, 202), answer.text
            grade_id = str(answer.json()["id"])
            deadline = time.monotonic() + VERDICT_WAIT_S
            while client.get(f"/api/v1/grades/{grade_id}").json()["status"] == "pending":
                assert time.monotonic() < deadline, f"grade {name} stayed pending"
                time.sleep(0.1)
        self.grades[name] = grade_id
        self.grade_records[name] = record
        return grade_id


def _wait_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"playproof serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/api/v1/log/head", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("playproof serve did not answer in time")


def _narrowed_contract() -> Contract:
    """The shipped 2048 contract without its last milestone: a user's contract, uncalibrated."""
    shipped = get_target("native/2048").contract
    return shipped.model_copy(update={"milestones": shipped.milestones[:-1]})


def _records() -> dict[str, RunRecord]:
    records = {
        "2048": playproof.run("native/2048", playproof.BaselineDriver("round-robin"), max_turns=40),
        "owner-only": playproof.run(
            "native/2048",
            playproof.BaselineDriver("constant:left"),
            max_turns=12,
            contract=_narrowed_contract(),
        ),
    }
    records["budgeted"] = playproof.run(
        "native/2048", playproof.BaselineDriver("round-robin"), max_turns=20, budget_usd=1.0
    )
    hostile = playproof.run("native/2048", playproof.BaselineDriver("random-walk"), max_turns=15)
    records["hostile"] = hostile.model_copy(
        update={"actor": hostile.actor.model_copy(update={"id": "<script>window.pwned=1</script>"})}
    )
    honest = records["2048"]
    # The claim moves a milestone to a later turn: signed, but replay disagrees.
    moved = tuple(
        ClaimedMilestone(id=c.id, turn=c.turn + 3) if i == len(honest.claimed) - 1 else c
        for i, c in enumerate(honest.claimed)
    )
    records["rejected"] = honest.model_copy(update={"claimed": moved})
    try:
        get_target("solana/swap").open().close()
    except PlayproofError:
        pass
    else:
        from playproof.drivers import ScriptedDriver

        records["policy"] = playproof.run(
            get_target("solana/swap"), ScriptedDriver(list(POLICY_LINES)), max_turns=10
        )
    try:
        get_target("pyboy/pp-collect").open().close()
    except PlayproofError:
        return records
    records["pp-collect"] = playproof.run(
        "pyboy/pp-collect", playproof.BaselineDriver("round-robin"), max_turns=60
    )
    return records


BOARD_EXTRA_RUNS = 56
"""Short 2048 runs added to the board so that it has two pages of 50 to sort across."""
POLICY_LINES = (
    "quote USDC JUP 300",
    "swap USDC JUP 300 100",
    "swap USDC JUP 999 100",
    "buy moon",
    "quote USDC JUP 200",
    "swap USDC JUP 200 100",
    "finish",
)
"""A policy-bound run with valid actions and two refused ones (no live quote, malformed)."""
GRADE_COMMAND = ["/home/alice/private/candidate", "--fast"]
"""The candidate's command line: it ties a lineage together and never appears on a page."""


def _grades() -> dict[str, GradeRecord]:
    """Two builds of one candidate graded on the shipped Blargg corpus: some cases change."""
    manifest = load_manifest(shipped_paths("blargg")[0])
    ids = [case.id for case in manifest.cases]
    passing = {"first": set(ids[:10]), "second": set(ids[:5]) | set(ids[12:20])}
    made = {}
    for number, (name, passed) in enumerate(passing.items(), start=1):
        results = [
            CaseResult(
                case_id=case_id,
                passed=case_id in passed,
                reason="serial transcript matches" if case_id in passed else "no 'Passed' seen",
            )
            for case_id in ids
        ]
        made[name] = GradeRecord(
            corpus_id="blargg",
            corpus_version=manifest.version,
            corpus_digest=manifest.digest,
            candidate=CandidatePin(command=GRADE_COMMAND, build_digest=str(number) * 64),
            isolation="rlimits",
            limits={"cpu_seconds": 10.0},
            results=results,
            passed=len(passed),
            denominator=len(ids),
            started_at=datetime(2026, 1, number, tzinfo=UTC),
            finished_at=datetime(2026, 1, number, 0, 2, tzinfo=UTC),
        )
    return made


MODE_WORDS = ["north", "take", "north", "take", "quit"]
"""The cave game played to its end: a trusted-recorder run."""


def _trusted_recorder(folder: Path, key: SigningKey) -> tuple[RunRecord, bytes, Contract]:
    """A trusted-recorder run of the cave game, its transcript sealed by ``key``."""
    import desktop_specs

    from playproof.adapters.desktop import TranscriptSealer
    from playproof.drivers import ScriptedDriver

    spec, contract = desktop_specs.cave(folder / "cave")
    sealer = TranscriptSealer(key, folder / "run.transcript.json")
    record = playproof.run(
        f"desktop:{spec}",
        ScriptedDriver(MODE_WORDS),
        contract=contract,
        mode=VerificationMode.TRUSTED_RECORDER,
        recorder=sealer,
        max_turns=len(MODE_WORDS),
    )
    assert sealer.sealed is not None
    return record, sealer.sealed, contract


def _platform_attested() -> RunRecord:
    """A platform-attested run: a toy game whose play unlocks a (fake) Steam achievement.

    Played in a thread of its own: a browser fixture may hold this thread's event loop.
    """
    from receipts_fakes import STEAM_APP, STEAM_USER, fake_provider
    from toygame import ToyGame

    from playproof.adapters.receipts import Credentials, arun_receipts, read_receipts_spec
    from playproof.drivers import ScriptedDriver
    from playproof.engine import EpisodeConfig

    with fake_provider("steam") as provider:

        class Unlocking(ToyGame):
            def step(self, word: str) -> None:
                super().step(word)
                with provider.lock:
                    if self.count >= 2:
                        provider.state.achievements["ACH_WIN"] = True

        provider.state.achievements = {"ACH_WIN": False}
        spec = read_receipts_spec(
            json.dumps(
                {
                    "schema": "playproof/receipts-target/v1",
                    "name": "tf2-demo",
                    "provider": "steam",
                    "title_id": STEAM_APP,
                    "play": "toy",
                    "user_env": "STEAM_USER_ID",
                    "key_env": "STEAM_API_KEY",
                    "game_name": "Team Fortress 2",
                    "milestones": [{"id": "win", "achievement": "ACH_WIN"}],
                    "base_url": provider.base_url,
                }
            )
        )
        config = EpisodeConfig(seed=0, max_turns=3, mode=VerificationMode.PLATFORM_ATTESTED)
        play = arun_receipts(
            spec,
            Unlocking(),
            ScriptedDriver(["inc", "inc", "wait"]),
            config,
            credentials=Credentials(STEAM_USER, "web-test-steam-api-key"),
        )
        with ThreadPoolExecutor(max_workers=1) as thread:
            return thread.submit(asyncio.run, play).result()


def _challenge(database_url: str) -> str:
    """A challenge on native/2048 (seed 0, at most 1 USD, open around now); its id."""
    engine = make_engine(database_url)
    try:
        with session_factory(engine)() as session:
            now = datetime.now(UTC)
            made = add_challenge(
                session, "native/2048", [0], 1.0, now - timedelta(hours=1), now + timedelta(hours=1)
            )
            return made.id
    finally:
        engine.dispose()


BOARD_AGENTS = ("walker-b", "Walker-a", "walker-a", "walker-c", "wälker")
"""Actor ids of the extra board runs: the agent order is neither the ranking nor upload order."""


def _named(record: RunRecord, number: int) -> RunRecord:
    """``record`` played by one of :data:`BOARD_AGENTS` (the actor is not replayed)."""
    actor = record.actor.model_copy(update={"id": BOARD_AGENTS[number * 3 % len(BOARD_AGENTS)]})
    return record.model_copy(update={"actor": actor})


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """``playproof serve`` in a subprocess, with alice's and bob's runs uploaded."""
    folder = Path(tempfile.mkdtemp(prefix="playproof-web-"))
    database_url = f"sqlite:///{folder / 'service.db'}"
    prepare_database(ServiceSettings(database_url=database_url))
    alice_key, bob_key = SigningKey.generate(), SigningKey.generate()
    engine = make_engine(database_url)
    tokens = {}
    with session_factory(engine)() as session:
        for name, key in (("alice", alice_key), ("bob", bob_key)):
            owner = add_owner(session, name)
            add_key(session, owner, key.verifying_key)
            tokens[name] = create_token(session, owner)
        session.commit()
    engine.dispose()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from playproof.cli import main; main()",
            "serve",
            "--database-url",
            database_url,
            "--port",
            str(port),
            "--log-key",
            str(folder / "log.key"),
        ],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_up(url, process)
        running = Server(url=url, folder=folder, tokens=tokens)
        for name, record in _records().items():
            running.upload(name, record, alice_key, "alice")
        record, transcript, contract = _trusted_recorder(folder, alice_key)
        running.upload(
            "trusted-recorder", record, alice_key, "alice", transcript=transcript, contract=contract
        )
        running.upload("platform-attested", _platform_attested(), alice_key, "alice")
        board = [
            _named(
                playproof.run(
                    "native/2048",
                    playproof.BaselineDriver("random-walk"),
                    max_turns=1 + number % 23,
                    seed=number,
                ),
                number,
            )
            for number in range(BOARD_EXTRA_RUNS)
        ]
        for number, run_id in enumerate(running.upload_many(board, alice_key, "alice")):
            running.runs[f"board-{number}"] = run_id
        for name, grade in _grades().items():
            running.upload_grade(name, grade, alice_key, "alice")
        running.challenge = _challenge(database_url)
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module (Debian's, by path).

    Per module, not per session: Playwright's sync API keeps an event loop running
    in this thread until it stops, and later tests call ``asyncio.run``.
    """
    try:
        sync_api: Any = importlib.import_module("playwright.sync_api")
    except ImportError:
        sync_api = None
    path = chromium_path()
    if sync_api is None or path is None:
        missing = "playwright (pip install playwright)" if sync_api is None else "chromium"
        if os.geteuid() == 0:
            pytest.fail(f"{missing} is not installed: run scripts/system-deps.sh and pip install")
        pytest.skip(f"{missing} is not installed and this is not root to install it")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where the tests write their screenshots."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(chosen) if chosen else Path(tempfile.mkdtemp(prefix="playproof-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
