"""WorkerGame: a Game whose real game runs in a spawned child Python process."""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from playproof._environment import environment_problem
from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.game import GameDescriptor, ReplayResult, Snapshot
from playproof.core.observation import Observation
from playproof.errors import (
    FormatError,
    NotSupportedError,
    WorkerCrashed,
    WorkerError,
    WorkerProtocolError,
    WorkerStartError,
    WorkerTimeout,
)
from playproof.workers._process import QUIT_GRACE, ChildProcess
from playproof.workers._wire import (
    BLOB_RESPONSE,
    EVIDENCE_RESPONSE,
    INIT_SEQUENCE,
    MAX_ADVANCE_BATCH,
    NONE_RESPONSE,
    OBSERVATION_RESPONSE,
    OVER_RESPONSE,
    READY,
    REPLAY_RESPONSE,
    SNAPSHOT_RESPONSE,
    SNAPSHOTS_RESPONSE,
    Advance,
    AdvanceMany,
    Failure,
    Init,
    Query,
    Ready,
    Replay,
    Reset,
    Restore,
    Step,
    decode_blob,
    encode_blob,
    raise_error,
)

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_REPLAY_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "WorkerGame",
]

DEFAULT_START_TIMEOUT = 60.0
"""Seconds a child gets to import its factory, build the game and say it is ready."""
DEFAULT_CALL_TIMEOUT = 30.0
"""Seconds a child gets to answer one request (step, observe, checkpoint ...)."""
DEFAULT_REPLAY_TIMEOUT = 3600.0
"""Seconds a child gets to replay one whole input log."""

_CHILD_MODULE = "playproof.workers.child"


def _finalize(process: ChildProcess) -> None:
    process.kill()


def _check_env(env: Mapping[str, str]) -> None:
    """Refuse an environment entry no process can be given (as a FormatError, not ValueError)."""
    problem = environment_problem(env)
    if problem is not None:
        raise FormatError(f"bad worker environment: {problem}")


def _encode(model: type[BaseModel], **fields: Any) -> bytes:
    """A request frame body; arguments the wire cannot carry are a FormatError here, not later."""
    try:
        return model(**fields).model_dump_json(by_alias=True).encode()
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise FormatError(
            f"bad {model.__name__.lower()} argument {where}: {error['msg']}"
        ) from None
    except PydanticSerializationError as exc:
        raise FormatError(f"{model.__name__.lower()} arguments are not JSON-able: {exc}") from None


