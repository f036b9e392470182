"""GymGame.replay (the fast batch replay) must equal the step-by-step definition exactly."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.adapters.gym import GymGame, make_game
from playproof.adapters.gym._evidence import ALL_PARTS, NO_PARTS, EvidenceParts, parts_read
from playproof.core.contract import Contract, parse_contract
from playproof.core.game import BatchReplaying, ReplayResult
from playproof.core.replay import replay_in_session
from playproof.errors import TargetError
from playproof.targets._registry import Target
from playproof.targets.gym import cartpole, frozenlake
from playproof.workers import WorkerGame

FACTORY = "playproof.adapters.gym:make_game"
JUNK = ("noop", "jump", "LEFT", "", "right ")
# A snapshot whose frame hash the "hash" contracts name (reached by the references).
HASH_TURN = {"cartpole": 7, "frozenlake": 2}
PROBES = {
    # (key, op, value) state checks that read each optional evidence part.
    "cartpole": {
        "base": [("score", ">=", 5000), ("steps", ">=", 9), ("reward", "==", 1000)],
        "ends": [("terminated", "==", 1), ("truncated", "==", 1)],
        "obs": [("obs_2", "<", 0), ("obs_0", ">", 10)],
        "info": [("info_missing", ">=", 0)],
    },
    "frozenlake": {
        "base": [("score", ">=", 1000), ("steps", ">=", 3)],
        "ends": [("terminated", "==", 1)],
        "obs": [("obs", "==", 6), ("obs", "==", 10)],
        "info": [("info_prob", ">=", 1000)],
    },
}


def _targets() -> dict[str, Target]:
    return {"cartpole": cartpole(), "frozenlake": frozenlake()}


TARGETS = _targets()


def _contract(name: str, kinds: tuple[str, ...]) -> Contract:
    """A contract over ``kinds`` of probes (plus "hash", "never"), chained in pairs."""
    target = TARGETS[name]
    milestones: list[dict[str, object]] = []
    for kind in kinds:
        if kind == "hash":
            game = make_game(**target.spec.options)
            trace = replay_in_session(game, 0, target.reference, target.contract, trace=True).trace
            game.close()
            assert trace is not None
            frame_hash = trace[HASH_TURN[name]].frame_hash
            check: dict[str, object] = {"kind": "frame-hash", "hash": frame_hash}
            milestones.append({"id": "hash", "check": check})
            continue
        if kind == "never":  # parts gym evidence never has: they must stay absent
            milestones += [
                {"id": "save", "check": {"kind": "save", "key": "x", "op": ">=", "value": 0}},
                {"id": "frame", "check": {"kind": "frame", "key": "x", "op": ">=", "value": 0}},
                {"id": "event", "check": {"kind": "event", "event": "x"}},
                {"id": "save-hash", "check": {"kind": "save-hash", "hash": "0" * 64}},
            ]
            continue
        for index, (key, op, value) in enumerate(PROBES[name][kind]):
            requires = [f"{kind}-{index - 1}"] if index % 2 else []
            milestones.append(
                {
                    "id": f"{kind}-{index}",
                    "requires": requires,
                    "check": {"kind": "state", "key": key, "op": op, "value": value},
                }
            )
    return parse_contract({"game": target.contract.game, "milestones": milestones})


CONTRACT_KINDS = {
    "base": ("base",),
    "ends": ("ends",),
    "obs": ("obs",),
    "info": ("info",),
    "hash": ("hash",),
    "never": ("base", "never"),
    "all": ("base", "ends", "obs", "info", "hash", "never"),
}
CONTRACTS = {
    (name, kind): _contract(name, kinds)
    for name in TARGETS
    for kind, kinds in CONTRACT_KINDS.items()
}
for _name, _target in TARGETS.items():
    CONTRACTS[(_name, "packaged")] = _target.contract


@pytest.fixture(scope="module")
def games() -> Iterator[dict[str, tuple[GymGame, GymGame]]]:
    """Two sessions per target: one replays in batch, one step by step."""
    built = {
        name: (make_game(**t.spec.options), make_game(**t.spec.options))
        for name, t in TARGETS.items()
    }
    yield built
    for pair in built.values():
        for game in pair:
            game.close()


def _assert_same(
    fast: GymGame, slow: GymGame, seed: int, inputs: Sequence[str], contract: Contract, trace: bool
) -> ReplayResult:
    expected = replay_in_session(slow, seed, inputs, contract, trace=trace)
    got = fast.replay(seed, inputs, contract, trace=trace)
    assert got == expected
    # The session is left after the last input, ready to carry on.
    assert fast.evidence() == slow.evidence()
    assert fast.over() == slow.over()
    assert fast.checkpoint() == slow.checkpoint()
    return got


def test_gym_games_replay_in_batch() -> None:
    game = make_game(env_id="CartPole-v1")
    assert isinstance(game, BatchReplaying)
    game.close()


@pytest.mark.parametrize("trace", [False, True])
@pytest.mark.parametrize(("name", "kind"), sorted(CONTRACTS))
def test_batch_replay_equals_step_by_step_on_the_references(
    games: dict[str, tuple[GymGame, GymGame]], name: str, kind: str, trace: bool
) -> None:
    fast, slow = games[name]
    target = TARGETS[name]
    contract = CONTRACTS[(name, kind)]
    result = _assert_same(fast, slow, 0, target.reference, contract, trace)
    if kind == "packaged":
        assert [m.id for m in result.verified] == list(contract.ids)
    if kind in ("hash", "obs", "all"):
        assert result.verified  # the probes are reachable: the comparison is not vacuous


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_batch_replay_equals_step_by_step_on_junk_scripts(
    games: dict[str, tuple[GymGame, GymGame]], data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(sorted(TARGETS)))
    kind = data.draw(st.sampled_from(sorted(k for n, k in CONTRACTS if n == name)))
    fast, slow = games[name]
    words = st.sampled_from(fast.descriptor.vocabulary + JUNK)
    inputs = data.draw(st.lists(words, max_size=80))
    seed = data.draw(st.integers(0, 3))
    trace = data.draw(st.booleans())
    _assert_same(fast, slow, seed, inputs, CONTRACTS[(name, kind)], trace)


def test_inputs_after_the_end_repeat_the_last_snapshot(
    games: dict[str, tuple[GymGame, GymGame]],
) -> None:
    fast, slow = games["cartpole"]
    contract = CONTRACTS[("cartpole", "all")]
    inputs = ["left"] * 30 + ["right", "noop"] * 5
    result = _assert_same(fast, slow, 0, inputs, contract, True)
    assert result.over_at is not None
    assert result.over_at < 30
    assert result.trace is not None
    assert len(result.trace) == len(inputs) + 1
    assert all(s == result.trace[result.over_at] for s in result.trace[result.over_at :])
    _assert_same(fast, slow, 0, [], contract, True)


def test_contracts_name_the_evidence_parts_they_read() -> None:
    assert parts_read(CONTRACTS[("cartpole", "packaged")]) == NO_PARTS
    assert parts_read(CONTRACTS[("cartpole", "never")]) == NO_PARTS
    assert parts_read(CONTRACTS[("frozenlake", "obs")]) == EvidenceParts(True, False, False)
    assert parts_read(CONTRACTS[("frozenlake", "info")]) == EvidenceParts(False, True, False)
    assert parts_read(CONTRACTS[("cartpole", "hash")]) == EvidenceParts(False, False, True)
    assert parts_read(CONTRACTS[("frozenlake", "all")]) == ALL_PARTS


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_two_workers_batch_replay_as_the_step_by_step_loop_does(
    games: dict[str, tuple[GymGame, GymGame]], name: str
) -> None:
    target = TARGETS[name]
    _, slow = games[name]
    vocabulary = slow.descriptor.vocabulary
    scripts = [
        target.reference,
        [vocabulary[i % len(vocabulary)] for i in range(60)],
        [JUNK[i % len(JUNK)] if i % 3 else vocabulary[0] for i in range(40)],
    ]
    cases = [(script, kind) for script in scripts for kind in ("packaged", "all")]
    results = []
    for _ in range(2):
        with WorkerGame(FACTORY, target.spec.options) as worker:
            results.append(
                [
                    (
                        worker.replay(1, script, CONTRACTS[(name, kind)]),
                        worker.replay(1, script, CONTRACTS[(name, kind)], trace=True),
                    )
                    for script, kind in cases
                ]
            )
    expected = [
        (
            replay_in_session(slow, 1, script, CONTRACTS[(name, kind)]),
            replay_in_session(slow, 1, script, CONTRACTS[(name, kind)], trace=True),
        )
        for script, kind in cases
    ]
    assert results[0] == expected
    assert results[1] == expected


class _Drift(gymnasium.Env[Any, Any]):
    """Counts up; its reward turns NaN at step 3 (an environment bug the adapter must name)."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's own shape
    action_space = spaces.Discrete(2)
    observation_space = spaces.Discrete(100)

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.count = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self.count = 0
        return self.count, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.count += 1
        reward = math.nan if self.count == 3 else float(action)
        return self.count, reward, False, False, {}


def _make_drift(**kwargs: Any) -> _Drift:
    return _Drift(**kwargs)


_DRIFT = "PlayproofDriftTest-v0"
if _DRIFT not in gymnasium.registry:
    gymnasium.register(id=_DRIFT, entry_point=_make_drift)


@pytest.mark.parametrize("kind", ["base", "obs"])
def test_a_non_finite_reward_fails_both_loops_alike(kind: str) -> None:
    fast, slow = make_game(env_id=_DRIFT), make_game(env_id=_DRIFT)
    key = "score" if kind == "base" else "obs"
    contract = parse_contract(
        {
            "game": "drift",
            "milestones": [
                {"id": "m", "check": {"kind": "state", "key": key, "op": ">=", "value": 1}}
            ],
        }
    )
    inputs = ["action1", "action0", "action1", "action1"]
    with pytest.raises(TargetError, match="non-finite reward"):
        replay_in_session(slow, 0, inputs, contract)
    with pytest.raises(TargetError, match="non-finite reward"):
        fast.replay(0, inputs, contract)
    # The session is unusable mid-step either way; the next replay starts afresh.
    _assert_same(fast, slow, 0, inputs[:2], contract, False)
