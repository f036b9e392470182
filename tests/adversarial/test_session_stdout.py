"""A session agent whose stdout is gone: the next decision fails at once, what was played stays.

``programs/hostile_agent.py`` answers one decision, then closes its stdout and
keeps running (``close-after-one``) or exits (``exit-after-one``). The decision
timeout here is far longer than anything the tests wait for: a driver that
waited it out would fail them through the pytest timeout, and the error must
say what happened (a closed stdout is not a silent agent).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from leftovers import tagged_processes

import playproof
from playproof.core.agent import Action, DecisionContext
from playproof.core.observation import Observation
from playproof.drivers.session import SessionDriver
from playproof.errors import DriverError, RunError

AGENT = Path(__file__).parent / "programs" / "hostile_agent.py"
VOCABULARY = ("up", "down")
DECISION_S = 600.0
"""Far past the pytest timeout: waiting out one decision fails the test."""
GONE_WAIT_S = 10.0
"""How long a killed agent gets to disappear from the process table."""
ENDINGS = {
    "close-after-one": "closed its stdout after 1 answers and kept running",
    "exit-after-one": r"ended \(exited with status 0\) after 1 answers",
}


@pytest.fixture
def marker() -> Iterator[str]:
    """A tag in every agent's environment; the test fails if a tagged process outlives it."""
    tag = uuid.uuid4().hex
    yield tag
    end = time.monotonic() + GONE_WAIT_S
    while tagged_processes("HOSTILE_MARKER", tag) and time.monotonic() < end:
        time.sleep(0.02)
    assert tagged_processes("HOSTILE_MARKER", tag) == [], "an agent process outlived its driver"


def _driver(marker: str, mode: str) -> SessionDriver:
    return SessionDriver(
        [sys.executable, str(AGENT), mode, "session"],
        env={**os.environ, "HOSTILE_MARKER": marker},
        decision_timeout_s=DECISION_S,
        max_consecutive_lost=0,
    )


def _play_until_failure(driver: SessionDriver, turns: int) -> tuple[list[Action], Exception]:
    """Decisions until the driver fails: the actions it gave, and its error."""

    async def episode() -> tuple[list[Action], Exception]:
        actions: list[Action] = []
        try:
            for turn in range(1, turns + 1):
                context = DecisionContext(turn, turns, 1, 0.0, None, VOCABULARY)
                actions.append(await driver.act(Observation(text="board"), (), context))
        except DriverError as exc:
            return actions, exc
        finally:
            await driver.aclose()
        raise AssertionError("the driver never failed")

    return asyncio.run(episode())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", sorted(ENDINGS))
def test_the_decision_after_the_agent_lost_its_stdout_fails_at_once(marker: str, mode: str) -> None:
    driver = _driver(marker, mode)
    actions, error = _play_until_failure(driver, 3)
    assert [a.input for a in actions] == ["up"]  # the answered decision is kept as it was
    assert isinstance(error, DriverError)
    assert re.search(ENDINGS[mode], str(error))
    health = driver.provenance()
    assert (health["answered"], health["lost"]) == (1, 0)  # the failure is no lost decision


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", sorted(ENDINGS))
def test_an_episode_on_such_an_agent_ends_with_the_driver_error(marker: str, mode: str) -> None:
    with pytest.raises(RunError, match=ENDINGS[mode]):
        playproof.run("native/2048", _driver(marker, mode), max_turns=5)


PROBE_BOUND_S = 30.0
"""How long the stand-in probe waits for the event loop to run another task (a bound
that only ends a test whose loop is blocked; the check is whether the task ran)."""


@pytest.mark.timeout(120)
def test_the_stdout_probe_leaves_the_event_loop_free(
    marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe walks ``/proc`` (slow with many processes): other tasks run meanwhile."""
    import playproof.drivers.session as session_module

    real_probe = session_module.pipe_still_held
    ticked = threading.Event()
    loop_ran: list[bool] = []

    def slow_probe(process: asyncio.subprocess.Process, inode: int, *, layers: int) -> bool:
        ticked.clear()
        # Returns as soon as a task on the event loop runs; blocking the loop, never.
        loop_ran.append(ticked.wait(PROBE_BOUND_S))
        return real_probe(process, inode, layers=layers)

    monkeypatch.setattr(session_module, "pipe_still_held", slow_probe)

    async def ticker() -> None:
        while True:
            ticked.set()
            await asyncio.sleep(0.01)

    async def episode() -> Exception:
        driver = _driver(marker, "close-after-one")
        beside = asyncio.ensure_future(ticker())
        try:
            for turn in (1, 2, 3):
                context = DecisionContext(turn, 3, 1, 0.0, None, VOCABULARY)
                await driver.act(Observation(text="board"), (), context)
        except DriverError as exc:
            return exc
        finally:
            beside.cancel()
            await driver.aclose()
        raise AssertionError("the driver never failed")

    error = asyncio.run(episode())
    assert re.search(ENDINGS["close-after-one"], str(error))
    assert loop_ran, "the stdout probe never ran"
    assert all(loop_ran), "the event loop was blocked while the stdout probe ran"
