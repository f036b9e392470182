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
