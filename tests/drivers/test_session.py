"""The persistent session driver against small real agent programs."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from playproof.core.agent import NOOP, Action, DecisionContext
from playproof.core.observation import Observation
from playproof.drivers.session import SessionDriver
from playproof.errors import DriverError, RunCancelled

AGENT = str(Path(__file__).parent / "agents" / "session.py")
VOCABULARY = ("up", "down", "left", "right")
OBSERVATION = Observation(text="score 0")
T = TypeVar("T")


def run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(work)


def context(turn: int, seed: int = 1, cancel: asyncio.Event | None = None) -> DecisionContext:
    return DecisionContext(
        turn=turn,
        max_turns=10_000,
        seed=seed,
        spent_usd=0.0,
        remaining_usd=None,
        vocabulary=VOCABULARY,
        cancel=cancel or asyncio.Event(),
    )


def driver(marker: str, mode: str, *extra: str, **options: Any) -> SessionDriver:
    env = {**os.environ, "PLAYPROOF_TEST_MARKER": marker}
    return SessionDriver([sys.executable, AGENT, mode, *extra], env=env, **options)


async def episode(agent: SessionDriver, turns: int, seed: int = 1) -> list[Action]:
    try:
        return [await agent.act(OBSERVATION, [], context(t, seed)) for t in range(1, turns + 1)]
    finally:
        await agent.aclose()


def expected(turn: int) -> str:
    return VOCABULARY[turn % len(VOCABULARY)]


def test_a_session_answers_a_thousand_decisions_with_one_process(marker: str) -> None:
    agent = driver(marker, "echo", history_limit=0)
    actions = run(episode(agent, 1000))
    assert [a.input for a in actions] == [expected(t) for t in range(1, 1001)]
    assert all(a.cost_usd == 0.0001 for a in actions)
    report = agent.provenance()
    assert (report["sessions"], report["answered"], report["lost"], report["discarded"]) == (
        1,
        1000,
        0,
        0,
    )
    latency = report["latency_ms"]
    assert latency["count"] == 1000
    assert 0 < latency["p50"] <= latency["p95"] <= latency["max"]
    assert agent.kind == "session"
    assert not agent.id.startswith("session:")
    assert agent.label == f"session:{agent.id}"
    assert "session.py" in agent.id


def test_a_session_that_dies_midway_is_a_driver_error(marker: str) -> None:
    agent = driver(marker, "die-after", "5")
    with pytest.raises(DriverError, match=r"exited with status 5\) after 5 answers.*out of memory"):
        run(episode(agent, 10))
    assert agent.provenance()["answered"] == 5


def test_stray_lines_are_counted_and_discarded(marker: str) -> None:
    agent = driver(marker, "stray")
    actions = run(episode(agent, 3))
    assert [a.input for a in actions] == [expected(t) for t in (1, 2, 3)]
    assert agent.provenance()["discarded"] == 3 * 5


def test_replies_without_a_turn_echo_are_taken_as_current(marker: str) -> None:
    actions = run(episode(driver(marker, "noturn"), 3))
    assert [a.input for a in actions] == [expected(t) for t in (1, 2, 3)]


def test_a_line_over_the_decision_cap_is_a_flood(marker: str) -> None:
    agent = driver(marker, "flood", max_decision_bytes=100_000)
    with pytest.raises(DriverError, match="more than 100000 bytes in one decision"):
        run(episode(agent, 1))


def test_many_stray_lines_over_the_decision_cap_are_a_flood(marker: str) -> None:
    agent = driver(marker, "flood-lines", max_decision_bytes=100_000)
    with pytest.raises(DriverError, match="in one decision"):
        run(episode(agent, 1))
    assert agent.provenance()["discarded"] > 1000


def test_stderr_counts_toward_the_session_cap(marker: str) -> None:
    agent = driver(marker, "flood-stderr", max_decision_bytes=10_000, max_session_bytes=200_000)
    with pytest.raises(DriverError, match="more than 200000 bytes in total"):
        run(episode(agent, 5))


def test_a_late_answer_is_lost_then_discarded_and_its_cost_charged(marker: str) -> None:
    agent = driver(marker, "slow-once", "2", decision_timeout_s=0.3)

    async def scenario() -> list[Action]:
        try:
            first = await agent.act(OBSERVATION, [], context(1))
            lost = await agent.act(OBSERVATION, [], context(2))
            await asyncio.sleep(0.6)  # the late answer to turn 2 is now waiting in the pipe
            third = await agent.act(OBSERVATION, [], context(3))
            return [first, lost, third]
        finally:
            await agent.aclose()

    first, lost, third = run(scenario())
    assert first == Action(expected(1), 0.0001)
    assert lost == Action(NOOP, None)
    assert third == Action(expected(3), 0.0001 + 0.5)
    report = agent.provenance()
    assert (report["answered"], report["lost"], report["discarded"]) == (2, 1, 1)
    assert report["late_cost_usd"] == 0.5


def test_a_late_cost_read_while_a_decision_is_lost_is_charged_to_it(marker: str) -> None:
    # Turn 1 is answered at once (the start-up is behind us); the answer to turn 2 comes
    # 0.6 s late, while turn 3 waits; turn 3 is lost too and is the last: the cost read
    # then belongs to turn 3, or the record never shows it.
    agent = driver(marker, "late-after-first", "600", decision_timeout_s=0.4, fixed_cost_usd=0.0)
    actions = run(episode(agent, 3))
    assert actions == [Action(expected(1), 0.0001), Action(NOOP, 0.0), Action(NOOP, 0.5)]
    report = agent.provenance()
    assert (report["answered"], report["lost"], report["discarded"]) == (1, 2, 1)
    assert report["late_cost_usd"] == 0.5


def test_a_lost_decision_costs_the_declared_fixed_cost(marker: str) -> None:
    agent = driver(marker, "silent", decision_timeout_s=0.1, fixed_cost_usd=0.0)
    assert run(episode(agent, 1)) == [Action(NOOP, 0.0)]


def test_a_silent_session_fails_after_too_many_lost_decisions(marker: str) -> None:
    agent = driver(marker, "silent", decision_timeout_s=0.1, max_consecutive_lost=2)
    with pytest.raises(DriverError, match="3 decisions in a row unanswered"):
        run(episode(agent, 5))
    assert agent.provenance()["lost"] == 3


def test_aclose_kills_grandchildren_and_agents_that_ignore_eof(marker: str) -> None:
    for mode in ("grandchild", "ignore-eof"):
        actions = run(episode(driver(marker, mode), 2))
        assert [a.input for a in actions] == [expected(1), expected(2)]


def test_a_new_seed_starts_a_new_session(marker: str) -> None:
    agent = driver(marker, "echo")

    async def scenario() -> None:
        try:
            await agent.act(OBSERVATION, [], context(1, seed=1))
            await agent.act(OBSERVATION, [], context(1, seed=2))
        finally:
            await agent.aclose()

    run(scenario())
    assert agent.provenance()["sessions"] == 2


def test_the_session_is_started_lazily_and_restarts_after_aclose(marker: str) -> None:
    agent = driver(marker, "echo")
    assert agent.provenance()["sessions"] == 0
    run(episode(agent, 2))
    run(episode(agent, 2))
    assert agent.provenance()["sessions"] == 2


def test_cancellation_stops_waiting(marker: str) -> None:
    agent = driver(marker, "silent", decision_timeout_s=30)

    async def scenario() -> None:
        cancel = asyncio.Event()
        asyncio.get_running_loop().call_later(0.2, cancel.set)
        try:
            await agent.act(OBSERVATION, [], context(1, cancel=cancel))
        finally:
            await agent.aclose()

    with pytest.raises(RunCancelled):
        run(scenario())


@pytest.mark.parametrize(
    "options",
    [
        {"decision_timeout_s": 0},
        {"max_decision_bytes": 10, "max_session_bytes": 5},
        {"fixed_cost_usd": -1.0},
    ],
)
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(DriverError):
        SessionDriver([sys.executable, AGENT, "echo"], **options)
