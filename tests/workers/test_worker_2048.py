"""The seeded 2048 gives identical evidence in-process and through a worker."""

from __future__ import annotations

import random

import pytest

from playproof.core.contract import parse_contract
from playproof.core.game import advance
from playproof.core.replay import replay_in_session
from playproof.workers import WorkerGame

game2048 = pytest.importorskip("playproof.adapters.native.game2048")

CONTRACT = parse_contract(
    {
        "game": "2048",
        "milestones": [
            {
                "id": "tile-32",
                "check": {"kind": "state", "key": "max_tile", "op": ">=", "value": 32},
            },
            {
                "id": "score-200",
                "check": {"kind": "state", "key": "score", "op": ">=", "value": 200},
            },
        ],
    }
)


def inputs(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice([*game2048.DIRECTIONS, "noop"]) for _ in range(count)]


def test_worker_replay_of_2048_equals_in_process_replay() -> None:
    log = inputs(5, 600)
    expected = replay_in_session(game2048.make_game(), 42, log, CONTRACT, trace=True)
    with WorkerGame("playproof.adapters.native.game2048:make_game") as worker:
        assert worker.descriptor == game2048.make_game().descriptor
        result = worker.replay(42, log, CONTRACT, trace=True)
        assert result == expected
        assert result.trace is not None
        assert len({e.save_hash for e in result.trace}) > 50  # the log really moves the board
        worker.reset(42)
        local = game2048.make_game()
        local.reset(42)
        for word in log[:100]:
            assert worker.advance(word, observe=True) == advance(local, word, observe=True)
        assert worker.checkpoint() == local.checkpoint()
