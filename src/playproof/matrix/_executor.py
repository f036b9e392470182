"""The executor seam of the matrix: the local process pool, this process, or (later) Ray.

``local`` is a process pool on this machine (default: every core), ``serial``
runs every call at once in this process, and ``ray`` is not built yet: it
raises :class:`~playproof.errors.NotSupportedError`. Calls are whole
episodes (a cell to play, a record to replay), never single steps.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

from playproof.errors import NotSupportedError, RunError, TargetError
from playproof.exec import EXECUTORS, default_workers

__all__ = ["check_executor", "open_executor"]


class _SerialExecutor(Executor):
    """Runs each submitted call at once, in this process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def _pool(workers: int, preload: Sequence[str]) -> ProcessPoolExecutor:
    if "forkserver" in multiprocessing.get_all_start_methods():
        # Not plain fork: this process may hold threads (a progress bar). The
        # fork server imports playproof once and forks every pool process from
        # there. Only the first pool of a process starts it; later preloads are ignored.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["playproof._api", *preload])
        return ProcessPoolExecutor(max_workers=workers, mp_context=context)
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def check_executor(kind: str, jobs: int | None = None) -> None:
    """Refuse an executor that does not exist or is not built, and a pool of no processes."""
    if jobs is not None and jobs < 1:
        raise RunError(f"--jobs must be at least 1, not {jobs}")
    if kind == "ray":
        raise NotSupportedError(
            "the Ray executor is not built yet; use --executor local (a process pool on this "
            "machine) or serial"
        )
    if kind not in ("local", "serial"):
        raise TargetError(f"unknown executor {kind!r}; choose from {', '.join(EXECUTORS)}")


def open_executor(kind: str, jobs: int | None, preload: Sequence[str] = ()) -> tuple[Executor, int]:
    """An executor of ``kind`` and how many calls it runs at once."""
    check_executor(kind, jobs)
    if kind == "serial":
        return _SerialExecutor(), 1
    workers = jobs or default_workers()
    return _pool(workers, preload), workers
