"""Bounded reads: the one way playproof reads a file it did not write itself,
and the one way it undoes an HTTP body's content coding.

Only regular files are read. The file is opened without blocking and checked
with ``fstat`` before a byte is read, so a FIFO (which would wait forever for
a writer), a device such as ``/dev/zero`` (which never ends) or a folder is
refused at once. The read is bounded in size and checked against a deadline.
"""

from __future__ import annotations

import os
import stat
import time
import zlib
from pathlib import Path

from playproof.errors import FormatError, PlayproofError

__all__ = [
    "ACCEPTED_ENCODINGS",
    "MAX_CONTENT_CODINGS",
    "READ_CHUNK_BYTES",
    "READ_DEADLINE_S",
    "decode_content",
    "read_bounded",
]

READ_DEADLINE_S = 30.0
"""The longest one bounded read may take (a slow network share, not a local disk)."""
READ_CHUNK_BYTES = 1 << 20
"""Bytes read per call; the deadline is checked between calls."""

ACCEPTED_ENCODINGS = "gzip, deflate"
"""The content codings playproof's HTTP clients ask for (each decoded within the body cap)."""
MAX_CONTENT_CODINGS = 2
"""Most content codings one reply may stack (``gzip, gzip``); more is refused."""
_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS}

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_bounded(
    path: Path,
    limit: int,
    what: str,
    error: type[PlayproofError] = FormatError,
    *,
    deadline_s: float = READ_DEADLINE_S,
) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``, read within ``deadline_s`` seconds.

    A missing, unreadable, non-regular, larger or too slow file raises ``error``, and
    so does a path no file can have (one holding a NUL byte).
    One byte past the limit is read so an oversized file is refused, never cut.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    except ValueError as exc:  # a NUL byte in the path: no file can have that name
        raise error(f"cannot read {what} {str(path)!r}: {exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{what} {path} is {_kind(mode)}, not a regular file; give a file")
        deadline = time.monotonic() + deadline_s
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            if time.monotonic() > deadline:
                raise error(f"reading {what} {path} took over {deadline_s:g} s; copy it locally")
            chunk = os.read(fd, min(READ_CHUNK_BYTES, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    if size > limit:
        raise error(f"{what} {path} is over the {limit}-byte limit")
    return b"".join(chunks)


def decode_content(
    body: bytes,
    coding: str | None,
    cap: int,
    error: type[PlayproofError] = FormatError,
    what: str = "the reply",
) -> bytes:
    """``body`` with its ``Content-Encoding`` undone, each layer at most ``cap`` bytes.

    Only ``gzip`` and ``deflate`` (zlib-wrapped or raw) are decoded, at most
    :data:`MAX_CONTENT_CODINGS` of them; anything else raises ``error``. A body is
    read raw and decoded here, never by the HTTP library, which inflates a whole
    chunk however far it expands (a compression bomb).
    """
    codings = [part.strip().lower() for part in (coding or "").split(",")]
    codings = [part for part in codings if part and part != "identity"]
    if len(codings) > MAX_CONTENT_CODINGS:
        raise error(f"{what} stacks {len(codings)} content codings")
    for name in reversed(codings):
        if name in _ZLIB_WBITS:
            body = _inflate(body, _ZLIB_WBITS[name], name, cap, error, what)
        elif name == "deflate":
            # zlib-wrapped, as the standard says, or raw deflate, as some servers send.
            wrapped = len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0
            wbits = zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS
            body = _inflate(body, wbits, name, cap, error, what)
        else:
            raise error(f"{what}'s content coding {name[:40]!r} is not supported")
    return body


def _inflate(
    data: bytes, wbits: int, name: str, cap: int, error: type[PlayproofError], what: str
) -> bytes:
    """One zlib-family layer, refused as soon as it would produce more than ``cap`` bytes."""
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data, cap + 1)
    except zlib.error as exc:
        raise error(f"{what}'s {name} body is corrupt: {exc}") from None
    if len(out) > cap:
        raise error(f"{what} is over the {cap}-byte cap once {name}-decoded")
    if not inflater.eof or inflater.unused_data:
        raise error(f"{what}'s {name} body is truncated or followed by other bytes")
    return out
