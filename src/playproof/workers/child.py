"""The worker child process: ``python -m playproof.workers.child [--parent-pid PID]``.

It reads an ``init`` frame naming a ``module:callable`` factory and its options,
builds the game, answers with a readiness message (descriptor + capabilities),
then serves one response per request, numbered like the request it answers,
until ``quit`` or until its stdin reaches EOF (the parent is gone). The
protocol owns the original stdin/stdout; the game's own prints (Python or
native) are routed to stderr so they can never corrupt a frame.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any, BinaryIO

from pydantic import TypeAdapter, ValidationError

from playproof.core.evidence import Evidence
from playproof.core.game import Advancing, Checkpointing, Game, ReplayResult, Snapshot
from playproof.core.observation import Observation
from playproof.core.replay import replay
from playproof.errors import NotSupportedError, WorkerError
from playproof.workers._wire import (
    HEADER,
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    READY,
    REQUEST,
    Advance,
    AdvanceMany,
    Capabilities,
    Init,
    Ready,
    Replay,
    Reset,
    Restore,
    Step,
    as_failure,
    decode_blob,
    encode_blob,
)

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
_EXIT_BROKEN = 2
"""Exit status when the parent broke the framing."""
_STREAM_BUFFER = 1 << 16

_EVIDENCE: TypeAdapter[Evidence] = TypeAdapter(Evidence)
_OBSERVATION: TypeAdapter[Observation] = TypeAdapter(Observation)
_SNAPSHOT: TypeAdapter[Snapshot] = TypeAdapter(Snapshot)
_SNAPSHOTS: TypeAdapter[tuple[Snapshot, ...]] = TypeAdapter(tuple[Snapshot, ...])
_REPLAY: TypeAdapter[ReplayResult] = TypeAdapter(ReplayResult)
_OK_NONE = b'{"status":"ok","result":null}'


def _ok(result: bytes) -> bytes:
    return b'{"status":"ok","result":' + result + b"}"


def _die_with_parent(parent_pid: int | None) -> None:
    """Ask Linux to kill us when the parent dies (best effort; stdin EOF is the fallback)."""
    if parent_pid is None or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    # The parent may have died before prctl took effect.
    if os.getppid() != parent_pid:
        os._exit(1)


class _Channel:
    """Frames over the protocol streams (blocking: the parent owns the deadlines)."""

    __slots__ = ("_reader", "_writer", "broken")

    def __init__(self, reader: BinaryIO, writer: BinaryIO) -> None:
        self._reader = reader
        self._writer = writer
        self.broken = False
        """True once the parent broke the framing (oversized or truncated frame)."""

    @classmethod
    def take_std_streams(cls) -> _Channel:
        """Move the protocol to private fds; point fd 0 at /dev/null and fd 1 at stderr."""
        in_fd, out_fd = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        reader = open(in_fd, "rb", buffering=_STREAM_BUFFER)  # noqa: SIM115 - lives as long as the process
        writer = open(out_fd, "wb", buffering=_STREAM_BUFFER)  # noqa: SIM115
        return cls(reader, writer)

    def receive(self) -> tuple[int, bytes] | None:
        """The next frame's sequence number and body, or None at EOF (or broken framing)."""
        header = self._reader.read(HEADER.size)
        if len(header) < HEADER.size:
            self.broken = bool(header)
            return None
        size, sequence = HEADER.unpack(header)
        if size > MAX_MESSAGE_BYTES:
            print(f"playproof worker: {size}-byte request is over the cap", file=sys.stderr)
            self.broken = True
            return None
        body = self._reader.read(size)
        if len(body) != size:
            self.broken = True
            return None
        return sequence, body

    def send(self, sequence: int, body: bytes) -> None:
        """Write the answer to request ``sequence``.

        An oversized answer is replaced by an error the parent can read.
        """
        if len(body) > MAX_MESSAGE_BYTES:
            failure = WorkerError(
                f"the answer is {len(body)} bytes, over the {MAX_MESSAGE_BYTES}-byte message cap"
            )
            body = as_failure(failure).model_dump_json().encode()
        self._writer.write(HEADER.pack(len(body), sequence))
        self._writer.write(body)
        self._writer.flush()


def _load_factory(spec: str) -> Callable[..., Any]:
    module_name, _, attribute = spec.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{spec} is not callable")
    return target  # type: ignore[no-any-return]