class WorkerGame:
    """A Game that runs ``factory(**options)`` in a spawned child process.

    ``factory`` is ``"module:callable"``; the child imports it and calls it with
    the JSON-able ``options`` to get its game. ``env`` is added to (and
    overrides) the parent's environment for the child; a name or value no
    process can carry (a NUL byte, ``=`` or nothing in a name, text that cannot
    be encoded) is a FormatError before anything starts. Optional capabilities
    are forwarded: ``checkpoint``/``restore`` when the child's game has them
    (else NotSupportedError), ``advance`` (one round trip per live decision) and
    ``replay`` (the whole log runs inside the child; one message each way).

    Game errors raised in the child (CheckpointError, ObservationError, ...)
    are raised here as the same class and the worker stays usable; a crash,
    timeout or garbage answer raises the matching WorkerError and the child's
    process group is killed.
    """

    _child_module = _CHILD_MODULE

    def __init__(
        self,
        factory: str,
        options: Mapping[str, Any] | None = None,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        replay_timeout: float = DEFAULT_REPLAY_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if sys.platform == "win32":
            raise NotSupportedError("game workers need a POSIX system (poll on pipes)")
        if env is not None:
            _check_env(env)  # before anything starts: subprocess would raise a bare ValueError
        self._call_timeout = call_timeout
        self._replay_timeout = replay_timeout
        self._lock = threading.Lock()
        self._closed = False
        self._failure: str | None = None
        self._sequence = INIT_SEQUENCE
        self._factory = factory
        init = _encode(Init, factory=factory, options=dict(options or {}))
        self._process = ChildProcess(self._child_module, env)
        self._finalizer = weakref.finalize(self, _finalize, self._process)
        try:
            ready = self._handshake(factory, init, start_timeout)
        except BaseException:
            self._finalizer()
            raise
        self._descriptor = ready.descriptor
        self._can_checkpoint = ready.capabilities.checkpoint

    def _handshake(self, factory: str, init: bytes, timeout: float) -> Ready:
        process = self._process
        deadline = time.monotonic() + timeout
        try:
            process.send(init, INIT_SEQUENCE, deadline, "init")
            answered, body = process.receive(deadline, "the readiness handshake")
        except WorkerTimeout:
            raise WorkerStartError(
                f"worker for {factory} was not ready within {timeout} s{process.stderr_suffix()}"
            ) from None
        except WorkerCrashed as exc:
            raise WorkerStartError(
                f"worker for {factory} died before it was ready: {exc}"
            ) from None
        self._check_sequence(answered, INIT_SEQUENCE, "the readiness handshake")
        try:
            message = READY.validate_json(body, strict=True)
        except ValidationError as exc:
            raise WorkerProtocolError(
                f"worker for {factory} sent a malformed readiness message: {exc.errors()[0]['msg']}"
            ) from None
        if isinstance(message, Failure):
            error = message.error
            raise WorkerStartError(
                f"worker could not build {factory}: {error.type}: {error.message}"
            )
        return message

    # -- the request/response cycle -------------------------------------------------

    def _call(self, request: bytes, adapter: TypeAdapter[Any], what: str, timeout: float) -> Any:
        with self._lock:
            if self._closed:
                raise WorkerError(f"worker for {self._descriptor.id!r} is closed")
            if self._failure is not None:
                raise WorkerCrashed(f"worker pid {self.pid} is gone: {self._failure}")
            process = self._process
            deadline = time.monotonic() + timeout
            self._sequence += 1
            sequence = self._sequence
            try:
                process.send(request, sequence, deadline, what)
                answered, body = process.receive(deadline, what)
                self._check_sequence(answered, sequence, what)
                try:
                    response = adapter.validate_json(body, strict=True)
                except ValidationError as exc:
                    raise WorkerProtocolError(
                        f"worker pid {self.pid} sent a malformed answer to {what}: "
                        f"{exc.errors()[0]['msg']}"
                    ) from None
            except WorkerTimeout:
                self._fail(f"no answer to {what} within {timeout} s")
                raise WorkerTimeout(
                    f"worker pid {self.pid} did not answer {what} within {timeout} s; "
                    f"killed it{process.stderr_suffix()}"
                ) from None
            except WorkerError as exc:
                self._fail(str(exc))
                raise
        if isinstance(response, Failure):
            raise_error(response.error)
        return response.result

    def _check_sequence(self, answered: int, expected: int, what: str) -> None:
        """Refuse an answer that is not numbered like the request it should answer."""
        if answered == expected:
            return
        kind = "an earlier (stale or replayed)" if answered < expected else "a later (skipped)"
        raise WorkerProtocolError(
            f"worker pid {self.pid} for {self._factory} answered {what} (request {expected}) "
            f"with {kind} reply numbered {answered}; the worker is not trusted, killed it"
        )

    def _fail(self, reason: str) -> None:
        self._failure = reason
        self._finalizer()

    # -- Game ------------------------------------------------------------------------

    @property
    def descriptor(self) -> GameDescriptor:
        """Identity, vocabulary, build and platform of the game in the child."""
        return self._descriptor

    @property
    def pid(self) -> int:
        """Process id of the child's outermost process (its process group id).

        Where the child is contained in a PID namespace this is the launcher
        (util-linux ``unshare``); killing it ends the game and all it started.
        """
        return self._process.pid

    @property
    def supports_checkpoint(self) -> bool:
        """True when the child's game can checkpoint and restore."""
        return self._can_checkpoint

    def reset(self, seed: int) -> None:
        """Power on / reset the child's game into the state ``seed`` fixes."""
        request = _encode(Reset, seed=seed)
        self._call(request, NONE_RESPONSE, "reset", self._call_timeout)

    def step(self, word: str) -> None:
        """Apply one input in the child; unknown words are no-ops."""
        request = _encode(Step, word=word)
        self._call(request, NONE_RESPONSE, "step", self._call_timeout)

    def observe(self) -> Observation:
        """The player-visible observation of the child's current state."""
        result: Observation = self._call(
            _OBSERVE, OBSERVATION_RESPONSE, "observe", self._call_timeout
        )
        return result

    def evidence(self) -> Evidence:
        """The privileged evidence snapshot of the child's current state."""
        result: Evidence = self._call(_EVIDENCE, EVIDENCE_RESPONSE, "evidence", self._call_timeout)
        return result

    def over(self) -> bool | None:
        """True when the child's game is over; None when it has no such notion."""
        result: bool | None = self._call(_OVER, OVER_RESPONSE, "over", self._call_timeout)
        return result

    def advance(self, word: str, *, observe: bool) -> Snapshot:
        """Step once and read evidence, game over and (if asked) the observation: one round trip."""
        request = _encode(Advance, word=word, observe=observe)
        result: Snapshot = self._call(request, SNAPSHOT_RESPONSE, "advance", self._call_timeout)
        return result

    def advance_many(self, words: Sequence[str], *, observe: bool) -> tuple[Snapshot, ...]:
        """:meth:`advance` once per word, in order: one round trip per batch of words.

        A batch gets as long as its words would get one by one (``call_timeout``
        each), capped at ``replay_timeout``.
        """
        snapshots: list[Snapshot] = []
        for start in range(0, len(words), MAX_ADVANCE_BATCH):
            chunk = tuple(words[start : start + MAX_ADVANCE_BATCH])
            request = _encode(AdvanceMany, words=chunk, observe=observe)
            timeout = min(self._call_timeout * max(len(chunk), 1), self._replay_timeout)
            answer: tuple[Snapshot, ...] = self._call(
                request, SNAPSHOTS_RESPONSE, "advance-many", timeout
            )
            if len(answer) != len(chunk):
                self._fail(f"answered {len(answer)} snapshots for {len(chunk)} words")
                raise WorkerProtocolError(
                    f"worker pid {self.pid} answered {len(answer)} snapshots for {len(chunk)} "
                    "words; killed it"
                )
            snapshots.extend(answer)
        return tuple(snapshots)

    def checkpoint(self) -> bytes:
        """Serialize the child's game state (NotSupportedError when its game cannot)."""
        self._require_checkpoint()
        text: str = self._call(_CHECKPOINT, BLOB_RESPONSE, "checkpoint", self._call_timeout)
        return decode_blob(text)

    def restore(self, blob: bytes) -> None:
        """Restore a checkpoint; a corrupt blob raises CheckpointError and the worker lives on."""
        self._require_checkpoint()
        request = _encode(Restore, blob=encode_blob(blob))
        self._call(request, NONE_RESPONSE, "restore", self._call_timeout)

    def _require_checkpoint(self) -> None:
        if not self._can_checkpoint:
            raise NotSupportedError(
                f"game {self._descriptor.id!r} in this worker has no checkpoint()/restore()"
            )

    def replay(
        self, seed: int, inputs: Sequence[str], contract: Contract, *, trace: bool = False
    ) -> ReplayResult:
        """Replay a whole input log inside the child: one message each way per log."""
        body = _encode(Replay, seed=seed, inputs=tuple(inputs), contract=contract, trace=trace)
        result: ReplayResult = self._call(body, REPLAY_RESPONSE, "replay", self._replay_timeout)
        return result

    def close(self) -> None:
        """Ask the child to quit, then kill its process group. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            process = self._process
            if self._failure is None and process.alive:
                deadline = time.monotonic() + QUIT_GRACE
                self._sequence += 1
                try:
                    process.send(_QUIT, self._sequence, deadline, "quit")
                    process.receive(deadline, "quit")
                except WorkerError:
                    pass  # the kill below is the answer either way
                process.wait_exit(max(0.0, deadline - time.monotonic()))
            self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "failed" if self._failure else "running"
        return f"<WorkerGame {self._descriptor.id!r} pid={self.pid} {state}>"


_OBSERVE = Query(op="observe").model_dump_json().encode()
_EVIDENCE = Query(op="evidence").model_dump_json().encode()
_OVER = Query(op="over").model_dump_json().encode()
_CHECKPOINT = Query(op="checkpoint").model_dump_json().encode()
_QUIT = Query(op="quit").model_dump_json().encode()
