"""Hostile agents behind the one-shot and the session drivers.

``programs/hostile_agent.py`` reads what the driver sends, then floods lines,
stays silent, answers after the deadline, closes its stdout and keeps running,
answers in bytes that are not UTF-8, or puts a NUL in its answer. Each ends in
a typed error within the driver's bounds (lowered here) or in the documented
``noop``; no agent process outlives the driver; and an episode against such an
agent records nothing it did not play. (Floods without a newline, stderr
floods, crashes, hangs and escapes have their own tests beside the drivers'
and in ``test_processes.py``.)
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from leftovers import ask_decisions, tagged_processes

import playproof
from playproof.core.agent import NOOP, Action, Driver
from playproof.drivers.cli import CliDriver
from playproof.drivers.session import SessionDriver
from playproof.errors import DriverError, RunError

AGENT = Path(__file__).parent / "programs" / "hostile_agent.py"
VOCABULARY = ("up", "down")
TIMEOUT_S = 0.5
"""One decision's bound in these tests (the drivers' defaults are far longer)."""
OUTPUT_CAP = 1 << 16
"""The drivers' output caps in these tests."""
LATE_S = 3 * TIMEOUT_S
"""When the ``late`` agent answers: past the decision bound."""
GONE_WAIT_S = 10.0
"""How long a killed agent gets to disappear from the process table."""


@pytest.fixture
def marker() -> Iterator[str]:
    """A tag in every agent's environment; the test fails if a tagged process outlives it."""
    tag = uuid.uuid4().hex
    yield tag
    end = time.monotonic() + GONE_WAIT_S
    while tagged_processes("HOSTILE_MARKER", tag) and time.monotonic() < end:
        time.sleep(0.02)
    assert tagged_processes("HOSTILE_MARKER", tag) == [], "an agent process outlived its driver"


def _oneshot(marker: str, mode: str) -> CliDriver:
    return CliDriver(
        [sys.executable, str(AGENT), mode, "oneshot"],
        env=_env(marker),
        timeout_s=TIMEOUT_S,
        max_output_bytes=OUTPUT_CAP,
    )


def _session(marker: str, mode: str) -> SessionDriver:
    return SessionDriver(
        [sys.executable, str(AGENT), mode, "session"],
        env=_env(marker),
        decision_timeout_s=TIMEOUT_S,
        max_decision_bytes=OUTPUT_CAP,
        max_session_bytes=4 * OUTPUT_CAP,
        max_consecutive_lost=1,
    )


def _env(marker: str) -> dict[str, str]:
    return {**os.environ, "HOSTILE_MARKER": marker, "HOSTILE_LATE_S": str(LATE_S)}


def _decisions(driver: Driver, turns: int) -> list[Action]:
    return ask_decisions(driver, turns, VOCABULARY)


ONE_SHOT: dict[str, str] = {
    "lines": f"more than {OUTPUT_CAP} bytes",
    "silent": f"did not answer within {TIMEOUT_S} s",
    "late": f"did not answer within {TIMEOUT_S} s",
    "close": f"did not answer within {TIMEOUT_S} s",
    "utf8": "not {",
    "nul": "not {",
}
"""Each hostile one-shot agent and words its DriverError must hold."""

SESSION: dict[str, str] = {
    "lines": f"more than {OUTPUT_CAP} bytes in one decision",
    "silent": "2 decisions in a row unanswered",
    "late": "2 decisions in a row unanswered",
    "close": "closed its stdout after 0 answers",
    "utf8": "2 decisions in a row unanswered",
    "nul": "2 decisions in a row unanswered",
}
"""Each hostile session agent and words its DriverError must hold (a bad line is not an answer)."""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", sorted(ONE_SHOT))
def test_a_hostile_one_shot_agent_is_a_driver_error(marker: str, mode: str) -> None:
    with pytest.raises(DriverError, match=ONE_SHOT[mode]):
        _decisions(_oneshot(marker, mode), 2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", sorted(SESSION))
def test_a_hostile_session_agent_is_a_driver_error(marker: str, mode: str) -> None:
    with pytest.raises(DriverError, match=SESSION[mode]):
        _decisions(_session(marker, mode), 3)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["oneshot", "session"])
def test_an_escaped_nul_in_an_answer_is_noop(marker: str, kind: str) -> None:
    driver = _oneshot(marker, "nul-json") if kind == "oneshot" else _session(marker, "nul-json")
    assert [a.input for a in _decisions(driver, 2)] == [NOOP, NOOP]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("kind", "mode"),
    [("oneshot", "close"), ("oneshot", "utf8"), ("session", "lines"), ("session", "late")],
)
def test_an_episode_against_a_hostile_agent_records_nothing(
    marker: str, kind: str, mode: str
) -> None:
    driver: Any = _oneshot(marker, mode) if kind == "oneshot" else _session(marker, mode)
    with pytest.raises(RunError):
        playproof.run("native/2048", driver, max_turns=3)
