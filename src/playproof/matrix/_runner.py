"""Play every cell of a matrix into a signed record, in parallel, resumable.

Cells are whole episodes, so they spread over the local process pool (one
task per cell; each pool process is its own crash boundary, so games run
in-process there) or run one by one in this process (``serial``). The Ray
executor sends each cell to a Ray cluster as one task (games run in-process
in the Ray worker, itself a crash boundary). Whatever the executor, the
records are signed and written here, in this process, as each cell finishes:
a crash or Ctrl-C loses only the cells still being played, and a rerun skips
every cell whose record is there and verifies by signature.

Drivers are built by an :class:`AgentBuilder` that the caller supplies (the
command line passes the one that understands ``--agent`` specs); on the pool
it must be picklable, i.e. a module-level function.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal, Protocol

from playproof._api import arun
from playproof.core.agent import Driver
from playproof.core.contract import contract_hash
from playproof.core.record import RunRecord, RunSettings
from playproof.errors import PlayproofError, RunError
from playproof.exec import resolve_target
from playproof.matrix._executor import abandon, open_executor
from playproof.matrix._spec import AgentProfile, Cell, MatrixSpec
from playproof.matrix._store import (
    CONFIG_OPTION,
    PROFILE_OPTION,
    REPETITION_OPTION,
    SPEC_FILE,
    finished_record,
    hold_folder,
    record_path,
    remove_stale_temporaries,
    write_atomic,
)
from playproof.sign import SigningKey, sign_record
from playproof.targets import Target

__all__ = [
    "CELL_TIMEOUT_S",
    "AgentBuilder",
    "CellAgent",
    "CellEvent",
    "CellJob",
    "MatrixOutcome",
    "play_cell",
    "run_matrix",
]

CELL_TIMEOUT_S = 3600.0
"""Seconds the runner waits for any one cell to finish before it gives up on the pool."""
IN_FLIGHT_PER_WORKER = 4
"""Cells handed to the pool per process at a time (enough to keep it busy, no more)."""


@dataclass(frozen=True)
class CellAgent:
    """A driver for one cell, the turn cap its nature implies, and the settings to record."""

    driver: Driver
    max_turns: int | None
    settings: RunSettings


class AgentBuilder(Protocol):
    """Builds the driver of a profile for a target (``agent_seed`` seeds a random agent)."""

    def __call__(self, profile: AgentProfile, target: Target, agent_seed: int) -> CellAgent: ...


@dataclass(frozen=True)
class CellJob:
    """Everything a process needs to play one cell (picklable)."""

    cell: Cell
    profile: AgentProfile
    max_turns: int
    budget_usd: float | None
    stop_at_game_over: bool
    config: str
    worker: bool | None


Status = Literal["played", "skipped", "failed"]


@dataclass(frozen=True)
class CellEvent:
    """A cell is done: ``played`` (record written), ``skipped`` (already there) or ``failed``."""

    cell: Cell
    status: Status
    done: int
    total: int
    record: RunRecord | None = None
    error: str | None = None


@dataclass
class MatrixOutcome:
    """What one ``run_matrix`` call did."""

    total: int
    played: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every cell has a record."""
        return self.played + self.skipped == self.total


@cache
def _target(name: str) -> Target:
    return resolve_target(name)


def _pin(name: str) -> tuple[str, str] | None:
    """The build digest and contract hash a cell of target ``name`` is played on now."""
    try:
        target = _target(name)
    except PlayproofError:
        return None  # the cell's own play will say what is wrong with the target
    return target.spec.build_digest, contract_hash(target.contract)


def play_cell(build: AgentBuilder, job: CellJob) -> RunRecord:
    """Play one cell to its run record (not yet signed)."""
    target = _target(job.cell.target)
    agent = build(job.profile, target, job.profile.agent_seed + job.cell.repetition)
    turns = job.max_turns if agent.max_turns is None else min(job.max_turns, agent.max_turns)
    options = {
        **agent.settings.options,
        PROFILE_OPTION: job.cell.agent,
        REPETITION_OPTION: job.cell.repetition,
        CONFIG_OPTION: job.config,
    }
    settings = agent.settings.model_copy(update={"options": options})
    return asyncio.run(
        arun(
            target,
            agent.driver,
            seed=job.cell.seed,
            budget_usd=job.budget_usd,
            max_turns=turns,
            stop_at_game_over=job.stop_at_game_over,
            worker=job.worker,
            settings=settings,
        )
    )


def _jobs(spec: MatrixSpec, cells: list[Cell], *, worker: bool | None) -> Iterator[CellJob]:
    for cell in cells:
        profile = spec.profile(cell.agent)
        turns, budget = spec.limits(profile)
        yield CellJob(
            cell=cell,
            profile=profile,
            max_turns=turns,
            budget_usd=budget,
            stop_at_game_over=spec.stop_at_game_over,
            config=spec.config_digest(profile),
            worker=worker,
        )


