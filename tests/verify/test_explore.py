"""Frontier exploration on 2048 finds a verified tile-32 script, identically every time."""

import pytest

from playproof.adapters.native.game2048 import make_game
from playproof.core.replay import replay_in_session
from playproof.errors import NotSupportedError, TargetError
from playproof.targets import get_target
from playproof.verify import explore

TARGET = get_target("native/2048")


def test_finds_a_tile_32_script_identical_across_two_runs() -> None:
    first = explore(make_game, TARGET.contract, "tile-32")
    second = explore(make_game, TARGET.contract, "tile-32")
    assert first.found
    assert "tile-32" in first.verified
    assert first == second
    replayed = replay_in_session(make_game(), 0, first.inputs, TARGET.contract)
    assert "tile-32" in {p.id for p in replayed.verified}
    assert first.expansions > 0
    assert len(first.inputs) >= 8


def test_a_too_shallow_search_reports_not_found() -> None:
    report = explore(make_game, TARGET.contract, "tile-256", max_depth=5)
    assert not report.found
    assert report.inputs == ()


def test_unknown_goal_and_games_without_checkpoints_are_refused() -> None:
    with pytest.raises(TargetError):
        explore(make_game, TARGET.contract, "tile-9999")

    class NoCheckpoint:
        def __init__(self) -> None:
            self._game = make_game()

        def __getattr__(self, name: str) -> object:
            if name in ("checkpoint", "restore"):
                raise AttributeError(name)
            return getattr(self._game, name)

    with pytest.raises(NotSupportedError):
        explore(NoCheckpoint, TARGET.contract, "tile-32")  # type: ignore[arg-type]
