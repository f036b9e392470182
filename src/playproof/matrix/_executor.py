"""The executor seam of the matrix: the executors :mod:`playproof.exec` opens.

``local`` is a process pool on this machine (default: every core), ``serial``
runs every call at once in this process, and ``ray`` sends each call to a
Ray cluster (``address``: its head; none starts a local Ray). Calls are whole
episodes (a cell to play, a record to replay), never single steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor

from playproof.exec import RetryNotice
from playproof.exec import abandon as _abandon
from playproof.exec import check_executor as _check
from playproof.exec import open_executor as _open

__all__ = ["abandon", "check_executor", "open_executor"]


def check_executor(kind: str, jobs: int | None = None, address: str | None = None) -> None:
    """Refuse an unknown executor, a pool of no processes, and Ray when it is not installed."""
    _check(kind, jobs, address)


def open_executor(
    kind: str,
    jobs: int | None,
    preload: Sequence[str] = (),
    *,
    address: str | None = None,
    on_retry: RetryNotice | None = None,
) -> tuple[Executor, int]:
    """An executor of ``kind`` and how many calls it runs at once."""
    return _open(kind, jobs, address=address, preload=preload, on_retry=on_retry)


def abandon(pool: Executor) -> None:
    """Shut ``pool`` down without waiting for its calls (one may hang); end local processes."""
    _abandon(pool)
