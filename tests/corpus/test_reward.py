"""Reward: delta against the previous build; failed builds change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from playproof.corpus import RewardState, load_state, save_state
from playproof.errors import FormatError
from playproof.sign import SigningKey

GRADER = SigningKey.generate()
DIGEST = "d" * 64


def test_reward_is_the_change_in_passing_cases(tmp_path: Path) -> None:
    state = RewardState(corpus_digest=DIGEST, denominator=3)
    assert state.record("b1", "graded", frozenset({"x"})).reward == 1
    assert state.record("b2", "graded", frozenset({"x"})).reward == 0
    assert state.record("b3", "graded", frozenset({"y", "z"})).reward == 1  # +2 new, -1 lost
    failed = state.record("b4", "build-failed")
    assert failed.reward == 0
    assert state.baseline == ["y", "z"]
    assert state.record("b5", "grading-timed-out").reward == 0
    done = state.record("b6", "graded", frozenset({"x", "y", "z"}))
    assert done.finished
    assert state.cumulative == 3
    path = tmp_path / "state.json"
    save_state(path, state, GRADER)
    again = load_state(path, DIGEST, 3, GRADER.verifying_key)
    assert again.cumulative == 3
    assert len(again.history) == 6
    with pytest.raises(FormatError, match="another corpus"):
        load_state(path, "e" * 64, 3, GRADER.verifying_key)
