"""Hostile worker games: a game that hangs or dies mid-replay, a child that breaks the frames.

Two real programs stand in for a game worker. ``programs/hostile_game.py`` is
2048 run by the real worker child that hangs or ends its process partway
through an episode. ``programs/hostile_child.py`` replaces the child itself
and, asked to replay, floods frames, announces a frame over the cap, sends a
frame that is not JSON or stops in the middle of one. Each ends in a typed
worker error within the worker's bounds (lowered here); the child and all it
started are gone; a verification over such a worker verifies nothing, and an
episode played on it leaves no record.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from leftovers import tagged_processes

import playproof
from playproof.core.record import RunRecord
from playproof.drivers import BaselineDriver
from playproof.engine import EpisodeConfig, play
from playproof.errors import (
    WorkerCrashed,
    WorkerError,
    WorkerProtocolError,
    WorkerTimeout,
)
from playproof.targets import get_target
from playproof.verify import attest
from playproof.workers import WorkerGame

PROGRAMS = Path(__file__).parent / "programs"
TARGET = get_target("native/2048")
CALL_S = 1.0
"""One call's bound in these tests (the worker's default is far longer)."""
REPLAY_S = 1.0
"""One replay's bound in these tests."""
TURNS = 30
HONEST_STEPS = 10
"""Inputs the hostile game plays honestly before it turns."""
GONE_WAIT_S = 10.0
"""How long a killed child gets to disappear from the process table."""


class ForeignChildWorker(WorkerGame):
    """A worker whose child is ``hostile_child`` instead of playproof's own."""

    _child_module = "hostile_child"


Spawn = Callable[..., WorkerGame]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start workers tagged with a marker; every one is closed, and none may outlive the test."""
    tag = uuid.uuid4().hex
    started: list[WorkerGame] = []

    def start(cls: type[WorkerGame], options: dict[str, Any], **env: str) -> WorkerGame:
        environment = {"PYTHONPATH": str(PROGRAMS), "HOSTILE_MARKER": tag, **env}
        worker = cls(
            "hostile_game:make",
            options,
            env=environment,
            call_timeout=CALL_S,
            replay_timeout=REPLAY_S,
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()
    end = time.monotonic() + GONE_WAIT_S
    while tagged_processes("HOSTILE_MARKER", tag) and time.monotonic() < end:
        time.sleep(0.02)
    assert tagged_processes("HOSTILE_MARKER", tag) == [], "a worker process outlived the test"


@pytest.fixture(scope="module")
def honest() -> RunRecord:
    return playproof.run("native/2048", BaselineDriver("random-walk", seed=4), max_turns=TURNS)


def _gone_after_failure(worker: WorkerGame) -> None:
    """The failed worker's child was killed and reaped, and later calls say it is gone."""
    assert not Path(f"/proc/{worker.pid}").exists()
    with pytest.raises(WorkerCrashed, match="is gone"):
        worker.evidence()


GAME_FAILURES: dict[str, tuple[type[WorkerError], str]] = {
    "hang": (WorkerTimeout, f"did not answer replay within {REPLAY_S} s"),
    "die": (WorkerCrashed, "status 9"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", sorted(GAME_FAILURES))
def test_a_game_failing_mid_replay_is_a_typed_error(
    spawn: Spawn, honest: RunRecord, mode: str
) -> None:
    worker = spawn(WorkerGame, {"mode": mode, "after": HONEST_STEPS})
    error, words = GAME_FAILURES[mode]
    with pytest.raises(error, match=words):
        worker.replay(honest.seed, honest.inputs, TARGET.contract)
    _gone_after_failure(worker)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", sorted(GAME_FAILURES))
def test_a_verification_over_a_failing_game_verifies_nothing(
    spawn: Spawn, honest: RunRecord, mode: str
) -> None:
    assert honest.claimed, "the honest run should claim something to withhold"
    worker = spawn(WorkerGame, {"mode": mode, "after": HONEST_STEPS})
    report = attest(honest, worker, TARGET.contract)
    assert not report.clean
    assert list(report.verified) == []
    failed = {c.id: c.reason for c in report.checks if not c.passed}
    assert "replay failed" in failed["claims-reproduced"]


@pytest.mark.timeout(60)
def test_an_episode_on_a_dying_game_leaves_no_record(spawn: Spawn) -> None:
    worker = spawn(WorkerGame, {"mode": "die", "after": HONEST_STEPS})
    config = EpisodeConfig(seed=0, max_turns=TURNS)
    driver = BaselineDriver("random-walk", seed=4)
    with pytest.raises(WorkerCrashed, match="status 9"):
        asyncio.run(play(worker, TARGET.contract, driver, config))


CHILD_FAILURES: dict[str, tuple[type[WorkerError], str]] = {
    "flood": (WorkerProtocolError, "malformed answer to replay"),
    "over-cap": (WorkerProtocolError, "over the 67108864-byte message cap"),
    "malformed": (WorkerProtocolError, "malformed answer to replay"),
    "mid-frame": (WorkerTimeout, f"did not answer replay within {REPLAY_S} s"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", sorted(CHILD_FAILURES))
def test_a_child_breaking_the_frames_mid_replay_is_a_typed_error(
    spawn: Spawn, honest: RunRecord, mode: str
) -> None:
    worker = spawn(ForeignChildWorker, {}, HOSTILE_CHILD_MODE=mode)
    worker.reset(0)
    error, words = CHILD_FAILURES[mode]
    with pytest.raises(error, match=words):
        worker.replay(honest.seed, honest.inputs, TARGET.contract)
    _gone_after_failure(worker)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["flood", "over-cap"])
def test_a_child_breaking_the_frames_in_a_batch_is_a_typed_error(
    spawn: Spawn, honest: RunRecord, mode: str
) -> None:
    worker = spawn(ForeignChildWorker, {}, HOSTILE_CHILD_MODE=mode)
    error, _ = CHILD_FAILURES[mode]
    with pytest.raises(error):
        worker.advance_many(list(honest.inputs), observe=False)
    _gone_after_failure(worker)


@pytest.mark.timeout(60)
def test_a_verification_over_a_flooding_child_verifies_nothing(
    spawn: Spawn, honest: RunRecord
) -> None:
    worker = spawn(ForeignChildWorker, {}, HOSTILE_CHILD_MODE="flood")
    report = attest(honest, worker, TARGET.contract)
    assert not report.clean
    assert list(report.verified) == []
