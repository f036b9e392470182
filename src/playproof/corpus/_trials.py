"""Tries of patched Game Boy ROMs on the reference, in a child process the grader can kill.

An inverted branch can send a test into an illegal opcode, and PyBoy then
spins inside one ``tick`` forever (it treats 0xDB as a breakpoint that no hook
claims), where no signal reaches it. So the variant search runs such tries in
a child process and gives a try up after its time (:data:`TRY_SECONDS`): a hung try is
a rejected patch, and the next try gets a fresh child. The search's other reference
runs (each original, and Blargg's traced run for CRC sites) go through the same
child, so a search of several cases at once, one child each, runs on several cores.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import select
import subprocess
import sys
import threading
from collections import OrderedDict
from types import TracebackType
from typing import IO, Any

__all__ = ["MAX_REPLY_BYTES", "START_SECONDS", "TRY_FRAMES_PER_SECOND", "TRY_SECONDS"]
__all__ += ["REMEMBERED_REPLIES", "TrialWorker", "main", "remembered"]

START_SECONDS = 60.0
"""Wall time the child may take to start (Python, playproof's corpus package and PyBoy)."""
TRY_SECONDS = 1.0
TRY_FRAMES_PER_SECOND = 300
"""A try of ``n`` frames may take ``TRY_SECONDS + n / TRY_FRAMES_PER_SECOND`` of wall time.
PyBoy runs undrawn frames at about 2,000 a second here, so only a hung try takes that long
(a Mooneye try of 100 frames gets 1.3 s, a Blargg try of 2,000 frames 7.7 s)."""
REMEMBERED_REPLIES = 256
"""Replies on original ROMs a grading process keeps (see :func:`remembered`)."""
MAX_REPLY_BYTES = 1024 * 1024
"""A child's reply line is at most this long (a result is serial text and a status block)."""


def _answer(kind: str, rom: bytes, argument: Any) -> Any:
    from playproof.corpus._variants_blargg import Polling, blargg_run, crc_search
    from playproof.corpus._variants_mooneye import mooneye_registers

    if kind in ("blargg", "blargg-sites"):
        polling = Polling(
            budget=int(argument["budget"]),
            every=int(argument["every"]),
            markers=tuple(argument["markers"]),
            address=argument["address"],
        )
        return list(blargg_run(rom, polling) if kind == "blargg" else crc_search(rom, polling))
    return list(mooneye_registers(rom, int(argument)))


def main(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    """The child: read a JSON header line and the ROM's bytes, answer one JSON line; repeat."""
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    from playproof.corpus import _variants_blargg, _variants_mooneye  # noqa: F401  (the start-up cost, before "ready")

    sink.write(b'{"ready": true}\n')
    sink.flush()
    while line := source.readline(MAX_REPLY_BYTES):
        header = json.loads(line)
        rom = source.read(int(header["size"]))
        try:
            reply: dict[str, Any] = {"ok": _answer(header["kind"], rom, header["argument"])}
        except Exception as error:  # the patched ROM broke the reference
            reply = {"error": repr(error)[:200]}
        sink.write(json.dumps(reply).encode() + b"\n")
        sink.flush()


class TrialWorker:
    """One child process at a time; :meth:`run` returns its answer, or None when the try
    broke the reference, hung past its time (see :data:`TRY_SECONDS`) or the child died."""

    def __init__(self, seconds: float = TRY_SECONDS) -> None:
        self.seconds = seconds
        self._child: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes] | None:
        if self._child is None:
            self._child = subprocess.Popen(
                [sys.executable, "-P", "-m", "playproof.corpus._trials"],  # no working folder
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            if self._reply(START_SECONDS) != {"ready": True}:
                self._stop()
        return self._child

    def _reply(self, seconds: float) -> Any:
        """The child's next line as JSON, or None: nothing within ``seconds``, or not JSON."""
        child = self._child
        if child is None or child.stdout is None:
            return None
        try:
            poller = select.poll()  # not select: it refuses descriptors numbered 1024 and up
            poller.register(child.stdout, select.POLLIN)
            ready = poller.poll(max(0, int(seconds * 1000) + 1))
            line = child.stdout.readline(MAX_REPLY_BYTES) if ready else b""
            return json.loads(line) if line.endswith(b"\n") else None
        except (OSError, ValueError):
            return None

    def run(self, kind: str, rom: bytes, argument: object, frames: int) -> Any:
        """Run one try of at most ``frames`` frames: ``("blargg", rom, polling)`` (the result
        and the frames it took), ``("blargg-sites", rom, polling)`` (the result and the CRC
        sites a trace finds) or ``("mooneye", rom, frames)`` (registers and frames)."""
        child = self._start()
        if child is None or child.stdin is None:
            return None
        if dataclasses.is_dataclass(argument) and not isinstance(argument, type):
            argument = dataclasses.asdict(argument)
        header = json.dumps({"kind": kind, "size": len(rom), "argument": argument})
        try:
            child.stdin.write(header.encode() + b"\n" + rom)
            child.stdin.flush()
        except OSError:
            reply = None
        else:
            reply = self._reply(self.seconds + frames / TRY_FRAMES_PER_SECOND)
        if not isinstance(reply, dict) or ("ok" not in reply and "error" not in reply):
            self._stop()  # hung, died or spoke nonsense: the next try gets a fresh child
            return None
        return reply.get("ok")

    def _stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.wait(5)
            for pipe in (self._child.stdin, self._child.stdout):
                if pipe is not None:
                    pipe.close()
        self._child = None

    def close(self) -> None:
        """Stop the child, if one runs (a later :meth:`run` starts a fresh one)."""
        self._stop()

    def __enter__(self) -> TrialWorker:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop()


_REPLIES: OrderedDict[tuple[str, str, str, int], Any] = OrderedDict()
_REPLIES_LOCK = threading.Lock()


def remembered(trials: TrialWorker, kind: str, rom: bytes, argument: object, frames: int) -> Any:
    """:meth:`TrialWorker.run`, remembered per process for the same arguments (the reference
    is deterministic): the runs on original ROMs every grading of a corpus repeats. A None
    reply (the try broke or hung) is not kept."""
    if dataclasses.is_dataclass(argument) and not isinstance(argument, type):
        argument = dataclasses.asdict(argument)
    key = (kind, hashlib.sha256(rom).hexdigest(), json.dumps(argument, sort_keys=True), frames)
    with _REPLIES_LOCK:
        if key in _REPLIES:
            _REPLIES.move_to_end(key)
            return _REPLIES[key]
    reply = trials.run(kind, rom, argument, frames)
    if reply is not None:
        with _REPLIES_LOCK:
            _REPLIES[key] = reply
            while len(_REPLIES) > REMEMBERED_REPLIES:
                _REPLIES.popitem(last=False)
    return reply


if __name__ == "__main__":
    main()
