"""The local executor: whole episodes on a process pool give exactly the serial results."""

import sys

import pytest

from playproof.core.baselines import baseline_inputs
from playproof.errors import NotSupportedError, TargetError
from playproof.exec import GameSpec, PoolReplayer, calibrate_target, make_replayer, resolve_target
from playproof.verify import ReplayJob, SerialReplayer

TARGET = resolve_target("native/2048")
SPEC = GameSpec(factory="playproof.adapters.native.game2048:make_game")


def test_pool_results_equal_serial_results_in_job_order() -> None:
    vocabulary = ("up", "down", "left", "right")
    jobs = [
        ReplayJob(seed, baseline_inputs("random-walk", vocabulary, 60 + seed, seed=seed), seed == 2)
        for seed in range(6)
    ]
    seen: list[tuple[int, int]] = []
    with PoolReplayer(
        SPEC, workers=2, progress=lambda done, total: seen.append((done, total))
    ) as pool:
        assert pool.descriptor == TARGET.open().descriptor
        assert pool.workers == 2
        pooled = pool.replay_many(jobs, TARGET.contract)
    serial = SerialReplayer(SPEC.open).replay_many(jobs, TARGET.contract)
    assert pooled == serial
    assert pooled[2].trace is not None
    assert pooled[0].trace is None
    assert seen[-1] == (6, 6)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_calibrating_on_the_pool_equals_calibrating_serially() -> None:
    pooled = calibrate_target(TARGET, executor="local", workers=2)
    assert pooled == calibrate_target(TARGET, executor="serial")


def test_native_2048_does_not_separate_and_says_which_baselines_earn_it() -> None:
    report = calibrate_target(TARGET, executor="serial")
    assert not report.separates
    assert not report.passed
    assert report.best_baselines == ("random-walk@6",)
    assert "random-walk@6" in report.message
    assert TARGET.spec.separates is False
    assert TARGET.spec.separation_note.strip()


def test_ray_without_its_extra_and_unknown_executors_are_refused_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(NotSupportedError, match=r"pip install 'playproof\[ray\]'"):
        make_replayer(SPEC, executor="ray")
    with pytest.raises(TargetError, match="unknown executor"):
        make_replayer(SPEC, executor="cluster")


def test_a_spec_needs_a_target_or_a_factory() -> None:
    with pytest.raises(TargetError):
        GameSpec().open()
    with pytest.raises(TargetError):
        GameSpec(factory="playproof.nowhere:make_game").open()


def test_a_game_that_cannot_be_built_fails_with_its_own_error() -> None:
    with pytest.raises(TargetError, match="cannot load game factory"):
        PoolReplayer(GameSpec(factory="playproof.nowhere:make_game"), workers=1)


def test_a_factory_that_raises_its_own_error_is_a_typed_error() -> None:
    # json.loads called with no argument raises TypeError while the pool warms up.
    with pytest.raises(TargetError, match="TypeError"):
        PoolReplayer(GameSpec(factory="json:loads"), workers=1)


def test_a_game_that_kills_its_pool_process_is_a_typed_error() -> None:
    """A game crashing natively ends a pool process: a TargetError naming it, not a
    BrokenProcessPool from the depths of the executor."""
    jobs = [
        ReplayJob(seed, ("up", "left") if seed != 2 else ("up", "crash"), False)
        for seed in range(4)
    ]
    with (
        PoolReplayer(GameSpec(factory="crashing_game:make_game"), workers=2) as pool,
        pytest.raises(TargetError, match="a pool process died while replaying episode"),
    ):
        pool.replay_many(jobs, TARGET.contract)


def test_a_game_that_hangs_is_a_typed_error_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """No episode finishing within the timeout is a TargetError, and closing the pool
    then ends its processes instead of waiting for the hung episode forever."""
    import threading

    from playproof.exec import _pool

    monkeypatch.setattr(_pool, "EPISODE_TIMEOUT", 3.0)
    jobs = [ReplayJob(seed, ("up", "hang") if seed == 1 else ("up",), False) for seed in range(2)]
    failure: list[BaseException] = []

    def replay() -> None:
        try:
            with PoolReplayer(GameSpec(factory="crashing_game:make_game"), workers=1) as pool:
                try:
                    pool.replay_many(jobs, TARGET.contract)
                finally:
                    with pytest.raises(TargetError, match="open a new replayer"):
                        pool.replay_many(jobs, TARGET.contract)
        except BaseException as exc:  # handed to the test thread
            failure.append(exc)

    replaying = threading.Thread(target=replay, daemon=True)
    replaying.start()
    replaying.join(60)
    assert not replaying.is_alive(), "closing the pool waited for the hung episode"
    assert len(failure) == 1
    assert isinstance(failure[0], TargetError)
    assert "no episode finished within 3 s" in str(failure[0])
