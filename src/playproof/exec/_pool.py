"""Replaying episodes on an executor: the local process pool (default: every core), or Ray.

Each pool process (or Ray worker) builds its own game from a picklable
:class:`GameSpec` (once, then keeps it for the next episode of the same spec)
and replays a whole input log per task: episodes cross the process boundary,
never single steps. Results come back in job order whatever order they
finish in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Self

from playproof.core.contract import Contract
from playproof.core.game import Game, GameDescriptor, ReplayResult
from playproof.core.replay import replay
from playproof.errors import PlayproofError, TargetError
from playproof.exec._executors import (
    EXECUTORS,
    RetryNotice,
    abandon,
    check_executor,
    default_workers,
    open_executor,
    process_pool,
)
from playproof.exec._spec import GameSpec, resolve_target
from playproof.verify import Replayer, ReplayJob, SerialReplayer

__all__ = ["EXECUTORS", "PoolReplayer", "default_workers", "make_replayer"]

EPISODE_TIMEOUT = 3600.0
"""Seconds one batch of episodes may take before the pool is abandoned."""

Progress = Callable[[int, int], None]

_PRELOAD = ("playproof.exec._pool", "playproof.targets", "playproof.core.replay")
"""Modules the fork server imports once for every pool process."""

# One game per pool process, kept between tasks of the same spec (building an
# emulator costs far more than one short episode).
_GAMES: dict[str, Game] = {}


def _game(spec_json: str) -> Game:
    game = _GAMES.get(spec_json)
    if game is None:
        for old in _GAMES.values():
            old.close()
        _GAMES.clear()
        game = GameSpec.model_validate_json(spec_json).open()
        _GAMES[spec_json] = game
    return game


def _warm(spec_json: str) -> None:
    """Pool initializer: every process builds its game as it starts, all in parallel."""
    # On failure _describe builds it again and carries the error back to the caller
    # (an initializer that raises would break the whole pool instead).
    with contextlib.suppress(Exception):
        _game(spec_json)


def _describe(spec_json: str) -> GameDescriptor:
    return _game(spec_json).descriptor


def _episode(spec_json: str, contract_json: str, job: ReplayJob) -> ReplayResult:
    contract = Contract.model_validate_json(contract_json)
    return replay(_game(spec_json), job.seed, job.inputs, contract, trace=job.trace)


def _preload(spec: GameSpec) -> list[str]:
    """What the fork server imports once for every pool process: playproof and the game's module."""
    factory = spec.factory
    if spec.target is not None:
        with contextlib.suppress(PlayproofError):
            factory = resolve_target(spec.target).spec.factory
    extra = [factory.partition(":")[0]] if factory else []
    return [*_PRELOAD, *extra]


class PoolReplayer:
    """A :class:`~playproof.verify.Replayer` over a local process pool, or any executor given.

    With ``pool`` (e.g. a Ray executor) the replayer uses that executor,
    ``workers`` wide, and shuts it down on close; without, it starts a local
    pool whose processes all build their game as they start.
    """

    def __init__(
        self,
        spec: GameSpec,
        *,
        workers: int | None = None,
        progress: Progress | None = None,
        pool: Executor | None = None,
    ) -> None:
        self._spec_json = spec.model_dump_json()
        self._workers = workers or default_workers()
        self._progress = progress
        self._abandoned = False
        self._pool = pool or process_pool(
            self._workers, _preload(spec), initializer=_warm, initargs=(self._spec_json,)
        )
        described: Future[GameDescriptor] | None = None
        try:
            described = self._pool.submit(_describe, self._spec_json)
            self._descriptor = described.result(timeout=EPISODE_TIMEOUT)
        except TimeoutError:
            abandon(self._pool)  # a game that never gets built: waiting would wait forever
            raise TargetError(
                f"the game was not built within {EPISODE_TIMEOUT:g} s in a pool process"
            ) from None
        except BaseException as exc:
            if described is None or described.done():
                self._pool.shutdown(cancel_futures=True)
            else:
                abandon(self._pool)  # interrupted while the game is built: it may never be
            if isinstance(exc, PlayproofError) or not isinstance(exc, Exception):
                raise
            raise TargetError(
                f"the game could not be built in a pool process ({type(exc).__name__}: {exc})"
            ) from exc

    @property
    def workers(self) -> int:
        """Pool size."""
        return self._workers

    @property
    def executor(self) -> Executor:
        """Where the episodes run."""
        return self._pool

    @property
    def descriptor(self) -> GameDescriptor:
        """The descriptor reported by a pool process."""
        return self._descriptor

    def replay_many(self, jobs: Sequence[ReplayJob], contract: Contract) -> list[ReplayResult]:
        """Replay every job as one pool task; results in job order."""
        if self._abandoned:
            raise TargetError(
                "the pool was ended after an episode hung or the replay was interrupted; "
                "open a new replayer"
            )
        contract_json = contract.model_dump_json(by_alias=True)
        futures: dict[Future[ReplayResult], int] = {
            self._pool.submit(_episode, self._spec_json, contract_json, job): index
            for index, job in enumerate(jobs)
        }
        try:
            return self._gather(futures, len(jobs))
        except BaseException:
            if not all(future.done() for future in futures):
                # Interrupted (or a progress callback raised) with episodes still running,
                # perhaps hung: closing the pool must not wait for them.
                abandon(self._pool)
                self._abandoned = True
            raise

    def _gather(self, futures: dict[Future[ReplayResult], int], total: int) -> list[ReplayResult]:
        """Each result as it finishes, in job order; see :meth:`replay_many`."""
        results: list[ReplayResult | None] = [None] * total
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=EPISODE_TIMEOUT, return_when=FIRST_COMPLETED)
            if not done:
                # The pool's processes are ended: closing it must not wait for a hung episode.
                abandon(self._pool)
                self._abandoned = True
                raise TargetError(f"no episode finished within {EPISODE_TIMEOUT:g} s")
            for future in done:
                try:
                    results[futures[future]] = future.result()
                except BrokenProcessPool as exc:
                    for left in pending:
                        left.cancel()
                    raise TargetError(
                        f"a pool process died while replaying episode {futures[future] + 1} "
                        f"of {total} (a game that crashes its process, or out of memory); "
                        "run again with fewer workers, or with --executor serial to see "
                        "the game's own error"
                    ) from exc
            if self._progress is not None:
                self._progress(total - len(pending), total)
        return [r for r in results if r is not None]

    def close(self) -> None:
        """Shut the pool down (idempotent)."""
        self._pool.shutdown(cancel_futures=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def make_replayer(
    spec: GameSpec,
    *,
    executor: str = "local",
    workers: int | None = None,
    progress: Progress | None = None,
    address: str | None = None,
    on_retry: RetryNotice | None = None,
) -> PoolReplayer | SerialReplayer:
    """A replayer for ``spec``: ``local`` pool (default), ``serial``, or ``ray`` at ``address``."""
    check_executor(executor, workers, address)
    if executor == "serial":
        return SerialReplayer(spec.open, progress=progress)
    if executor == "ray":
        pool, width = open_executor("ray", workers, address=address, on_retry=on_retry)
        return PoolReplayer(spec, workers=width, progress=progress, pool=pool)
    return PoolReplayer(spec, workers=workers, progress=progress)


def close_replayer(replayer: Replayer) -> None:
    """Close a replayer that holds a pool."""
    if isinstance(replayer, PoolReplayer):
        replayer.close()
