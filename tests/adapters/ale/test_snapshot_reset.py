"""Reset by snapshot equals a fresh ROM load, for every packaged ALE target, screens included.

The ALE adapter restores a post-load snapshot instead of reloading the ROM on
reset (for ROMs in ``SNAPSHOT_RESET_PROVEN``). These tests are that proof:
whole traces (every snapshot's full evidence, plus the observation text and
images) of scripted logs, played by one session that resets by snapshot
between episodes in varied orders, equal those of a fresh session per episode.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import ale_py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playproof.adapters.ale import AleGame, AleOptions
from playproof.adapters.ale import _game as ale_game
from playproof.adapters.screen import frame_hash
from playproof.core.evidence import Evidence
from playproof.core.observation import Observation
from playproof.core.replay import replay
from playproof.targets import load_target_dir
from playproof.targets._registry import Target
from playproof.targets.packaged import DATA
from playproof.workers import WorkerGame

FACTORY = "playproof.adapters.ale:make_game"
SEEDS = (0, 1, 7, 123)
LOG_LENGTH = 400
FOLDERS = sorted(path.parent for path in (DATA / "ale").glob("*/target.json"))

Step = tuple[Evidence, Observation]


def _name(folder: Path) -> str:
    return f"ale/{folder.name}"


@cache
def _target(folder: Path) -> Target:
    return load_target_dir(folder)


def _options(folder: Path) -> dict[str, Any]:
    """The target's options with images on, so observations carry the real screen too."""
    return {**_target(folder).spec.options, "image_scale": 1}


def _game(options: dict[str, Any], *, by_snapshot: bool | None) -> AleGame:
    return AleGame(AleOptions.parse(options), reset_by_snapshot=by_snapshot)


def _logs(target: Target) -> dict[str, tuple[str, ...]]:
    """Scripted inputs: the reference, a seeded random walk, and one that reaches game over."""
    words = sorted(set(target.reference))
    walk = random.Random(20).choices(words, k=LOG_LENGTH)
    return {
        "reference": target.reference[:LOG_LENGTH],
        "walk": tuple(walk),
        "fire": ("fire",) * 160,  # constant fire loses every ball well before the end
    }


def _episode(game: AleGame, seed: int, inputs: Sequence[str]) -> list[Step]:
    game.reset(seed)
    steps = [(game.evidence(), game.observe())]
    for word in inputs:
        game.step(word)
        steps.append((game.evidence(), game.observe()))
    return steps


@cache
def _expected(folder: Path, seed: int, log: str) -> tuple[Step, ...]:
    """The trace of a fresh session that loads the ROM for this one episode."""
    game = _game(_options(folder), by_snapshot=False)
    try:
        return tuple(_episode(game, seed, _logs(_target(folder))[log]))
    finally:
        game.close()


def _first_difference(got: Sequence[Step], want: Sequence[Step]) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} snapshots, want {len(want)}"
    for turn, ((evidence, obs), (want_evidence, want_obs)) in enumerate(
        zip(got, want, strict=True)
    ):
        if evidence != want_evidence:
            return f"turn {turn}: evidence {evidence} != {want_evidence}"
        if obs != want_obs:
            return f"turn {turn}: observation differs"
    return None


@pytest.fixture(params=FOLDERS, ids=_name)
def folder(request: pytest.FixtureRequest) -> Path:
    return request.param  # type: ignore[no-any-return]


def test_every_packaged_ale_target_resets_by_snapshot(folder: Path) -> None:
    game = _game(_options(folder), by_snapshot=None)
    try:
        proven = ale_game.SNAPSHOT_RESET_PROVEN.get(ale_py.__version__, frozenset())
        assert game.rom_sha256 in proven, f"prove {_name(folder)} on ale-py {ale_py.__version__}"
        assert game._by_snapshot
    finally:
        game.close()


