"""The per-uid sweep after a case: every process of the jail uid dies, nothing else does."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from playproof.corpus._jail import (
    JAIL_UID_BASE,
    _alive,
    _processes_of,
    bubblewrap_usable,
    kill_uid,
    reserve_lanes,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="jail uids exist only when root")


def _live_processes(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid and _alive(entry.name)
            except OSError:
                continue
    return count


def _as(uid: int, script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["sh", "-c", script],
        user=uid,
        group=uid,
        extra_groups=[],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_kill_uid_reaches_escaped_children_and_spares_other_uids() -> None:
    with reserve_lanes(2) as (lane, other):
        uid, bystander_uid = JAIL_UID_BASE + lane, JAIL_UID_BASE + other
        # Children in their own sessions have left the process group the runner kills.
        target = _as(uid, "setsid sleep 60 & setsid sh -c 'sleep 60 & sleep 60' & sleep 60")
        bystander = _as(bystander_uid, "sleep 60")
        try:
            deadline = time.monotonic() + 10
            while _processes_of(uid) < 5 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert _processes_of(uid) >= 5
            kill_uid(uid)
            target.wait(timeout=5)
            assert _live_processes(uid) == 0
            assert bystander.poll() is None
        finally:
            for process in (target, bystander):
                process.kill()
                process.wait(timeout=5)
            kill_uid(uid)
            kill_uid(bystander_uid)


def test_alive_is_false_for_a_zombie() -> None:
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while _alive(str(child.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(str(child.pid))  # exited, not yet reaped
    child.wait()


def test_a_candidate_the_jail_uid_cannot_reach_is_refused_before_any_case(tmp_path: Any) -> None:
    from playproof.corpus._jail import JailSpec, check_reachable
    from playproof.errors import RunError

    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    script = closed / "candidate.sh"
    script.write_text("echo hi\n")
    spec = JailSpec(read_only=(closed,), isolation="rlimits")
    with reserve_lanes(1) as (lane,):
        with pytest.raises(RunError, match=r"cannot reach .*closed"):
            check_reachable(["/bin/sh", str(script)], spec, lane)
        closed.chmod(0o755)
        tmp_path.chmod(0o755)
        if all(os.stat(p).st_mode & 0o001 for p in tmp_path.parents):
            check_reachable(["/bin/sh", str(script)], spec, lane)  # open now: no error
        closed.chmod(0o700)
        if bubblewrap_usable():  # bound into the jail instead: nothing to check
            check_reachable(["/bin/sh", str(script)], JailSpec(read_only=(closed,)), lane)


@pytest.mark.skipif(not bubblewrap_usable(), reason="bubblewrap cannot run here")
def test_a_jail_starts_while_the_lane_still_holds_processes_of_its_last_candidate() -> None:
    """Killed processes count against the uid's process limit until they are reaped.

    A lane's previous candidate (a fork bomb, say) can leave up to the limit of
    them dying or unreaped when the sweep returns; the next candidate on the
    lane must still start (it used to fail as a ``crash``).
    """
    from pathlib import Path

    from playproof.corpus._jail import JailLimits, JailSpec, launch, python_paths

    hang = Path(__file__).parent / "candidates" / "hang.py"
    limits = JailLimits(processes=8)
    with reserve_lanes(1) as (lane,):
        uid = JAIL_UID_BASE + lane
        leftovers = [_as(uid, "sleep 60") for _ in range(limits.processes + 2)]
        try:
            spec = JailSpec(read_only=(*python_paths(), hang.parent), limits=limits)
            jailed = launch([sys.executable, str(hang)], spec, lane)
            try:
                assert jailed.process.stdin is not None
                assert jailed.process.stdout is not None
                jailed.process.stdin.write(b"HELLO 1\n")
                jailed.process.stdin.flush()
                assert jailed.process.stdout.readline(300).startswith(b"OK playproof-corpus/1")
            finally:
                jailed.stop()
                jailed.discard()
        finally:
            kill_uid(uid)
            for process in leftovers:
                process.wait(timeout=5)