def run_matrix(
    spec: MatrixSpec,
    folder: Path,
    key: SigningKey,
    build: AgentBuilder,
    *,
    executor: str = "local",
    jobs: int | None = None,
    on_cell: Callable[[CellEvent], None] | None = None,
    address: str | None = None,
    on_retry: Callable[[str], None] | None = None,
) -> MatrixOutcome:
    """Play every cell of ``spec`` not yet recorded in ``folder``; sign and write each record.

    A cell that fails (a driver error, a game that cannot be built) is
    reported and has no record; the others go on. Cells already recorded,
    signed by ``key`` for the same configuration, are skipped.
    """
    # Refuse a wrong executor before anything is written; pool processes start on first use.
    pool, workers = open_executor(
        executor, jobs, [__name__, build.__module__], address=address, on_retry=on_retry
    )
    try:
        in_pool = executor in ("local", "ray")
        outcome = _run(spec, folder, key, build, pool, workers, in_pool, on_cell)
    except BaseException:
        # A cell may still be running, or hung (the timeout): waiting would wait for it,
        # perhaps forever. Its record would not be written anyway; a rerun plays it.
        abandon(pool)
        raise
    pool.shutdown(wait=True, cancel_futures=True)  # every cell is finished
    return outcome


def _run(
    spec: MatrixSpec,
    folder: Path,
    key: SigningKey,
    build: AgentBuilder,
    pool: Executor,
    workers: int,
    in_pool: bool,
    on_cell: Callable[[CellEvent], None] | None,
) -> MatrixOutcome:
    # Checked before any cell is played: a record that cannot be kept is money lost.
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot use {folder} as the matrix folder: {exc.strerror or exc}") from exc
    with hold_folder(folder):
        return _run_held(spec, folder, key, build, pool, workers, in_pool, on_cell)


def _run_held(
    spec: MatrixSpec,
    folder: Path,
    key: SigningKey,
    build: AgentBuilder,
    pool: Executor,
    workers: int,
    in_pool: bool,
    on_cell: Callable[[CellEvent], None] | None,
) -> MatrixOutcome:
    remove_stale_temporaries(folder)
    kept = folder / SPEC_FILE
    try:
        write_atomic(kept, spec.model_dump_json(by_alias=True, indent=2).encode())
    except OSError as exc:
        raise RunError(f"cannot write {kept}: {exc.strerror or exc}") from exc
    cells = spec.cells()
    outcome = MatrixOutcome(total=len(cells))

    def tell(cell: Cell, status: Status, record: RunRecord | None = None, error: str = "") -> None:
        if on_cell is not None:
            done = outcome.played + outcome.skipped + len(outcome.failed)
            on_cell(CellEvent(cell, status, done, outcome.total, record, error or None))

    todo: list[Cell] = []
    for cell in cells:
        if finished_record(folder, cell, spec, key.verifying_key, _pin(cell.target)) is None:
            todo.append(cell)
        else:
            outcome.skipped += 1
            tell(cell, "skipped")
    # Games run in-process on the pool: each pool process is already its own crash boundary.
    pending = _jobs(spec, todo, worker=False if in_pool else None)
    running: dict[Future[RunRecord], Cell] = {}
    while True:
        while len(running) < workers * IN_FLIGHT_PER_WORKER:
            job = next(pending, None)
            if job is None:
                break
            running[pool.submit(play_cell, build, job)] = job.cell
        if not running:
            return outcome
        done, _ = wait(running, timeout=CELL_TIMEOUT_S, return_when=FIRST_COMPLETED)
        if not done:
            raise RunError(
                f"no cell finished within {CELL_TIMEOUT_S:.0f} s; rerun to resume the matrix"
            )
        for future in done:
            cell = running.pop(future)
            try:
                record = future.result()
            except BrokenProcessPool as exc:
                raise RunError(
                    f"a pool process died while playing {cell.id} ({exc}); the finished "
                    "cells are kept: rerun the same command to resume"
                ) from exc
            except Exception as exc:  # the cell's own failure; the other cells go on
                outcome.failed.append((cell.id, f"{type(exc).__name__}: {exc}"))
                tell(cell, "failed", error=f"{type(exc).__name__}: {exc}")
                continue
            path = record_path(folder, cell)
            try:
                write_atomic(path, sign_record(record, key).to_bytes())
            except OSError as exc:  # a folder in its place, a full disk: this cell has no record
                reason = f"cannot write its record {path.name}: {exc.strerror or exc}"
                outcome.failed.append((cell.id, reason))
                tell(cell, "failed", error=reason)
                continue
            outcome.played += 1
            tell(cell, "played", record)
