"""Folders a candidate or an agent filled: walked within a depth, removed however deep.

A candidate controls what it leaves in its home and an agent what its
workspace holds, so neither walking nor removing such a folder may depend on
Python's recursion limit (``os.walk`` and ``shutil.rmtree`` recurse once per
level: a chain of a few thousand folders raises ``RecursionError``).

- :func:`walk_tree` walks top-down and refuses, with a typed error, a folder
  nested deeper than :data:`MAX_TREE_DEPTH`, before the recursion gets there.
- :func:`walk_handles` walks by descriptor, for work on a tree its owner may be
  changing meanwhile: a folder swapped for a symlink mid-walk never leads out
  of the tree, and :func:`give_tree` hands a tree to a uid that way.
- :func:`remove_tree` removes with ``shutil.rmtree`` and, on a tree too deep
  for it, finishes with the system's ``rm -rf``, which keeps no stack. It
  never raises: a cleanup must not lose the grade it follows.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from playproof.errors import FormatError

__all__ = [
    "MAX_TREE_DEPTH",
    "REMOVE_SECONDS",
    "give_tree",
    "remove_tree",
    "walk_handles",
    "walk_tree",
]

MAX_TREE_DEPTH = 64
"""Folders nested deeper than this under a walked root are refused (a build is a dozen)."""
REMOVE_SECONDS = 120.0
"""The longest the system's ``rm`` may take on one tree too deep for ``shutil.rmtree``."""


def walk_tree(root: str | Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root)`` top-down, refusing a folder more than MAX_TREE_DEPTH below ``root``.

    The caller may prune or sort ``dirs`` in place, as with ``os.walk``.
    """
    base = os.path.normpath(root)
    depth_of_base = base.count(os.sep)
    for parent, dirs, files in os.walk(base):
        if dirs and os.path.normpath(parent).count(os.sep) - depth_of_base >= MAX_TREE_DEPTH:
            raise FormatError(f"{base} holds folders nested more than {MAX_TREE_DEPTH} deep")
        yield parent, dirs, files


_FOLDER_FLAGS = (
    os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
)
"""How a walked folder is opened: never through a symlink, never a FIFO (which would block)."""


def walk_handles(root: str | Path) -> Iterator[tuple[str, list[str], list[str], int]]:
    """Like ``os.fwalk(root)`` top-down: (path, folders, other names, the folder's handle).

    Each folder is opened relative to its parent's handle, never through a symlink
    and never as anything but a folder, so a tree its owner changes meanwhile (a
    folder swapped for a symlink, a FIFO or a file) is never left: work done
    relative to the handle (``dir_fd``) stays in the folder that was listed, and
    the path is for display and relative names only. A symlink counts among the
    other names; a name that vanished or changed kind meanwhile is skipped. A
    folder more than :data:`MAX_TREE_DEPTH` below ``root`` is refused as by
    :func:`walk_tree`; a ``root`` that cannot be opened yields nothing, as with
    ``os.walk``. The caller may prune or sort the folders in place; each handle is
    closed once its folder and everything below it were walked.
    """
    base = os.path.normpath(root)
    try:
        top = os.open(base, _FOLDER_FLAGS & ~os.O_NOFOLLOW)  # the root is the caller's to name
    except OSError:
        return  # as ``os.walk``: no folder there, nothing to walk
    yield from _walk_handles(top, base, 0, base)


def _walk_handles(
    fd: int, path: str, depth: int, base: str
) -> Iterator[tuple[str, list[str], list[str], int]]:
    try:
        dirs: list[str] = []
        files: list[str] = []
        with os.scandir(fd) as listing:
            for entry in listing:
                with contextlib.suppress(OSError):
                    (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
        if dirs and depth >= MAX_TREE_DEPTH:
            raise FormatError(f"{base} holds folders nested more than {MAX_TREE_DEPTH} deep")
        yield path, dirs, files, fd
        for name in dirs:
            try:
                inner = os.open(name, _FOLDER_FLAGS, dir_fd=fd)
            except OSError:
                continue  # removed, or no longer a folder
            yield from _walk_handles(inner, os.path.join(path, name), depth + 1, base)
    finally:
        os.close(fd)


def give_tree(root: str | Path, uid: int) -> None:
    """Make ``uid`` the owner (user and group) of ``root`` and everything under it.

    The folder's owner may still be changing it (a workspace whose agent runs on),
    so every change is made through :func:`walk_handles` and never follows a
    symlink: a folder renamed or swapped for a symlink meanwhile is either not
    entered or changed where it now lies, inside the tree.
    """
    os.chown(root, uid, uid)
    for _, dirs, files, fd in walk_handles(root):
        for name in [*dirs, *files]:
            with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)


def remove_tree(name: str | Path, *, dir_fd: int | None = None) -> None:
    """Remove the folder ``name`` (under ``dir_fd`` when given), however deep; never raises."""
    try:
        shutil.rmtree(name, ignore_errors=True, dir_fd=dir_fd)
        return
    except RecursionError:
        pass  # deeper than Python's stack: what is left goes to rm, which keeps none
    rm = shutil.which("rm") or "/bin/rm"
    path = f"/proc/self/fd/{dir_fd}/{name}" if dir_fd is not None else str(name)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            [rm, "-rf", "--one-file-system", "--", path],
            pass_fds=(dir_fd,) if dir_fd is not None else (),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=REMOVE_SECONDS,
            check=False,
        )
