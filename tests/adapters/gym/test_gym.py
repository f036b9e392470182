"""The Gymnasium adapter and the packaged ``gym/*`` targets, against real environments."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from playproof.adapters.gym import GymGame, assert_reproducible, make_game
from playproof.adapters.screen import decode_png, unscale
from playproof.core.evidence import Evidence
from playproof.core.replay import replay, replay_in_session
from playproof.errors import CheckpointError, TargetError
from playproof.targets._registry import Target
from playproof.targets.gym import cartpole, frozenlake
from playproof.workers import WorkerGame

FACTORY = "playproof.adapters.gym:make_game"
TARGETS = {"cartpole": cartpole, "frozenlake": frozenlake}


@pytest.fixture(params=sorted(TARGETS))
def target(request: pytest.FixtureRequest) -> Target:
    return TARGETS[request.param]()


def _game(target: Target, **extra: object) -> GymGame:
    return make_game(**{**target.spec.options, **extra})


def _trace(game: GymGame, target: Target, inputs: object) -> tuple[object, ...]:
    result = replay_in_session(game, 0, list(inputs), target.contract, trace=True)  # type: ignore[call-overload]
    assert result.trace is not None
    return result.trace


def test_two_workers_replay_the_reference_identically_and_verify_every_milestone(
    target: Target,
) -> None:
    traces = []
    for _ in range(2):
        with WorkerGame(FACTORY, target.spec.options) as worker:
            assert worker.descriptor.build.digest == target.spec.build_digest
            result = replay(worker, 0, target.reference, target.contract, trace=True)
            assert [m.id for m in result.verified] == [m.id for m in target.contract.milestones]
            traces.append(result.trace)
    assert traces[0] == traces[1]


def test_truncated_reference_verifies_a_strict_subset(target: Target) -> None:
    game = _game(target)
    full = {m.id for m in replay_in_session(game, 0, target.reference, target.contract).verified}
    cut = target.reference[: len(target.reference) // 2]
    part = {m.id for m in replay_in_session(game, 0, cut, target.contract).verified}
    assert part < full


def test_noop_and_junk_words_do_not_step(target: Target) -> None:
    game = _game(target)
    junk = ["noop", "jump", "LEFT", "", "right "] * 10
    trace = _trace(game, target, junk)
    assert trace == _trace(game, target, ["noop"] * len(junk))
    assert all(snapshot == trace[0] for snapshot in trace)  # nothing moved


def test_checkpoint_restore_reproduces_the_next_inputs(target: Target) -> None:
    game = _game(target)
    game.reset(0)
    half = len(target.reference) // 2
    for word in target.reference[:half]:
        game.step(word)
    blob = game.checkpoint()
    after = target.reference[half:]

    def run(session: GymGame | WorkerGame) -> list[Evidence]:
        out = []
        for word in after:
            session.step(word)
            out.append(session.evidence())
        return out

    first = run(game)
    game.restore(blob)
    assert run(game) == first
    with WorkerGame(FACTORY, target.spec.options) as worker:
        worker.restore(blob)
        assert run(worker) == first


def test_corrupt_checkpoints_are_typed_errors() -> None:
    game = _game(frozenlake())
    game.step("right")
    blob = game.checkpoint()
    flipped = bytearray(blob)
    flipped[-3] ^= 0x01
    other = make_game(env_id="FrozenLake-v1").checkpoint()  # slippery: another build
    for bad in (bytes(flipped), blob[:-5], b"", b"{}", other):
        with pytest.raises(CheckpointError):
            game.restore(bad)


def test_png_is_the_real_screen_and_images_do_not_change_evidence() -> None:
    target = frozenlake()
    with_images = _game(target, image_scale=2)
    env = gymnasium.make(
        "FrozenLake-v1", is_slippery=False, render_mode="rgb_array", disable_env_checker=True
    )
    env.reset(seed=0)
    with_images.reset(0)
    for word, action in (("right", 2), ("down", 1)):
        with_images.step(word)
        env.step(action)
    (image,) = with_images.observe().images
    screen = np.asarray(env.render(), dtype=np.uint8)
    assert np.array_equal(unscale(decode_png(image.raw()), 2), screen)
    env.close()
    plain = _game(target)
    assert _trace(with_images, target, target.reference) == _trace(plain, target, target.reference)
    assert with_images.descriptor.build == plain.descriptor.build


def test_observation_text_never_shows_the_step_counter() -> None:
    game = _game(frozenlake())
    game.reset(0)
    for word in ["left", "up"] * 20 + ["right", "right", "down"]:  # bumps the walls, then moves
        game.step(word)
        engine = game.evidence().engine
        text = game.observe().text
        assert re.fullmatch(r"[\sA-Z\[\]()a-z|]*score 0( \| episode over)?", text), text
        assert str(engine["steps"]) not in re.findall(r"\d+", text)


def test_ansi_text_marks_the_player() -> None:
    game = _game(frozenlake())
    game.reset(0)
    assert game.observe().text.splitlines()[0] == "[S]FFF"


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "MountainCarContinuous-v0"])
def test_non_discrete_action_spaces_are_refused(env_id: str) -> None:
    with pytest.raises(TargetError, match="Discrete"):
        make_game(env_id=env_id)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"env_id": "NoSuchEnv-v9"}, "no environment"),
        ({"env_id": "CartPole-v1", "action_names": ["a"]}, "2 actions but 1"),
        ({"env_id": "CartPole-v1", "action_names": ["noop", "b"]}, "noop"),
        ({"env_id": "CartPole-v1", "scale": 0}, "scale"),
        ({"env_id": "CartPole-v1", "kwargs": {"x": [1]}}, "kwargs"),
        ({"env_id": "no_such_module:Foo-v0"}, "cannot import"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(TargetError, match=message):
        make_game(**options)


_CHAOS = '''
import gymnasium
import numpy as np
from gymnasium import spaces


class Chaos(gymnasium.Env):
    """Seeded in name only: the start depends on str hash randomization (per process)."""

    metadata = {"render_modes": []}
    action_space = spaces.Discrete(2)
    observation_space = spaces.Discrete(1000)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state = hash(("chaos", str(seed))) % 1000
        return self.state, {}

    def step(self, action):
        self.state = (self.state + int(action) + 1) % 1000
        return self.state, 0.0, False, False, {}


gymnasium.register(id="PlayproofChaos-v0", entry_point=Chaos)
'''


def test_a_seed_that_does_not_fix_the_trajectory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "playproof_chaos_env.py").write_text(textwrap.dedent(_CHAOS))
    options = {"env_id": "playproof_chaos_env:PlayproofChaos-v0"}
    env = {"PYTHONPATH": str(tmp_path), "PYTHONHASHSEED": "random"}
    with pytest.raises(TargetError, match="does not fix the trajectory"):
        assert_reproducible(options, 0, ["action0", "action1"], env=env)
    target = cartpole()
    assert_reproducible(target.spec.options, 0, target.reference[:100])
