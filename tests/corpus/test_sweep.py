"""The per-uid sweep after a case: every process of the jail uid dies, nothing else does."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from playproof.corpus._jail import JAIL_UID_BASE, _alive, _processes_of, kill_uid, reserve_lanes

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


def test_kill_uid_of_an_idle_uid_is_harmless() -> None:
    with reserve_lanes(1) as (lane,):
        kill_uid(JAIL_UID_BASE + lane)
        assert _live_processes(JAIL_UID_BASE + lane) == 0


def test_alive_is_false_for_a_zombie() -> None:
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while _alive(str(child.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(str(child.pid))  # exited, not yet reaped
    child.wait()
