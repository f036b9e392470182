"""The one-shot command-line driver against small real agent programs."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pngs import tiny_png

from playproof._containment import containment
from playproof.core.agent import NOOP, Action, DecisionContext, HistoryEntry
from playproof.core.observation import Image, Observation
from playproof.drivers._wire import AgentRequest
from playproof.drivers.cli import CliDriver
from playproof.errors import CostError, DriverError, RunCancelled

AGENT = str(Path(__file__).parent / "agents" / "oneshot.py")
VOCABULARY = ("up", "down", "left", "right")
CONTAINMENT = containment().kind
"""What this machine allows: the drivers report it in their provenance."""
T = TypeVar("T")


def run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(work)


def context(turn: int = 1, cancel: asyncio.Event | None = None) -> DecisionContext:
    return DecisionContext(
        turn=turn,
        max_turns=100,
        seed=7,
        spent_usd=0.25,
        remaining_usd=0.75,
        vocabulary=VOCABULARY,
        guidance="keep the big tile in a corner",
        cancel=cancel or asyncio.Event(),
    )


OBSERVATION = Observation(text="score 4\n2 . . .\n. . . .")
HISTORY = [HistoryEntry(turn=t, observation=f"board {t}", input="up") for t in range(1, 12)]


def driver(marker: str, mode: str, *extra: str, **options: Any) -> CliDriver:
    env = {**os.environ, "PLAYPROOF_TEST_MARKER": marker}
    return CliDriver([sys.executable, AGENT, mode, *extra], env=env, **options)


def decide(agent: CliDriver, turn: int = 1, observation: Observation = OBSERVATION) -> Action:
    return run(agent.act(observation, HISTORY, context(turn)))


def test_json_reply_gives_input_and_reported_cost(marker: str) -> None:
    agent = driver(marker, "json")
    assert decide(agent, turn=2) == Action("left", 0.001)
    assert agent.kind == "cli"
    assert agent.id == "python oneshot.py".replace("python", Path(sys.executable).name)
    assert agent.label == f"cli:{agent.id}"
    assert agent.provenance() == {"decisions": 1, "failures": 0, "containment": CONTAINMENT}


def test_json_null_cost_is_unmeasured_and_missing_cost_falls_back_to_declared(marker: str) -> None:
    assert decide(driver(marker, "json-null", fixed_cost_usd=0.5)) == Action("down", None)
    assert decide(driver(marker, "json-nocost")) == Action("down", None)
    assert decide(driver(marker, "json-nocost", fixed_cost_usd=0.0)) == Action("down", 0.0)


def test_first_word_mode_uses_the_declared_fixed_cost(marker: str) -> None:
    agent = driver(marker, "word", reply="word", fixed_cost_usd=0.002)
    assert decide(agent, turn=3) == Action("right", 0.002)


def test_first_word_mode_without_a_declared_cost_is_refused() -> None:
    with pytest.raises(DriverError, match="fixed_cost_usd"):
        CliDriver([sys.executable, AGENT, "word"], reply="word")


@pytest.mark.parametrize(
    "argv",
    [[], [""], ["python\x00", "x"], [sys.executable, "a\x00b"], "python agent.py"],
)
def test_bad_commands_are_refused_at_construction(argv: Any) -> None:
    with pytest.raises(DriverError):
        CliDriver(argv)


@pytest.mark.parametrize("cost", [-0.1, float("nan"), float("inf")])
def test_bad_fixed_costs_are_refused(cost: float) -> None:
    with pytest.raises(DriverError, match="fixed cost"):
        CliDriver([sys.executable, AGENT, "word"], reply="word", fixed_cost_usd=cost)


def test_request_carries_context_history_and_no_images_without_vision(
    marker: str, tmp_path: Path
) -> None:
    sink = tmp_path / "request.json"
    image = Image.from_bytes(tiny_png(), media_type="image/png", width=1, height=1)
    observation = Observation(text="board", images=(image,))
    decide(driver(marker, "record", str(sink), history_limit=3), observation=observation)
    request = AgentRequest.model_validate_json(sink.read_text())
    assert request.schema_ == "playproof/agent-request/v1"
    assert (request.turn, request.max_turns, request.seed) == (1, 100, 7)
    assert (request.spent_usd, request.remaining_usd) == (0.25, 0.75)
    assert request.vocabulary == VOCABULARY
    assert request.guidance == "keep the big tile in a corner"
    assert request.observation.text == "board"
    assert request.observation.images == ()
    assert [h.turn for h in request.history] == [9, 10, 11]


def test_request_carries_images_when_vision_is_on(marker: str, tmp_path: Path) -> None:
    sink = tmp_path / "request.json"
    image = Image.from_bytes(tiny_png(), media_type="image/png", width=1, height=1)
    observation = Observation(text="board", images=(image,))
    decide(driver(marker, "record", str(sink), vision=True), observation=observation)
    request = AgentRequest.model_validate_json(sink.read_text())
    assert request.observation.images == (image,)


@pytest.mark.parametrize(("mode", "reply"), [("multiline", "json"), ("multiline-word", "word")])
def test_multi_line_input_becomes_noop(marker: str, mode: str, reply: Any) -> None:
    agent = driver(marker, mode, reply=reply, fixed_cost_usd=0.0)
    assert decide(agent).input == NOOP


def test_off_vocabulary_input_becomes_noop(marker: str) -> None:
    assert decide(driver(marker, "offvocab")) == Action(NOOP, 0.0)


def test_stdout_flood_is_killed_at_the_cap(marker: str) -> None:
    agent = driver(marker, "flood", max_output_bytes=200_000)
    with pytest.raises(DriverError, match="more than 200000 bytes"):
        decide(agent)
    assert agent.provenance() == {"decisions": 0, "failures": 1, "containment": CONTAINMENT}


def test_stderr_counts_toward_the_same_cap(marker: str) -> None:
    with pytest.raises(DriverError, match="more than 200000 bytes"):
        decide(driver(marker, "flood-stderr", max_output_bytes=200_000))


def test_hang_is_killed_at_the_timeout_with_its_grandchild(marker: str) -> None:
    with pytest.raises(DriverError, match=r"did not answer within 0\.5 s"):
        decide(driver(marker, "hang", timeout_s=0.5))


def test_grandchildren_of_a_clean_agent_are_killed_too(marker: str) -> None:
    assert decide(driver(marker, "background")).input == "down"


def test_non_zero_exit_is_an_error_with_the_stderr_tail(marker: str) -> None:
    with pytest.raises(DriverError, match=r"status 3.*model is unavailable"):
        decide(driver(marker, "exit"))


def test_non_json_reply_is_an_error(marker: str) -> None:
    with pytest.raises(DriverError, match="not"):
        decide(driver(marker, "badjson"))


def test_negative_reported_cost_is_a_cost_error(marker: str) -> None:
    with pytest.raises(CostError):
        decide(driver(marker, "negcost"))


def test_an_agent_that_ignores_stdin_still_answers(marker: str) -> None:
    big = Observation(text="x" * 60_000)
    assert decide(driver(marker, "noread"), observation=big) == Action("up", 0.0)


def test_missing_program_is_a_driver_error() -> None:
    with pytest.raises(DriverError, match="cannot start"):
        decide(CliDriver(["/nonexistent/agent-program"]))


def test_cancellation_kills_the_agent(marker: str) -> None:
    agent = driver(marker, "hang", timeout_s=30)

    async def scenario() -> None:
        cancel = asyncio.Event()
        asyncio.get_running_loop().call_later(0.3, cancel.set)
        await agent.act(OBSERVATION, [], context(cancel=cancel))

    with pytest.raises(RunCancelled):
        run(scenario())


def test_request_is_one_json_line() -> None:
    from playproof.drivers._wire import build_request

    raw = build_request(OBSERVATION, HISTORY, context(), vision=False, history_limit=2)
    assert b"\n" not in raw
    assert json.loads(raw)["history"][0]["turn"] == 10
