"""Folders a candidate or an agent filled: walked within a depth, removed however deep.

A candidate controls what it leaves in its home and an agent what its
workspace holds, so neither walking nor removing such a folder may depend on
Python's recursion limit (``os.walk`` and ``shutil.rmtree`` recurse once per
level: a chain of a few thousand folders raises ``RecursionError``).

- :func:`walk_tree` walks top-down and refuses, with a typed error, a folder
  nested deeper than :data:`MAX_TREE_DEPTH`, before the recursion gets there.
- :func:`give_tree` hands a folder and everything in it to a uid, by
  descriptor: a folder swapped for a symlink mid-walk never leads a chown
  out of the tree.
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

__all__ = ["MAX_TREE_DEPTH", "REMOVE_SECONDS", "give_tree", "remove_tree", "walk_tree"]

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


def give_tree(root: str | Path, uid: int) -> None:
    """Make ``uid`` the owner (user and group) of ``root`` and everything under it.

    The folder's owner may still be changing it (a workspace whose agent runs on),
    so every change is made relative to an open handle on its folder and never
    follows a symlink: a folder renamed or swapped for a symlink meanwhile is
    either not entered or changed where it now lies, inside the tree. A folder
    more than :data:`MAX_TREE_DEPTH` below ``root`` is refused as by :func:`walk_tree`.
    """
    os.chown(root, uid, uid)
    base = os.path.normpath(root)
    depth_of_base = base.count(os.sep)
    for parent, dirs, files, fd in os.fwalk(base, follow_symlinks=False):
        if dirs and os.path.normpath(parent).count(os.sep) - depth_of_base >= MAX_TREE_DEPTH:
            raise FormatError(f"{base} holds folders nested more than {MAX_TREE_DEPTH} deep")
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
