"""An interrupt while a pool episode (or the game's build) hangs reaches the caller.

Before, closing the pool on that error path waited for the hung work forever.
Each call runs on a daemon thread that the test waits for with a generous bound.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator

import pytest

from playproof.exec import GameSpec, PoolReplayer, resolve_target
from playproof.verify import ReplayJob

TARGET = resolve_target("native/2048")
BOUND_S = 90.0
"""How long a call may take here before it counts as hung (far above what it needs)."""


def _raised(call: Callable[[], object]) -> list[BaseException]:
    """What ``call`` raised, run on a thread; fails the test if it hangs."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:  # KeyboardInterrupt included: it is the answer here
            raised.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), "closing the pool waited for the hung work"
    return raised


def test_an_interrupt_while_an_episode_hangs_reaches_the_caller() -> None:
    jobs = [ReplayJob(seed, ("up", "hang") if seed == 1 else ("up",), False) for seed in range(2)]

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt  # as Ctrl-C would, once the first episode is in

    def replay() -> None:
        spec = GameSpec(factory="crashing_game:make_game")
        with PoolReplayer(spec, workers=2, progress=interrupt) as pool:
            pool.replay_many(jobs, TARGET.contract)

    assert [type(e) for e in _raised(replay)] == [KeyboardInterrupt]


@pytest.fixture
def interrupt_in_a_second() -> Iterator[None]:
    """Ctrl-C (a SIGINT to the main thread, as the terminal sends it) one second from now."""
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def test_an_interrupt_while_the_game_is_built_reaches_the_caller(
    interrupt_in_a_second: None,
) -> None:
    # In this (the main) thread: only it gets the interrupt. Were the pool closed by
    # waiting for the build that never ends, the test would hang until pytest's timeout.
    with pytest.raises(KeyboardInterrupt):
        PoolReplayer(GameSpec(factory="crashing_game:make_game_that_hangs"), workers=1)
