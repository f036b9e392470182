"""One executor interface for every embarrassingly parallel job.

Calibration, batch verification, matrix cells and the service's replays all
hand whole episodes (or whole records) to a :class:`concurrent.futures.Executor`
and read the results back. :func:`open_executor` builds that executor by name:

- ``local``: a process pool on this machine (default: every core);
- ``serial``: every call at once, in this process;
- ``ray``: tasks on a Ray cluster (``address`` joins one, none starts a local
  one); needs the ``ray`` extra.

Whatever the executor, a call is a whole episode, never a single step, and
the results are the same bytes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

from playproof.errors import RunError, TargetError

__all__ = [
    "EXECUTORS",
    "RetryNotice",
    "SerialExecutor",
    "abandon",
    "check_executor",
    "check_grading_executor",
    "default_workers",
    "open_executor",
    "process_pool",
]

EXECUTORS = ("local", "serial", "ray")
"""Executor names: ``local`` (process pool), ``serial`` (this process), ``ray`` (a Ray cluster)."""

RetryNotice = Callable[[str], None]
"""Told, in one line, each time a task is sent again because its worker died."""


def default_workers() -> int:
    """Every core this process may use."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class SerialExecutor(Executor):
    """Runs each submitted call at once, in this process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def process_pool(
    workers: int,
    preload: Sequence[str] = (),
    *,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> ProcessPoolExecutor:
    """A local pool forked from a clean fork server where there is one, else spawned.

    Not plain fork: this process may hold threads (progress bars, worker
    readers). The fork server imports ``preload`` once and forks every pool
    process from there. Only the first pool of a process starts the server;
    later preloads are ignored.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context: multiprocessing.context.BaseContext = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(preload))
    else:
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=initializer, initargs=initargs
    )


def abandon(pool: Executor) -> None:
    """Shut ``pool`` down without waiting for its tasks, and end a local pool's processes.

    For a task that hangs: ``shutdown(wait=True)`` would wait for it forever,
    and a plain ``wait=False`` would leave its process running.
    """
    processes = getattr(pool, "_processes", None) if isinstance(pool, ProcessPoolExecutor) else None
    live = list(processes.values()) if isinstance(processes, dict) else []
    pool.shutdown(wait=False, cancel_futures=True)
    for process in live:
        with contextlib.suppress(OSError, ValueError):  # already gone, or already closed
            process.kill()


def check_executor(kind: str, jobs: int | None = None, address: str | None = None) -> None:
    """Refuse an unknown executor, a pool of no processes, and an address without Ray."""
    if jobs is not None and jobs < 1:
        raise RunError(f"--jobs must be at least 1, not {jobs}")
    if kind not in EXECUTORS:
        raise TargetError(f"unknown executor {kind!r}; choose from {', '.join(EXECUTORS)}")
    if address is not None and kind != "ray":
        raise RunError(f"--ray-address needs --executor ray (not {kind})")
    if kind == "ray":
        from playproof.exec._ray import require_ray, split_address  # local: optional extra

        require_ray()
        if address is not None:
            split_address(address)


def check_grading_executor(kind: str, address: str | None = None) -> None:
    """Refuse an executor corpus grading cannot use (as :func:`check_executor` does).

    Every executor can grade. On Ray each case group is one task, jailed on
    its node; call :func:`playproof.exec.check_grading_nodes` once the
    executor is open, so a node that cannot build the jail is named before
    any case runs.
    """
    check_executor(kind, None, address)


def open_executor(
    kind: str,
    jobs: int | None = None,
    *,
    address: str | None = None,
    preload: Sequence[str] = (),
    on_retry: RetryNotice | None = None,
) -> tuple[Executor, int]:
    """An executor of ``kind`` and how many calls it runs at once."""
    check_executor(kind, jobs, address)
    if kind == "serial":
        return SerialExecutor(), 1
    if kind == "ray":
        from playproof.exec._ray import RayExecutor  # local: optional extra

        ray_executor = RayExecutor(address=address, cpus=jobs, on_retry=on_retry)
        return ray_executor, ray_executor.width
    workers = jobs or default_workers()
    return process_pool(workers, ["playproof._api", *preload]), workers
