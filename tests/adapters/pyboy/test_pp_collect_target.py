"""The packaged target pyboy/pp-collect: reference, contract, separation from trivial play."""

from __future__ import annotations

import random

import pytest
from pyboy_reference import LADDER, TARGET_DIR, render

from playproof.adapters.pyboy import VOCABULARY, PyBoyGame
from playproof.core.replay import replay, replay_in_session
from playproof.targets import Target
from playproof.targets.pyboy import pp_collect

BASELINE_INPUTS = 300


@pytest.fixture(scope="module")
def target() -> Target:
    return pp_collect()


def test_target_files_are_what_the_controller_makes() -> None:
    for name, text in render().items():
        assert (TARGET_DIR / name).read_text(encoding="utf-8") == text


def test_spec_pins_the_session(target: Target, game: PyBoyGame) -> None:
    assert target.name == "pyboy/pp-collect"
    assert target.spec.build_digest == game.descriptor.build.digest
    assert target.spec.isolation == "worker"
    assert target.spec.extra == "pyboy"
    assert target.contract.ids == tuple(f"score-{v}" for v in LADDER)


def test_reference_verifies_every_milestone(target: Target, game: PyBoyGame) -> None:
    result = game.replay(target.spec.reference_seed, target.reference, target.contract)
    assert [m.id for m in result.verified] == list(target.contract.ids)
    assert result.over_at is None
    turns = [m.turn for m in result.verified]
    assert turns == sorted(turns)


def test_truncated_reference_verifies_a_strict_subset(target: Target, game: PyBoyGame) -> None:
    full = game.replay(target.spec.reference_seed, target.reference, target.contract)
    cut = full.verified[2].turn  # just after score-5
    short = game.replay(target.spec.reference_seed, target.reference[:cut], target.contract)
    assert [m.id for m in short.verified] == ["score-1", "score-3", "score-5"]
    assert set(short.verified) < set(full.verified)
    # A claim of score-20 forged onto the short run is not reproduced.
    assert "score-20" not in {m.id for m in short.verified}
    # Batch replay without hashing agrees with the step-by-step loop.
    assert (
        replay_in_session(
            game, target.spec.reference_seed, target.reference[:cut], target.contract
        ).verified
        == short.verified
    )


def _baselines() -> dict[str, list[str]]:
    policies = {f"constant-{word}": [word] * BASELINE_INPUTS for word in VOCABULARY}
    policies["unknown-word"] = ["jump"] * BASELINE_INPUTS
    policies["round-robin"] = [VOCABULARY[i % len(VOCABULARY)] for i in range(BASELINE_INPUTS)]
    for seed in range(4):
        rng = random.Random(seed)
        policies[f"random-{seed}"] = [rng.choice(VOCABULARY) for _ in range(BASELINE_INPUTS)]
    return policies


def test_trivial_play_stays_below_score_3(target: Target, game: PyBoyGame) -> None:
    best: dict[str, int] = {}
    for name, inputs in _baselines().items():
        result = game.replay(target.spec.reference_seed, inputs, target.contract)
        best[name] = len(result.verified)
    assert max(best.values()) <= 1, best


def test_target_opens_in_a_worker_with_the_pinned_build(target: Target) -> None:
    worker = target.open()
    try:
        assert worker.descriptor.build.digest == target.spec.build_digest
        result = replay(worker, target.spec.reference_seed, target.reference, target.contract)
    finally:
        worker.close()
    assert len(result.verified) == len(target.contract.milestones)
