"""Server-side replay: every pending run is verified in a process pool.

The replay is :func:`playproof.verify_signed` on the stored envelope with the
owner's registered keys, so the server's verdict is the one ``playproof
verify`` gives on the same record. A run stays ``pending`` until its report is
stored; a server stopped mid-replay picks it up again when it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from playproof.core.record import RunRecord
from playproof.core.report import VerificationReport
from playproof.service.artifacts.replay import is_policy_target
from playproof.service.artifacts.roles import ArtifactBytes
from playproof.service.db import read_only
from playproof.service.deployments.models import Deployment
from playproof.service.grades.services import (
    finish_grade,
    get_grade,
    grade_raised,
    pending_grade_ids,
    reverify_grade,
)
from playproof.service.owners.services import owner_keys
from playproof.service.proofs.cache import render_proof
from playproof.service.runs.services import (
    ReplayJob,
    finish_run,
    get_run,
    pending_run_ids,
    replay_raised,
)
from playproof.service.runs.uploads import read_contract_artifact, uploaded_sides
from playproof.sign import VerifyingKey

__all__ = ["ReplayQueue", "make_replay_pool", "replay_signed"]

log = logging.getLogger("playproof.service")

WAIT_RECHECK_S = 1.0
"""How often a status long-poll reads the run again (another process may store its verdict)."""
GRADE_PREFIX = "grade:"
"""In-flight grades are keyed apart from runs."""
MAX_KEPT_ENVELOPE_BYTES = 8 * 1024 * 1024
"""Records parsed at upload are kept until their verdict is stored (so that rendering the
proof document does not parse the envelope again) while their envelopes come to at most
this many bytes in all; parsed, a 2048 record takes about five times its envelope. Beyond
it, records are parsed again when their verdict comes."""


Replayed = tuple[str, tuple[ArtifactBytes, ...]]
"""What a replay sends back: the report as JSON text, and the artifacts it regenerated."""


def replay_signed(
    envelope: bytes,
    key_pems: tuple[bytes, ...],
    delay_s: float = 0.0,
    deployed_envelope: str | None = None,
    *,
    transcript: bytes | None = None,
    contract: bytes | None = None,
    policy: bool = True,
) -> Replayed:
    """Verify a signed record by replay (in a pool process): the report and the artifacts.

    A record of a policy-bound target also gets its run events regenerated and
    the deployed envelope (``deployed_envelope``, the deployment's, else the
    target's) as artifacts; any other record gets none. A trusted-recorder
    record is verified from ``transcript`` (its recorder key must be one of
    the owner's keys) against ``contract`` (the stored contract artifact,
    else the packaged target's); a platform-attested one from its pinned
    responses. ``policy=False`` (the server knows the record's target is not
    policy-bound) skips reading the record a second time for artifacts.
    """
    from playproof import verify_signed
    from playproof.service.artifacts.replay import policy_artifacts

    if delay_s > 0:
        time.sleep(delay_s)
    keys = [VerifyingKey.from_pem(pem) for pem in key_pems]
    report = verify_signed(
        envelope, keys, transcript=transcript, contract=read_contract_artifact(contract)
    ).model_dump_json()
    return report, policy_artifacts(envelope, deployed_envelope) if policy else ()


def make_replay_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of fresh interpreters (spawned: the server's threads are not copied)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


class ReplayQueue:
    """Hands pending runs to an executor and stores each verdict when it comes back."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        executor: Executor,
        *,
        delay_s: float = 0.0,
        log: bool = False,
    ) -> None:
        self._sessions = sessions
        self._executor = executor
        self._delay_s = delay_s
        self._log = log
        self._lock = threading.Lock()
        self._storing = threading.Lock()
        self._inflight: dict[str, Future[Any]] = {}
        self._records: dict[str, tuple[RunRecord, int]] = {}
        self._kept_bytes = 0
        self._closed = False
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    async def settled(self, run_id: str, timeout: float, still_pending: Callable[[], Any]) -> None:
        """Return once ``still_pending`` says False, or when ``timeout`` has passed.

        ``still_pending`` (awaited) reads the run's status anew; it is asked
        after the waiter is registered (so no verdict stored in between is
        missed), whenever this process has tried to store the run's verdict,
        and every ``WAIT_RECHECK_S`` (for runs another server process
        replays). For status long-polls: nothing blocks a thread.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        event = asyncio.Event()
        with self._lock:
            self._waiters.setdefault(run_id, []).append((loop, event))
        try:
            while await still_pending():
                left = deadline - loop.time()
                if left <= 0:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(left, WAIT_RECHECK_S))
                event.clear()  # a wake-up whose run is still pending (its storing failed)
        finally:
            with self._lock:
                waiting = self._waiters.get(run_id, [])
                if (loop, event) in waiting:
                    waiting.remove((loop, event))
                if not waiting:
                    self._waiters.pop(run_id, None)

    def _wake(self, run_id: str) -> None:
        # Waiters stay registered until they leave: a run still pending gets woken again.
        with self._lock:
            waiting = list(self._waiters.get(run_id, ()))
        for loop, event in waiting:
            with contextlib.suppress(RuntimeError):  # a loop that closed meanwhile
                loop.call_soon_threadsafe(event.set)

    def submit(self, run_id: str, job: ReplayJob | None = None) -> None:
        """Start the replay of a pending run (no-op when it is already under way).

        ``job`` is what the upload already read (the stored envelope, the
        owner's keys, ...); without it, it is read from the database.
        """
        if job is None:
            job = self._job(run_id)
        with self._lock:
            if self._closed or run_id in self._inflight:
                return
            try:
                future = self._executor.submit(
                    replay_signed,
                    job.envelope,
                    job.key_pems,
                    self._delay_s,
                    job.deployed_envelope,
                    policy=is_policy_target(job.target_name),
                    **job.sides,
                )
            except RuntimeError as exc:  # a broken or shut-down pool
                # The run is stored; it stays pending and the next start replays it.
                log.error("cannot start the replay of run %s: %s", run_id, exc)
                return
            self._inflight[run_id] = future
            self._keep(run_id, job.record, len(job.envelope))
        future.add_done_callback(partial(self._store, run_id))

    def _keep(self, run_id: str, record: RunRecord | None, size: int) -> None:
        # Under the lock. Within the bound only; a record not kept is parsed again.
        if record is None or run_id in self._records:
            return
        if self._kept_bytes + size <= MAX_KEPT_ENVELOPE_BYTES:
            self._records[run_id] = (record, size)
            self._kept_bytes += size

    def _take(self, run_id: str) -> RunRecord | None:
        with self._lock:
            kept = self._records.pop(run_id, None)
            if kept is None:
                return None
            self._kept_bytes -= kept[1]
            return kept[0]

    def kept_records(self) -> int:
        """Records parsed at upload and kept until their verdict is stored."""
        with self._lock:
            return len(self._records)

    def _job(self, run_id: str) -> ReplayJob:
        with read_only(self._sessions) as session:
            run = get_run(session, run_id)
            deployment = session.get(Deployment, run.deployment_id) if run.deployment_id else None
            return ReplayJob(
                envelope=run.envelope,
                key_pems=tuple(key.to_pem() for key in owner_keys(session, run.owner_id)),
                deployed_envelope=deployment.policy_envelope if deployment is not None else None,
                sides=uploaded_sides(session, run_id),
                target_name=run.target_name,
            )

    def submit_grade(self, grade_id: str) -> None:
        """Start the server's verification of a pending grade record."""
        with read_only(self._sessions) as session:
            grade = get_grade(session, grade_id)
            envelope = grade.envelope
            pems = tuple(key.to_pem() for key in owner_keys(session, grade.owner_id))
        key = GRADE_PREFIX + grade_id
        with self._lock:
            if self._closed or key in self._inflight:
                return
            try:
                future = self._executor.submit(reverify_grade, envelope, pems)
            except RuntimeError as exc:
                log.error("cannot start verifying grade %s: %s", grade_id, exc)
                return
            self._inflight[key] = future
        future.add_done_callback(partial(self._store_grade, grade_id))

    def resume(self) -> int:
        """Submit every run and grade left pending (by a server that stopped); how many."""
        with read_only(self._sessions) as session:
            waiting = pending_run_ids(session)
            grades = pending_grade_ids(session)
        for run_id in waiting:
            self.submit(run_id)
        for grade_id in grades:
            self.submit_grade(grade_id)
        return len(waiting) + len(grades)

    def in_flight(self) -> int:
        """Replays submitted and not yet stored."""
        with self._lock:
            return len(self._inflight)

    def close(self) -> None:
        """Stop taking work; replays not stored stay pending for the next start."""
        with self._lock:
            self._closed = True
            waiting = list(self._inflight.values())
            self._records.clear()
            self._kept_bytes = 0
        # Outside the lock: cancelling a queued replay runs its callback at once,
        # and the callback takes the lock.
        for future in waiting:
            future.cancel()
        # Wait for a verdict being stored right now: the database closes after this.
        with self._storing:
            pass

    def _store_grade(self, grade_id: str, future: Future[str]) -> None:
        with self._lock:
            self._inflight.pop(GRADE_PREFIX + grade_id, None)
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            if self._ended_by_stop(error):
                # Not counted as a failed attempt: resume() checks it again at the next start.
                log.info(
                    "grade check of grade %s was ended because the service stopped; "
                    "the grade stays pending and is checked again at the next start",
                    grade_id,
                )
                return
            log.error("verifying grade %s raised %s", grade_id, type(error).__name__)
        with self._storing:
            if self._closed:
                return  # still pending: the next start checks it again
            session = self._sessions()
            try:
                if error is None:
                    report = VerificationReport.model_validate_json(future.result())
                    finish_grade(session, grade_id, report)
                    return
                failed = grade_raised(session, grade_id, error)
            except Exception:
                log.exception("storing the verdict of grade %s failed; it stays pending", grade_id)
                return
            finally:
                session.close()
        if not failed:
            self.submit_grade(grade_id)

    def _count_failure(self, run_id: str, error: BaseException) -> None:
        """Record a replay that raised; try again until the attempts run out."""
        with self._storing:
            if self._closed:
                return  # still pending: the next start tries again
            session = self._sessions()
            try:
                failed = replay_raised(session, run_id, error)
            except Exception:
                log.exception("recording the failed replay of run %s failed", run_id)
                return
            finally:
                session.close()
        if failed:
            self._wake(run_id)
        else:
            self.submit(run_id)

    def _ended_by_stop(self, error: BaseException) -> bool:
        """Whether a replay or grade check failed only because the service stopped under it.

        On stopping, the app closes the queue and then ends the pool's processes
        (``abandon``): a replay or grade check under way then fails with
        ``BrokenProcessPool``.
        A pool that breaks while the queue is open is a real failure.
        """
        with self._lock:
            closed = self._closed
        return closed and isinstance(error, BrokenProcessPool)

    def _store(self, run_id: str, future: Future[Replayed]) -> None:
        with self._lock:
            self._inflight.pop(run_id, None)
        record = self._take(run_id)  # on every path: a retry reads the envelope again
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            if self._ended_by_stop(error):
                log.info(
                    "replay of run %s was ended because the service stopped; "
                    "the run stays pending and is replayed at the next start",
                    run_id,
                )
                return
            log.error("replay of run %s raised %s", run_id, type(error).__name__)
            self._count_failure(run_id, error)
            return
        try:
            text, artifacts = future.result()
            report = VerificationReport.model_validate_json(text)
        except (ValueError, TypeError) as exc:
            self._count_failure(run_id, exc)
            return
        with self._storing:
            if self._closed:
                return  # still pending: the next start replays it again
            session = self._sessions()
            try:
                finish_run(
                    session,
                    run_id,
                    report,
                    log=self._log,
                    artifacts=artifacts,
                    render=render_proof if record is None else partial(render_proof, record=record),
                )
            except Exception:
                log.exception("storing the verdict of run %s failed; it stays pending", run_id)
            finally:
                session.close()
        self._wake(run_id)