@pytest.mark.slow
def test_one_session_resetting_by_snapshot_equals_a_fresh_load_per_episode(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    game = _game(_options(folder), by_snapshot=True)
    loads: list[int] = []
    load = game._load

    def counted(seed: int) -> None:
        loads.append(seed)
        load(seed)

    monkeypatch.setattr(game, "_load", counted)
    logs = _logs(_target(folder))
    # seed A, seed B, A again, after game over, after a checkpoint restore, ...
    order = [
        (0, "reference"),
        (1, "walk"),
        (0, "reference"),
        (7, "fire"),
        (0, "walk"),
        ("checkpoint", ""),
        (123, "reference"),
        (1, "fire"),
        (7, "walk"),
        ("checkpoint", ""),
        (123, "walk"),
        (0, "fire"),
        (1, "reference"),
    ]
    try:
        for seed, log in order:
            if seed == "checkpoint":  # play on, checkpoint, play, restore it, then reset
                for word in logs["walk"][:50]:
                    game.step(word)
                blob = game.checkpoint()
                for word in logs["reference"][:50]:
                    game.step(word)
                game.restore(blob)
                continue
            assert isinstance(seed, int)
            got = _episode(game, seed, logs[log])
            assert _first_difference(got, _expected(folder, seed, log)) is None, (seed, log)
        assert got[-1][0] != got[0][0]  # the episodes really played
        assert any(step[0].engine["lives"] == 0 for step in _expected(folder, 7, "fire"))
        # the constructor loaded seed 0; every other seed was loaded once, then restored
        assert loads == [1, 7, 123]
    finally:
        game.close()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    episodes=st.lists(
        st.tuples(
            st.sampled_from(SEEDS),
            st.sampled_from(["reference", "walk", "fire"]),
            st.integers(min_value=0, max_value=LOG_LENGTH),
        ),
        min_size=2,
        max_size=5,
    ),
    cache_size=st.integers(min_value=1, max_value=3),
)
@pytest.mark.slow
def test_any_order_of_episodes_and_cut_points_matches_fresh_loads(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    episodes: list[tuple[int, str, int]],
    cache_size: int,
) -> None:
    # A small cache mixes reloads (evicted seeds) with restores in one session.
    monkeypatch.setattr(ale_game, "MAX_CACHED_STARTS", cache_size)
    game = _game(_options(folder), by_snapshot=True)
    logs = _logs(_target(folder))
    try:
        for seed, log, cut in episodes:
            got = _episode(game, seed, logs[log][:cut])
            want = _expected(folder, seed, log)[: len(got)]
            assert _first_difference(got, want) is None, (seed, log, cut)
        assert len(game._starts) <= cache_size
    finally:
        game.close()


@pytest.mark.slow
def test_a_worker_batch_replay_resetting_by_snapshot_equals_a_fresh_load(folder: Path) -> None:
    target = _target(folder)
    options = target.spec.options
    logs = _logs(target)
    runs = [(0, "reference"), (7, "walk"), (0, "fire"), (123, "reference"), (7, "walk")]
    with WorkerGame(FACTORY, options) as worker:
        assert worker.descriptor.build.digest == target.spec.build_digest
        for seed, log in runs:
            result = replay(worker, seed, logs[log], target.contract, trace=True)
            assert result.trace == tuple(step[0] for step in _expected(folder, seed, log))


def test_a_mode_and_difficulty_variant_resets_by_snapshot_identically() -> None:
    options = {"rom": "breakout", "mode": 4, "difficulty": 1, "ram": {"paddle_x": 72}}
    inputs = random.Random(3).choices(["noop", "fire", "right", "left"], k=150)
    fresh = {seed: _episode(_game(options, by_snapshot=False), seed, inputs) for seed in (0, 5)}
    game = _game(options, by_snapshot=True)
    for seed in (5, 0, 5, 0):
        assert _first_difference(_episode(game, seed, inputs), fresh[seed]) is None, seed
    assert fresh[0][0][0] != _episode(_game({"rom": "breakout"}, by_snapshot=False), 0, [])[0][0]


def test_ale_state_holds_no_screen_so_reset_shows_the_loaded_one() -> None:
    """The pitfall the adapter works around: restoring ALE's state leaves the old screen."""
    game = _game({"rom": "breakout"}, by_snapshot=True)
    loaded = game.evidence().frame_hash  # right after the constructor's load with seed 0
    ale = game._ale
    start = ale.getScreenRGB()
    for word in ["fire"] * 40 + ["right"] * 20:
        game.step(word)
    played = ale.getScreenRGB()
    game.reset(0)
    assert not np.array_equal(ale.getScreenRGB(), start)  # ALE still shows the last frame
    assert np.array_equal(ale.getScreenRGB(), played)
    assert game.evidence().frame_hash == loaded  # the adapter shows the loaded screen
    game.step("noop")  # once a frame is emulated, ALE's own screen is used again
    assert game.evidence().frame_hash == frame_hash(ale.getScreenRGB())
    game.close()
