"""Watching a jailed build: its disk use, its wall time, and stopping it past either.

A build speaks no protocol, so the runner's per-case deadline and output caps
do not apply; its writable folders are measured instead while it runs. As
root with bubblewrap its processes also share one control group, as a
candidate's do, so that a build (compilers in parallel, or whatever a build
script starts) cannot take the host's memory either.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

from playproof.corpus._jail import JailedProcess, JailSpec, launch, memory_limit_reason
from playproof.corpus._trees import MAX_TREE_DEPTH

__all__ = [
    "ENTRIES_PER_FILE",
    "WATCH_SECONDS",
    "WATCH_SHARE",
    "disk_use",
    "run_build",
    "supervise",
]

WATCH_SECONDS = 0.25
"""How often :func:`supervise` measures a jail's writable folders (at least)."""
WATCH_SHARE = 0.2
"""At most this share of the wall time goes to measuring (big trees are measured less often)."""
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
ENTRIES_PER_FILE = 4
""":func:`disk_use` stops after this many entries (files and folders) per allowed file."""


def disk_use(folders: list[Path], max_files: int) -> tuple[int, int]:
    """(bytes on disk, files) under ``folders``; counting stops past ``max_files``.

    Symlinks are not followed and a file with several hard links counts once:
    this measures what the folders take on disk, which a sparse file does not
    inflate. Folders are not files, but past :data:`ENTRIES_PER_FILE` times
    ``max_files`` entries in all the count stops too and reports ``max_files + 1``,
    as it does for folders nested more than :data:`MAX_TREE_DEPTH` deep. Each
    folder is opened relative to its parent's handle, so a path longer than the
    system's limit is counted too (by path it could not be opened, and a build
    could write there unmeasured).
    """
    used = files = entries = 0
    seen: set[tuple[int, int]] = set()
    over = max_files + 1
    for folder in folders:
        try:
            top = os.open(folder, _FOLDER_FLAGS & ~os.O_NOFOLLOW)  # the grader names the root
        except OSError:
            continue  # removed meanwhile, or not a folder
        pending: list[tuple[int, int]] = [(top, 0)]
        try:
            while pending:
                fd, depth = pending.pop()
                try:
                    with os.scandir(fd) as listing:
                        for entry in listing:
                            entries += 1
                            if files > max_files or entries > ENTRIES_PER_FILE * max_files:
                                return used, max(files, over)
                            try:
                                info = entry.stat(follow_symlinks=False)
                            except OSError:
                                continue
                            if stat.S_ISDIR(info.st_mode):
                                if depth >= MAX_TREE_DEPTH:
                                    return used, max(files, over)
                                try:
                                    inner = os.open(entry.name, _FOLDER_FLAGS, dir_fd=fd)
                                except OSError:
                                    continue
                                pending.append((inner, depth + 1))
                            else:
                                files += 1
                            if (info.st_dev, info.st_ino) not in seen:
                                seen.add((info.st_dev, info.st_ino))
                                used += info.st_blocks * 512
                except OSError:
                    pass  # the folder went away meanwhile
                finally:
                    os.close(fd)
        finally:
            for fd, _depth in pending:
                os.close(fd)
    return used, files


def supervise(jailed: JailedProcess, spec: JailSpec, seconds: float) -> str:
    """Wait for a jailed program that speaks no protocol (a build); why it was stopped, or "".

    The writable folders (and, without bubblewrap, the program's home folder) are
    measured every :data:`WATCH_SECONDS` or so while it runs and once after it
    exits; past ``writable_bytes`` or ``writable_files``, after ``seconds``, or as
    soon as the kernel has killed one of its processes for its control group's
    memory total, the jail is killed and the reason returned. A program writing
    faster than the watch can overshoot by what it writes in one interval, never
    without bound.
    """
    limits = spec.limits
    folders = list(spec.writable)
    if jailed.isolation == "rlimits":
        folders.append(jailed.scratch / "home")
    deadline = time.monotonic() + seconds
    pause = WATCH_SECONDS
    while True:
        try:
            jailed.process.wait(timeout=max(0.0, min(pause, deadline - time.monotonic())))
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
        measured = time.monotonic()
        used, files = disk_use(folders, limits.writable_files)
        pause = max(WATCH_SECONDS, (time.monotonic() - measured) / WATCH_SHARE)
        reason = ""
        if kills := jailed.oom_kills():
            reason = memory_limit_reason(limits, kills, "its")
        elif used > limits.writable_bytes:
            reason = f"its writable folders hold over the {limits.writable_bytes >> 20} MiB limit"
        elif files > limits.writable_files:
            reason = f"its writable folders hold over the {limits.writable_files}-file limit"
        elif not exited and time.monotonic() >= deadline:
            reason = f"did not finish within {seconds:g} s"
        if reason:
            jailed.stop()
            return reason
        if exited:
            return ""


def run_build(
    argv: list[str], spec: JailSpec, lane: int, seconds: float, log_chars: int
) -> tuple[bool, str]:
    """Run a build in ``spec``'s jail on ``lane``: whether it succeeded, and its log's tail.

    Stopped as :func:`supervise` stops it; as root with bubblewrap its processes
    together get ``spec.limits.total_memory_bytes``, and a build the kernel killed
    a process of for that is stopped at once and fails with the memory limit
    named. A build that cannot be started (or its group made) fails with why.
    """
    try:
        jailed = launch(argv, spec, slot=lane, merge_output=True, cgroup=True)
    except OSError as exc:
        return False, f"build not started: {exc}"
    try:
        assert jailed.process.stdin is not None
        jailed.process.stdin.close()
        stopped = supervise(jailed, spec, seconds)
        with jailed.stderr_path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - log_chars))
            log = handle.read(log_chars).decode("utf-8", errors="replace")
        if stopped:
            return False, f"build stopped: {stopped}\n{log}"
        return jailed.process.returncode == 0, log
    finally:
        jailed.stop()
        jailed.discard()
