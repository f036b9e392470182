"""Each agent driver plays native/2048 end to end; the record verifies by replay.

The spend in the record must equal the sum of the costs the agents actually
reported (counted independently here: by the loopback server, or from the
fixed per-decision costs of the test agent programs).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import playproof
from playproof._containment import containment
from playproof.core.agent import Driver
from playproof.core.record import RunRecord
from playproof.drivers._cost import Pricing
from playproof.drivers.cli import CliDriver
from playproof.drivers.openai import OpenAIDriver
from playproof.drivers.session import SessionDriver

AGENTS = Path(__file__).parent / "agents"
MOVES = ("left", "down", "right", "up", "Left.", "jump")  # the last two test normalization


class _MoveServer(ThreadingHTTPServer):
    """Answers every chat completion with the next move; alternates the two cost paths."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _MoveHandler)
        self.moves = itertools.cycle(MOVES)
        self.count = itertools.count()
        self.charged: list[float] = []
        self.lock = threading.Lock()


class _MoveHandler(BaseHTTPRequestHandler):
    server: _MoveServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        with self.server.lock:
            move, index = next(self.server.moves), next(self.server.count)
            usage: dict[str, Any] = {
                "prompt_tokens": 1000,
                "completion_tokens": 500,
                "prompt_tokens_details": {"cached_tokens": 400},
            }
            if index % 2:
                usage["cost"] = 0.0005  # provider-reported (OpenRouter style)
                self.server.charged.append(0.0005)
            else:
                self.server.charged.append(0.0018)  # 1 / 0.5 / 2 USD per million tokens
        body = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": move}}], "usage": usage}
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def move_server() -> Iterator[_MoveServer]:
    server = _MoveServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def play(driver: Driver, turns: int) -> RunRecord:
    record = asyncio.run(playproof.arun("native/2048", driver, max_turns=turns, budget_usd=10.0))
    report = playproof.verify_record(record)
    assert report.verdict == "clean", [c for c in report.checks if not c.passed]
    assert record.actor.kind == driver.kind
    assert record.actor.id == driver.id
    assert record.accounting.unmeasured_decisions == 0
    costs = [d.cost_usd for d in record.decisions]
    assert None not in costs
    total = 0.0
    for cost in costs:
        total += cost or 0.0
    assert record.accounting.spent_usd == total
    return record


def test_http_driver_episode_verifies_with_measured_spend(move_server: _MoveServer) -> None:
    pricing = Pricing(input_usd_per_mtok=1, cached_input_usd_per_mtok=0.5, output_usd_per_mtok=2)
    driver = OpenAIDriver(
        "loopback-model",
        base_url=f"http://127.0.0.1:{move_server.server_address[1]}/v1",
        pricing=pricing,
        timeout_s=5,
    )
    record = play(driver, 24)
    assert record.accounting.spent_usd == pytest.approx(math.fsum(move_server.charged), rel=1e-12)
    inputs = [d.input for d in record.decisions]
    assert inputs[:6] == ["left", "down", "right", "up", "left", "noop"]
    assert record.provenance.driver["cost_from_provider"] == 12
    assert record.provenance.driver["cost_from_pricing"] == 12


def test_one_shot_cli_episode_verifies_with_measured_spend() -> None:
    driver = CliDriver([sys.executable, str(AGENTS / "oneshot.py"), "json"], timeout_s=10)
    record = play(driver, 12)
    assert record.accounting.spent_usd == pytest.approx(12 * 0.001, rel=1e-12)
    assert record.provenance.driver == {
        "decisions": 12,
        "failures": 0,
        "containment": containment().kind,
    }


def test_session_episode_verifies_with_measured_spend() -> None:
    driver = SessionDriver([sys.executable, str(AGENTS / "session.py"), "echo"])
    record = play(driver, 200)
    assert len(record.decisions) == 200 or record.game_over
    turns = len(record.decisions)
    assert record.accounting.spent_usd == pytest.approx(turns * 0.0001, rel=1e-12)
    health = record.provenance.driver
    assert (health["answered"], health["lost"], health["discarded"]) == (turns, 0, 0)
    assert health["latency_ms"]["count"] == turns
