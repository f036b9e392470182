"""The runner's side of the candidate line protocol: requests out, bounded replies in.

Every read has a deadline and a size bound; a breach raises
:class:`ProtocolBreach` (what the candidate did wrong) or
:class:`CandidateTimeout`, and the runner turns either into a failed case.
"""

from __future__ import annotations

import math
import os
import re
import select
import time
from typing import IO, Protocol

from playproof.corpus._wire import (
    MAX_DATA_BYTES,
    MAX_LINE_BYTES,
    PROTOCOL_NAME,
    PROTOCOL_VERSION,
)

__all__ = ["CandidateChannel", "CandidateGone", "CandidateTimeout", "ProtocolBreach"]

_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")
_DATA_LENGTH = re.compile(r"[0-9]{1,8}")
"""A ``DATA`` length: decimal digits only (no sign, space or ``_`` as ``int`` would take)."""
"""Control characters a candidate's ERR text may not carry into a reason (shown escaped)."""

READ_CHUNK = 65536
EXIT_CHECK_SECONDS = 0.05
"""While a reply or a write waits, how often the candidate's own exit is checked: a
child it forked may hold its pipes open after it exited, so no end of file tells."""


def _milliseconds(seconds: float) -> int:
    """A poll timeout: ``seconds`` rounded up, so a wait never ends before its deadline."""
    return max(0, math.ceil(seconds * 1000))


class ProtocolBreach(Exception):
    """The candidate answered with something the protocol does not allow."""


class CandidateTimeout(Exception):
    """The candidate did not answer before the case deadline."""


class CandidateGone(Exception):
    """The candidate closed its output or its input, or exited (or crashed)."""


class _Exited(CandidateGone):
    """The candidate's own process exited while a wait was on (its pipes may still be open)."""


class Exits(Protocol):
    """A candidate's process as the channel watches it: ``poll`` is its exit status or None."""

    def poll(self) -> int | None: ...


class CandidateChannel:
    """Requests and bounded replies over a candidate's stdin/stdout, against one deadline."""

    def __init__(
        self,
        stdin: IO[bytes],
        stdout: IO[bytes],
        deadline: float,
        process: Exits | None = None,
    ) -> None:
        """``process``: when given, its exit fails a wait at once, whoever holds the pipes."""
        self._stdin = stdin
        self._process = process
        self._in = stdin.fileno()
        self._fd = stdout.fileno()
        os.set_blocking(self._fd, False)
        # A candidate that never reads must not block the runner past the deadline.
        os.set_blocking(self._in, False)
        # poll, not select: select refuses a descriptor numbered 1024 or above, and a
        # grader running many slots (or serving for long) holds that many.
        self._readable = select.poll()
        self._readable.register(self._fd, select.POLLIN)
        self._writable = select.poll()
        self._writable.register(self._in, select.POLLOUT)
        self._buffer = bytearray()
        self.deadline = deadline
        self.round_trips = 0

    def _wait(self, ready: select.poll) -> None:
        """Until ``ready`` reports its descriptor; raise at the deadline or the candidate's exit.

        With a process to watch, the wait is cut into slices of EXIT_CHECK_SECONDS
        and the process is polled between them. Once it has exited, ``ready`` is
        asked once more: what it wrote (or its end of file) before exiting comes
        first, so only a pipe some other process still holds open fails here.
        """
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise CandidateTimeout("the case deadline passed")
            if self._process is None:
                if ready.poll(_milliseconds(remaining)):
                    return
                raise CandidateTimeout("the case deadline passed")
            if ready.poll(_milliseconds(min(remaining, EXIT_CHECK_SECONDS))):
                return
            if self._process.poll() is not None:
                if ready.poll(0):
                    return
                raise _Exited("the candidate exited")

    def _fill(self) -> None:
        self._wait(self._readable)
        try:
            chunk = os.read(self._fd, READ_CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            raise CandidateGone("the candidate closed its output")
        self._buffer.extend(chunk)

    def _line(self) -> str:
        while True:
            end = self._buffer.find(b"\n", 0, MAX_LINE_BYTES)
            if end >= 0:
                raw = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                try:
                    return raw.decode("ascii")
                except UnicodeDecodeError:
                    raise ProtocolBreach("a reply line is not ASCII") from None
            if len(self._buffer) >= MAX_LINE_BYTES:
                raise ProtocolBreach(f"a reply line is longer than {MAX_LINE_BYTES} bytes")
            self._fill()

    def _exact(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._fill()
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def _send(self, data: memoryview) -> None:
        while data:
            self._wait(self._writable)
            try:
                sent = os.write(self._in, data)
            except BlockingIOError:
                continue
            except OSError as exc:
                raise CandidateGone(f"the candidate stopped reading ({exc})") from None
            data = data[sent:]

    def request(self, line: str, payload: bytes = b"") -> str:
        """Send one request; return the text after ``OK`` (raise on ``ERR`` or garbage)."""
        reply = self._ask(line, payload)
        if isinstance(reply, bytes):
            raise ProtocolBreach(f"{line.split(maxsplit=1)[0]} expects OK, got DATA")
        return reply

    def data(self, line: str, limit: int = MAX_DATA_BYTES) -> bytes:
        """Send one request whose reply must be ``DATA`` of at most ``limit`` bytes."""
        reply = self._ask(line, b"", limit)
        if not isinstance(reply, bytes):
            raise ProtocolBreach(f"{line.split(maxsplit=1)[0]} expects DATA, got OK")
        return reply

    def _ask(self, line: str, payload: bytes, limit: int = MAX_DATA_BYTES) -> str | bytes:
        self.round_trips += 1
        asked = line.split(maxsplit=1)[0]
        try:
            self._send(memoryview(line.encode("ascii") + b"\n" + payload))
        except _Exited as exc:
            raise CandidateGone(f"{exc} before reading all of {asked}") from None
        try:
            head = self._line()
        except CandidateGone as exc:
            raise CandidateGone(f"{exc} before replying to {asked}") from None
        verb, _, rest = head.partition(" ")
        if verb == "OK":
            return rest
        if verb == "ERR":
            said = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", rest[:200])
            raise ProtocolBreach(f"candidate error on {asked}: {said}")
        if verb == "DATA":
            if not _DATA_LENGTH.fullmatch(rest):
                raise ProtocolBreach(f"bad DATA length {rest[:20]!r}")
            size = int(rest)
            if not 0 <= size <= limit:
                raise ProtocolBreach(f"DATA of {size} bytes is over the {limit}-byte bound")
            try:
                return self._exact(size)
            except CandidateGone as exc:
                raise CandidateGone(f"{exc} partway through its reply to {asked}") from None
        raise ProtocolBreach(f"unknown reply {head[:60]!r}")

    def hello(self) -> str:
        """Check the candidate speaks this protocol version; its self-description."""
        text = self.request(f"HELLO {PROTOCOL_VERSION}")
        expected = f"{PROTOCOL_NAME}/{PROTOCOL_VERSION}"
        if text.split(" ", 1)[0] != expected:
            raise ProtocolBreach(f"HELLO answered {text[:60]!r}, expected {expected!r} first")
        return text[len(expected) :].strip()[:100]