def _start(channel: _Channel) -> Game | None:
    """Run the handshake; return the game, or None when startup failed (already reported)."""
    frame = channel.receive()
    if frame is None:
        return None
    sequence, body = frame
    try:
        init = REQUEST.validate_json(body)
        if not isinstance(init, Init):
            raise WorkerError(f"expected an init message, got {init.op!r}")
        if init.protocol != PROTOCOL_VERSION:
            raise WorkerError(
                f"parent speaks protocol {init.protocol}, this child speaks {PROTOCOL_VERSION}"
            )
        game = _load_factory(init.factory)(**init.options)
        if not isinstance(game, Game):
            raise WorkerError(f"factory {init.factory} returned {type(game).__name__}, not a Game")
        ready = Ready(
            protocol=PROTOCOL_VERSION,
            descriptor=game.descriptor,
            capabilities=Capabilities(checkpoint=isinstance(game, Checkpointing)),
        )
    except Exception as exc:
        traceback.print_exc()
        channel.send(sequence, READY.dump_json(as_failure(exc)))
        return None
    channel.send(sequence, READY.dump_json(ready))
    return game


def _handlers(game: Game) -> dict[str, Callable[[Any], bytes]]:
    """One encoder per request kind; each returns the response body."""
    # Capabilities are probed once: a failing isinstance() against a runtime
    # protocol costs tens of microseconds, too much for every live decision.
    native_advance = game.advance if isinstance(game, Advancing) else None
    saver = game if isinstance(game, Checkpointing) else None
    game_step, game_evidence, game_over, game_observe = (
        game.step,
        game.evidence,
        game.over,
        game.observe,
    )

    def step(request: Step) -> bytes:
        game_step(request.word)
        return _OK_NONE

    def one(word: str, observe: bool) -> Snapshot:
        if native_advance is not None:
            return native_advance(word, observe=observe)
        game_step(word)
        observation = game_observe() if observe else None
        return Snapshot(game_evidence(), game_over(), observation)

    def do_advance(request: Advance) -> bytes:
        return _ok(_SNAPSHOT.dump_json(one(request.word, request.observe)))

    def do_advance_many(request: AdvanceMany) -> bytes:
        return _ok(_SNAPSHOTS.dump_json(tuple(one(w, request.observe) for w in request.words)))

    def reset(request: Reset) -> bytes:
        game.reset(request.seed)
        return _OK_NONE

    def checkpoint(_request: object) -> bytes:
        if saver is None:
            raise NotSupportedError(f"game {game.descriptor.id!r} cannot checkpoint")
        return _ok(json.dumps(encode_blob(saver.checkpoint())).encode())

    def restore(request: Restore) -> bytes:
        if saver is None:
            raise NotSupportedError(f"game {game.descriptor.id!r} cannot restore checkpoints")
        saver.restore(decode_blob(request.blob))
        return _OK_NONE

    def do_replay(request: Replay) -> bytes:
        result = replay(game, request.seed, request.inputs, request.contract, trace=request.trace)
        return _ok(_REPLAY.dump_json(result))

    return {
        "advance": do_advance,
        "advance-many": do_advance_many,
        "step": step,
        "evidence": lambda _r: _ok(_EVIDENCE.dump_json(game_evidence())),
        "observe": lambda _r: _ok(_OBSERVATION.dump_json(game_observe())),
        "over": lambda _r: _ok(json.dumps(game_over()).encode()),
        "reset": reset,
        "checkpoint": checkpoint,
        "restore": restore,
        "replay": do_replay,
    }


def _serve(channel: _Channel, game: Game) -> None:
    handlers = _handlers(game)
    receive, send, validate = channel.receive, channel.send, REQUEST.validate_json
    while (frame := receive()) is not None:
        sequence, body = frame
        try:
            request = validate(body)
        except ValidationError as exc:
            error = WorkerError(f"malformed request: {exc.errors()[0]['msg']}")
            send(sequence, as_failure(error).model_dump_json().encode())
            continue
        if request.op == "quit":
            break
        handler = handlers.get(request.op)
        try:
            if handler is None:
                raise WorkerError(f"unexpected {request.op!r} request after the handshake")
            response = handler(request)
        except Exception as exc:
            traceback.print_exc()
            response = as_failure(exc).model_dump_json().encode()
        send(sequence, response)
    try:
        game.close()
    finally:
        if frame is not None:
            send(frame[0], _OK_NONE)


def main(argv: list[str] | None = None) -> int:
    """Serve one game; exit 0 after quit or EOF, 1 if startup failed, 2 on broken framing."""
    args = sys.argv[1:] if argv is None else argv
    parent_pid = int(args[1]) if len(args) == 2 and args[0] == "--parent-pid" else None
    _die_with_parent(parent_pid)
    channel = _Channel.take_std_streams()
    game = _start(channel)
    if game is None:
        return 1
    try:
        _serve(channel, game)
    except BrokenPipeError:
        return 0  # the parent went away mid-answer
    return _EXIT_BROKEN if channel.broken else 0


if __name__ == "__main__":
    sys.exit(main())
