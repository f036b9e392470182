"""Bounded file reads: the one way playproof reads a file it did not write itself.

Only regular files are read. The file is opened without blocking and checked
with ``fstat`` before a byte is read, so a FIFO (which would wait forever for
a writer), a device such as ``/dev/zero`` (which never ends) or a folder is
refused at once. The read is bounded in size and checked against a deadline.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from playproof.errors import FormatError, PlayproofError

__all__ = ["READ_CHUNK_BYTES", "READ_DEADLINE_S", "read_bounded"]

READ_DEADLINE_S = 30.0
"""The longest one bounded read may take (a slow network share, not a local disk)."""
READ_CHUNK_BYTES = 1 << 20
"""Bytes read per call; the deadline is checked between calls."""

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
