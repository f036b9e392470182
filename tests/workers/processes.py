"""Process liveness helpers for the worker tests (Linux /proc)."""

from __future__ import annotations

import time
from pathlib import Path

GONE_WAIT = 10.0
"""Seconds a process that is not our child gets to be reaped by whoever adopted it."""


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except ProcessLookupError:
        return True
    return status.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_gone(pid: int, timeout: float = GONE_WAIT) -> bool:
    """Poll (bounded) until ``pid`` is gone; for processes someone else must reap."""
    deadline = time.monotonic() + timeout
    while not process_gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def reaped(pid: int) -> bool:
    """True when ``pid`` has no /proc entry at all (it exited and was reaped)."""
    return not Path(f"/proc/{pid}").exists()


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def descendants(root: int) -> list[int]:
    """Live processes below ``root`` (children, grandchildren, ...), found through /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (parent := _parent(int(entry.name))) is not None:
            parents[int(entry.name)] = parent
    found: list[int] = []
    frontier = [root]
    while frontier:
        current = frontier.pop()
        children = [pid for pid, parent in parents.items() if parent == current]
        found += children
        frontier += children
    return found


def innermost_pid(pid: int) -> int | None:
    """``pid`` as the process itself sees it (its PID namespace's number), from /proc."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return pid


def host_pid(root: int, inner: int) -> int:
    """The process below ``root`` that calls itself ``inner`` (a contained worker's numbers
    are those of its own PID namespace); the only match, else an AssertionError."""
    matches = [pid for pid in descendants(root) if innermost_pid(pid) == inner]
    assert len(matches) == 1, f"{len(matches)} processes below {root} call themselves {inner}"
    return matches[0]
