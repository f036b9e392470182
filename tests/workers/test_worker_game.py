"""WorkerGame answers exactly like the in-process game, method by method and log by log."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processes import reaped
from toygames import WORDS, make_toy

from playproof.core.contract import Contract, parse_contract
from playproof.core.game import (
    Advancing,
    BatchReplaying,
    Checkpointing,
    Game,
    advance,
)
from playproof.core.replay import replay_in_session
from playproof.errors import (
    CheckpointError,
    FormatError,
    NotSupportedError,
    ObservationError,
    WorkerError,
)
from playproof.workers import WorkerGame

CONTRACT: Contract = parse_contract(
    {
        "game": "toy-walker",
        "milestones": [
            {"id": "coin-1", "check": {"kind": "state", "key": "score", "op": ">=", "value": 1}},
            {
                "id": "coin-3",
                "requires": ["coin-1"],
                "check": {"kind": "state", "key": "score", "op": ">=", "value": 3},
            },
            {"id": "far-right", "check": {"kind": "state", "key": "x", "op": ">=", "value": 8}},
            {
                "id": "all-coins",
                "check": {"kind": "save", "key": "coins_left", "op": "==", "value": 0},
            },
        ],
    }
)

Spawn = Callable[..., WorkerGame]


def walk(seed: int, length: int) -> list[str]:
    """A seeded random input log over the toy vocabulary plus an unknown word."""
    rng = random.Random(seed)
    return [rng.choice([*WORDS, "unknown-word"]) for _ in range(length)]


@pytest.fixture(scope="module")
def shared_worker(child_env: dict[str, str]) -> Iterator[WorkerGame]:
    """One long-lived worker for the property tests (spawning per example would be slow)."""
    worker = WorkerGame("toygames:make_toy", {"length": 10_000}, env=child_env)
    yield worker
    worker.close()


def test_worker_is_a_game_with_every_capability(spawn: Spawn) -> None:
    worker = spawn()
    assert isinstance(worker, Game)
    assert isinstance(worker, Checkpointing)
    assert isinstance(worker, Advancing)
    assert isinstance(worker, BatchReplaying)
    assert worker.descriptor == make_toy().descriptor
    assert worker.supports_checkpoint
    assert f"pid={worker.pid}" in repr(worker)


def test_every_method_round_trips_like_the_in_process_game(spawn: Spawn) -> None:
    options: dict[str, Any] = {"length": 30, "image": True}
    worker, local = spawn("toygames:make_toy", options), make_toy(**options)
    for game in (worker, local):
        game.reset(11)
    assert worker.evidence() == local.evidence()
    assert worker.observe() == local.observe()
    assert worker.observe().images[0].raw() == local.observe().images[0].raw()
    assert worker.over() == local.over()
    for word in walk(3, 40):
        worker.step(word)
        local.step(word)
        assert worker.evidence() == local.evidence()
        assert worker.over() == local.over()
    assert worker.observe() == local.observe()
    assert worker.over() is True
    assert worker.checkpoint() == local.checkpoint()


def test_advance_equals_step_then_reads(spawn: Spawn) -> None:
    worker, local = spawn(), make_toy()
    worker.reset(5)
    local.reset(5)
    for index, word in enumerate(walk(9, 30)):
        observe = index % 2 == 0
        remote = worker.advance(word, observe=observe)
        expected = advance(local, word, observe=observe)
        assert remote == expected
        assert (remote.observation is None) is not observe


@pytest.mark.parametrize("observe", [True, False])
def test_advance_many_equals_advance_word_by_word(spawn: Spawn, observe: bool) -> None:
    from playproof.core.game import advance_many
    from playproof.workers._wire import MAX_ADVANCE_BATCH

    options: dict[str, Any] = {"length": 10_000, "image": True}
    worker, local = spawn("toygames:make_toy", options), make_toy(**options)
    worker.reset(8)
    local.reset(8)
    words = walk(4, 2 * MAX_ADVANCE_BATCH + 7)  # three requests
    batch = worker.advance_many(words, observe=observe)
    assert batch == tuple(advance(local, word, observe=observe) for word in words)
    assert worker.advance_many([], observe=observe) == ()
    local.reset(8)
    assert advance_many(local, words[:5], observe=observe) == batch[:5]


@pytest.mark.parametrize("trace", [False, True])
def test_batch_replay_equals_in_process_replay(spawn: Spawn, trace: bool) -> None:
    worker = spawn("toygames:make_toy", {"length": 400})
    inputs = walk(1, 500)
    expected = replay_in_session(make_toy(length=400), 21, inputs, CONTRACT, trace=trace)
    result = worker.replay(21, inputs, CONTRACT, trace=trace)
    assert result == expected
    assert result.verified  # the log earns something, so the comparison is not vacuous
    assert (result.trace is None) is not trace


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**53 - 1), inputs=st.lists(st.sampled_from([*WORDS, "?", ""]), max_size=80)
)
def test_batch_replay_matches_for_any_log(
    shared_worker: WorkerGame, seed: int, inputs: list[str]
) -> None:
    expected = replay_in_session(make_toy(length=10_000), seed, inputs, CONTRACT, trace=True)
    assert shared_worker.replay(seed, inputs, CONTRACT, trace=True) == expected


def test_checkpoint_restore_round_trip(spawn: Spawn) -> None:
    worker = spawn()
    worker.reset(4)
    for word in walk(2, 10):
        worker.step(word)
    blob = worker.checkpoint()
    after = [worker.advance(word, observe=False) for word in walk(7, 10)]
    worker.restore(blob)
    assert [worker.advance(word, observe=False) for word in walk(7, 10)] == after
    local = make_toy()
    local.restore(blob)
    assert local.checkpoint() == blob


def test_corrupt_checkpoint_raises_checkpoint_error_and_worker_lives_on(spawn: Spawn) -> None:
    worker = spawn()
    worker.reset(1)
    before = worker.evidence()
    with pytest.raises(CheckpointError, match="not a toy checkpoint"):
        worker.restore(b"\x00 definitely not a checkpoint")
    assert worker.evidence().engine == before.engine
    worker.step("right")
    assert worker.evidence().engine["steps"] == 1


def test_checkpoint_unsupported_is_a_clear_error(spawn: Spawn) -> None:
    worker = spawn("toygames:make_plain")
    assert not worker.supports_checkpoint
    with pytest.raises(NotSupportedError, match="no checkpoint"):
        worker.checkpoint()
    with pytest.raises(NotSupportedError):
        worker.restore(b"{}")
    worker.reset(0)  # still usable


def test_game_errors_cross_as_their_own_class(spawn: Spawn) -> None:
    worker = spawn("toygames:make_toy", {"misbehave": True})
    worker.reset(0)
    with pytest.raises(WorkerError, match="the game raised ValueError: toy refuses") as caught:
        worker.step("raise")
    assert type(caught.value) is WorkerError
    worker.step("badobs")
    with pytest.raises(ObservationError, match="observation text"):
        worker.observe()
    assert worker.evidence().engine["steps"] == 2


def test_stdout_writes_of_the_game_cannot_corrupt_the_protocol(spawn: Spawn) -> None:
    worker = spawn("toygames:make_toy", {"misbehave": True})
    worker.reset(0)
    worker.step("shout")
    worker.step("right")
    assert worker.evidence().engine["steps"] == 2


def test_an_answer_over_the_cap_is_an_error_not_a_kill(spawn: Spawn) -> None:
    worker = spawn("toygames:make_toy", {"misbehave": True})
    worker.reset(0)
    worker.step("huge")
    with pytest.raises(WorkerError, match="message cap"):
        worker.evidence()
    assert worker.evidence().engine["steps"] == 1


def test_arguments_the_wire_cannot_carry_are_format_errors(spawn: Spawn) -> None:
    worker = spawn()
    with pytest.raises(FormatError, match="seed"):
        worker.reset(-1)
    with pytest.raises(FormatError, match="seed"):
        worker.reset(2**53)
    with pytest.raises(FormatError, match="word"):
        worker.step(3)  # type: ignore[arg-type]
    worker.reset(2**53 - 1)


def test_close_is_idempotent_and_final(spawn: Spawn) -> None:
    worker = spawn()
    pid = worker.pid
    worker.close()
    worker.close()
    assert reaped(pid)
    with pytest.raises(WorkerError, match="closed"):
        worker.reset(0)


def test_context_manager_closes(child_env: dict[str, str]) -> None:
    with WorkerGame("toygames:make_toy", env=child_env) as worker:
        worker.reset(0)
        pid = worker.pid
    assert reaped(pid)


def test_dropping_the_last_reference_kills_the_child(child_env: dict[str, str]) -> None:
    worker = WorkerGame("toygames:make_toy", env=child_env)
    pid = worker.pid
    del worker
    import gc

    gc.collect()
    assert reaped(pid)
