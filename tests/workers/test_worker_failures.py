"""Every way a child can fail gives its typed error in time and leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable

import pytest
from processes import descendants, host_pid, reaped, wait_gone

from playproof.errors import (
    FormatError,
    WorkerCrashed,
    WorkerError,
    WorkerProtocolError,
    WorkerStartError,
    WorkerTimeout,
)
from playproof.workers import WorkerGame

Spawn = Callable[..., WorkerGame]
SHORT = 1.0
"""Timeout used where a test waits for a deadline to pass (keeps the suite fast)."""


class FakeWorker(WorkerGame):
    """A WorkerGame whose child is the misbehaving ``fakechild`` module."""

    _child_module = "fakechild"


def fake(spawn: Spawn, mode: str, **kwargs: float) -> WorkerGame:
    return spawn("toygames:make_toy", cls=FakeWorker, env={"FAKECHILD_MODE": mode}, **kwargs)


def test_crash_mid_call_is_worker_crashed_with_status_and_stderr(spawn: Spawn) -> None:
    worker = spawn("toygames:make_toy", {"misbehave": True})
    worker.reset(0)
    with pytest.raises(WorkerCrashed, match=r"exited with status 3[\s\S]*crashing on purpose"):
        worker.step("crash")
    assert reaped(worker.pid)
    with pytest.raises(WorkerCrashed, match="is gone"):
        worker.evidence()
    worker.close()


def test_hang_is_worker_timeout_and_the_child_is_killed(spawn: Spawn) -> None:
    worker = spawn("toygames:make_toy", {"misbehave": True}, call_timeout=SHORT)
    worker.reset(0)
    with pytest.raises(WorkerTimeout, match="did not answer step"):
        worker.step("hang")
    assert reaped(worker.pid)


def test_sigkill_between_calls_is_worker_crashed_on_the_next_call(spawn: Spawn) -> None:
    worker = spawn()
    worker.reset(0)
    below = descendants(worker.pid)  # the game itself, and its init when contained
    os.kill(worker.pid, signal.SIGKILL)
    # Killing the outermost process takes everything below it down, a hop at a time.
    assert all(wait_gone(pid) for pid in below)
    with pytest.raises(WorkerCrashed, match="SIGKILL"):
        worker.step("left")
    assert reaped(worker.pid)


def test_the_whole_process_group_dies_with_the_worker(spawn: Spawn) -> None:
    worker = spawn("toygames:make_toy", {"misbehave": True}, call_timeout=SHORT)
    worker.reset(0)
    worker.step("spawn")
    grandchild = host_pid(worker.pid, worker.evidence().engine["grandchild"])
    assert not wait_gone(grandchild, timeout=0.0)
    with pytest.raises(WorkerTimeout):
        worker.step("hang")
    assert reaped(worker.pid)
    assert wait_gone(grandchild)  # adopted by init after the group kill, which reaps it


@pytest.mark.parametrize(
    ("mode", "error", "match"),
    [
        ("garbage", WorkerProtocolError, "malformed answer"),
        ("wrong-shape", WorkerProtocolError, "malformed answer"),
        ("oversized", WorkerProtocolError, "over the 67108864-byte message cap"),
        ("noise", WorkerProtocolError, "message cap"),
        ("truncated", WorkerCrashed, "exited with status 5"),
    ],
)
def test_broken_answers_kill_the_worker(
    spawn: Spawn, mode: str, error: type[WorkerError], match: str
) -> None:
    worker = fake(spawn, mode, call_timeout=10.0)
    with pytest.raises(error, match=match):
        worker.evidence()
    assert reaped(worker.pid)
    with pytest.raises(WorkerCrashed):
        worker.evidence()


def test_a_batch_answer_of_the_wrong_length_kills_the_worker(spawn: Spawn) -> None:
    worker = fake(spawn, "short-batch", call_timeout=10.0)
    with pytest.raises(WorkerProtocolError, match="answered 0 snapshots for 2 words"):
        worker.advance_many(["right", "left"], observe=False)
    assert reaped(worker.pid)


def test_a_child_that_never_becomes_ready_is_a_start_error(spawn: Spawn) -> None:
    with pytest.raises(WorkerStartError, match="not ready within"):
        spawn("toygames:make_slow", start_timeout=SHORT)
    with pytest.raises(WorkerStartError, match="not ready within"):
        fake(spawn, "silent", start_timeout=SHORT)


def test_garbage_instead_of_readiness_is_a_protocol_error(spawn: Spawn) -> None:
    with pytest.raises(WorkerProtocolError, match="readiness"):
        fake(spawn, "garbage-ready")


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        ("no_such_module_for_playproof:make", "ModuleNotFoundError"),
        ("toygames:no_such_factory", "AttributeError"),
        ("toygames:make_failing", "RuntimeError: the toy factory exploded"),
        ("toygames:make_not_a_game", "returned int, not a Game"),
    ],
)
def test_factory_failures_are_start_errors_with_the_child_message(
    spawn: Spawn, factory: str, match: str
) -> None:
    with pytest.raises(WorkerStartError, match=match):
        spawn(factory)


def test_failed_starts_leave_no_process(child_env: dict[str, str]) -> None:
    pids: list[int] = []

    class Recording(WorkerGame):
        def __init__(self, *args: object, **kwargs: object) -> None:
            try:
                super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            finally:
                pids.append(self.pid)

    for factory, timeout in (("toygames:make_failing", 60.0), ("toygames:make_slow", SHORT)):
        with pytest.raises(WorkerStartError):
            Recording(factory, env=child_env, start_timeout=timeout)
    assert len(pids) == 2
    assert all(reaped(pid) for pid in pids)


def test_a_bad_factory_spec_is_rejected_before_spawning(spawn: Spawn) -> None:
    with pytest.raises(FormatError, match="factory"):
        spawn("not a factory spec")


PARENT_SCRIPT = """
import threading, time
from playproof.workers import WorkerGame
workers = []
def start():
    workers.append(WorkerGame('toygames:make_toy'))
if {in_thread}:
    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
else:
    start()
print(workers[0].pid, flush=True)
time.sleep(3600)
"""


@pytest.mark.parametrize("in_thread", [False, True], ids=["main-thread", "pool-thread"])
def test_the_child_exits_when_its_parent_dies(child_env: dict[str, str], in_thread: bool) -> None:
    """From the main thread PDEATHSIG fires; from another thread only stdin EOF can tell."""
    script = PARENT_SCRIPT.format(in_thread=in_thread)
    env = {**os.environ, **child_env}
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        child_pid = int(line)
        assert not wait_gone(child_pid, timeout=0.0)
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    assert wait_gone(child_pid)
