"""Stop waiting on an agent as soon as the run is cancelled.

A session decision costs a few hundred microseconds, so cancellation must not
cost a task per decision: one watcher task per cancel event cancels whichever
task is deciding when the event fires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from playproof.errors import RunCancelled

__all__ = ["CancelScope"]

T = TypeVar("T")


class CancelScope:
    """Run decisions so that setting the run's cancel event raises RunCancelled promptly."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._deciding: asyncio.Task[Any] | None = None

    async def run(self, work: Coroutine[Any, Any, T], cancel: asyncio.Event) -> T:
        """Await ``work`` in the current task; raise RunCancelled if ``cancel`` is set meanwhile.

        ``work`` must clean up after itself when cancelled (kill a child, close a
        connection); this only delivers the cancellation.
        """
        if cancel.is_set():
            work.close()
            raise RunCancelled("the run was cancelled before the agent was asked")
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - act() always runs inside a task
            return await work
        self._watch(cancel)
        self._deciding = task
        try:
            return await work
        except asyncio.CancelledError:
            # Ours only if the event fired and nobody else asked for cancellation too.
            if cancel.is_set() and task.uncancel() == 0:
                raise RunCancelled("the run was cancelled while the agent was deciding") from None
            raise
        finally:
            self._deciding = None

    def close(self) -> None:
        """Stop watching (call from the driver's ``aclose``)."""
        watcher, self._watcher, self._event = self._watcher, None, None
        if watcher is not None and not watcher.done():
            watcher.cancel()

    def _watch(self, cancel: asyncio.Event) -> None:
        watcher = self._watcher
        if cancel is self._event and watcher is not None and not watcher.done():
            return
        self.close()
        self._event = cancel
        self._watcher = asyncio.ensure_future(self._fire_on(cancel))

    async def _fire_on(self, cancel: asyncio.Event) -> None:
        await cancel.wait()
        if self._deciding is not None:
            self._deciding.cancel()
