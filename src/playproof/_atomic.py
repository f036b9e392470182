"""Atomic writes: a reader sees the old file or the whole new one, never a torn one.

The one way playproof replaces a file a reader may be reading (a record, a
report, a reward state). The bytes go to a temporary file in the same folder,
reach the disk, and are renamed over the final name; then the folder is
fsynced, so the rename itself survives a power loss. The temporary name is
predictable, so whatever already has it (a link planted in a folder someone
else can write, a file of a dead writer) is removed and the file is created
afresh with ``O_EXCL | O_NOFOLLOW``: a write never follows a link.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

__all__ = ["sync_folder", "temporary_for", "write_atomic"]


def temporary_for(path: Path) -> Path:
    """The temporary file this process writes ``path`` through (``.NAME.PID.tmp``)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` (file mode ``mode``) atomically; OSError if it cannot be."""
    temporary = temporary_for(path)
    try:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    sync_folder(path.parent)


_FOLDER_SYNC_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})
"""What fsync of a folder raises on filesystems that cannot sync folders."""


def sync_folder(folder: Path) -> None:
    """Put the folder's entries (the rename just made) on disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some filesystems (some network and FUSE ones) do not support fsync
        # on a folder and say so with EINVAL or ENOTSUP; there is nothing more
        # to do there. Any other error (EIO, ...) is a real failure and raised.
        if exc.errno not in _FOLDER_SYNC_UNSUPPORTED:
            raise
    finally:
        os.close(fd)
