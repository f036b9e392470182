"""Control groups: one memory and process total for everything a candidate process starts.

The jail's rlimits are per process (address space) and per uid (processes),
so 64 processes of 4 GiB each would still fit them and exhaust the grader's
machine. As root, each case's candidate therefore runs in a control group of
its own, under a folder named :data:`CGROUP_FOLDER`, with a memory limit for
all its processes together (``JailLimits.total_memory_bytes``, no swap) and
a task limit. Past the memory limit the kernel's OOM handling kills inside
that group only (cgroup v2 kills the whole group), never the grader; the
runner sees the group's OOM kill count rise and fails the case as a memory
limit. After the case every process left in the group is killed and the
group removed.

Where ``/sys/fs/cgroup`` is cgroup v2 with the memory controller, groups are
made there; else in the cgroup v1 ``memory`` (and ``pids``, when present)
hierarchies when they are writable. Where neither works (not root, a
read-only or delegated-away hierarchy) :func:`cgroup_layout` is None, one
:class:`MemoryContainmentWarning` says so, and the grade records
``memory_cgroup: none``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from playproof._containment import ContainmentWarning

__all__ = [
    "CGROUP_FOLDER",
    "CGROUP_ROOT",
    "CGROUP_TASK_HEADROOM",
    "Cgroup",
    "CgroupLayout",
    "MemoryCgroup",
    "MemoryContainmentWarning",
    "cgroup_layout",
    "join_command",
    "memory_cgroup_in_use",
    "new_name",
]

MemoryCgroup = Literal["v2", "v1", "none"]
"""Which control groups bounded a grading's total memory (``none``: only rlimits did)."""

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where the cgroup v2 hierarchy is mounted, or the v1 hierarchies' folders are."""
CGROUP_FOLDER = "playproof"
"""The folder every group playproof makes sits in (in each hierarchy); it is kept."""
CGROUP_TASK_HEADROOM = 8
"""Tasks a group may hold beyond ``JailLimits.processes``: bubblewrap's own two, and in a
warm jail the root shell's fork that starts the case (they are counted, the candidate's
processes are what the limit is for)."""
CGROUP_SWEEP_SECONDS = 5.0
"""How long removing a group may wait for its killed processes to go."""
_NAMES = itertools.count(1)
_warned = threading.Lock()
_probing = threading.Lock()
_said: list[bool] = []


class MemoryContainmentWarning(ContainmentWarning):
    """Candidates run without a total memory limit: only per-process rlimits bound them."""


@dataclass(frozen=True)
class CgroupLayout:
    """Where groups are made: ``v2`` one folder, ``v1`` the memory folder (then pids, if any)."""

    kind: Literal["v2", "v1"]
    folders: tuple[Path, ...]
    """``<hierarchy>/playproof`` in each hierarchy used."""


def _write(path: Path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _words(text: str) -> set[str]:
    return set(text.split())


def _probe_v2(root: Path) -> CgroupLayout | None:
    controllers = root / "cgroup.controllers"
    if not controllers.is_file() or not {"memory", "pids"} <= _words(controllers.read_text()):
        return None
    if not {"memory", "pids"} <= _words((root / "cgroup.subtree_control").read_text()):
        # The root group has no processes of its own to object (it is exempt); systemd
        # enables both anyway, so this only changes what a bare machine had left off.
        _write(root / "cgroup.subtree_control", "+memory +pids")
    folder = root / CGROUP_FOLDER
    folder.mkdir(mode=0o755, exist_ok=True)
    _write(folder / "cgroup.subtree_control", "+memory +pids")
    return CgroupLayout("v2", (folder,))


def _probe_v1(root: Path) -> CgroupLayout | None:
    memory = root / "memory"
    if not (memory / "memory.limit_in_bytes").is_file():
        return None
    folders = [memory / CGROUP_FOLDER]
    if (root / "pids" / "cgroup.procs").is_file():
        folders.append(root / "pids" / CGROUP_FOLDER)
    for folder in folders:
        folder.mkdir(mode=0o755, exist_ok=True)
    return CgroupLayout("v1", tuple(folders))


def cgroup_layout() -> CgroupLayout | None:
    """Where this host lets playproof make groups (probed once by making one), else None.

    Thread-safe: a grading's slots ask at once, and two probes in one process
    once collided on their group's name, so one of them found no groups.
    """
    with _probing:
        return _probed_layout()


@functools.cache
def _probed_layout() -> CgroupLayout | None:
    if os.geteuid() != 0 or not CGROUP_ROOT.is_dir():
        return None
    for probe in (_probe_v2, _probe_v1):
        try:
            layout = probe(CGROUP_ROOT)
        except OSError:
            continue
        if layout is None:
            continue
        try:
            Cgroup.make(layout, new_name("probe"), 1024**3, 1).remove()
        except OSError:
            continue
        _remove_stale(layout)
        return layout
    return None


def _owner_gone(name: str) -> bool:
    """Whether the grader process named in a group's name (see :func:`new_name`) has ended.

    A name that does not parse, or a pid that is alive (or reused), counts as not gone.
    """
    parts = name.split("-")
    if len(parts) < 2 or not parts[-2].isdigit() or int(parts[-2]) == os.getpid():
        return False
    try:
        os.kill(int(parts[-2]), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _remove_stale(layout: CgroupLayout) -> None:
    """Remove the groups a grader that died (killed mid-grading) left behind; never raises.

    Whatever still runs in them is killed: its grader is gone, so nothing would end it.
    """
    names: set[str] = set()
    for folder in layout.folders:
        with contextlib.suppress(OSError):
            names.update(child.name for child in folder.iterdir() if child.is_dir())
    for name in sorted(filter(_owner_gone, names)):
        paths = tuple(folder / name for folder in layout.folders if (folder / name).is_dir())
        Cgroup(layout, paths).remove()


def memory_cgroup_in_use(wanted: bool) -> MemoryCgroup:
    """What bounds a grading's memory; warns once per process when ``wanted`` and nothing can."""
    layout = cgroup_layout() if wanted else None
    if layout is not None:
        return layout.kind
    if wanted:
        with _warned:
            if not _said:
                _said.append(True)
                warnings.warn(
                    "no control group can be made here (needs root and a writable cgroup v2 "
                    "with the memory controller, or cgroup v1 memory): a candidate's "
                    "processes are limited one by one, not in total",
                    MemoryContainmentWarning,
                    stacklevel=3,
                )
    return "none"


class Cgroup:
    """One group (a folder in each hierarchy of its layout); :meth:`remove` ends it."""

    def __init__(self, layout: CgroupLayout, paths: tuple[Path, ...]) -> None:
        self.layout = layout
        self.paths = paths

    @classmethod
    def make(
        cls,
        layout: CgroupLayout,
        name: str,
        memory_bytes: int | None,
        tasks: int | None,
        *,
        parent: Cgroup | None = None,
        nest: bool = False,
    ) -> Cgroup:
        """Make group ``name`` (under ``parent``) with these limits (None: the parent's).

        ``nest`` lets it hold limited groups itself (cgroup v2 then forbids it processes).
        OSError, with what was made removed, when the kernel refuses.
        """
        bases = parent.paths if parent is not None else layout.folders
        group = cls(layout, tuple(base / name for base in bases))
        try:
            for path in group.paths:
                path.mkdir(mode=0o755)
            group._limit(memory_bytes, tasks, nest)
        except OSError:
            group.remove()
            raise
        return group

    def _limit(self, memory_bytes: int | None, tasks: int | None, nest: bool) -> None:
        if self.layout.kind == "v2":
            path = self.paths[0]
            if memory_bytes is not None:
                _write(path / "memory.max", str(memory_bytes))
                if (path / "memory.swap.max").exists():
                    _write(path / "memory.swap.max", "0")
                # One process past the limit ends all of them: a candidate whose helper
                # was killed would otherwise go on half alive.
                _write(path / "memory.oom.group", "1")
            if tasks is not None:
                _write(path / "pids.max", str(tasks))
            if nest:
                _write(path / "cgroup.subtree_control", "+memory +pids")
            return
        memory = self.paths[0]
        if memory_bytes is not None:
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                # Memory plus swap at the same bound: swap is no way around it.
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
        if tasks is not None and len(self.paths) > 1:
            _write(self.paths[1] / "pids.max", str(tasks))

    @property
    def procs_files(self) -> tuple[Path, ...]:
        """Each hierarchy's ``cgroup.procs`` (a process writes ``0`` to each to join)."""
        return tuple(path / "cgroup.procs" for path in self.paths)

    def oom_kills(self) -> int:
        """How many of the group's processes the kernel killed for its memory limit so far."""
        name = "memory.events" if self.layout.kind == "v2" else "memory.oom_control"
        try:
            text = (self.paths[0] / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def _pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            with contextlib.suppress(OSError):
                found.update(int(word) for word in procs.read_text().split())
        return sorted(found)

    def _kill(self, pid: int) -> None:
        """SIGKILL ``pid`` through a pidfd, if it is still in the group once the pidfd is open.

        A pid read from ``cgroup.procs`` may be reused by then; the pidfd pins the process,
        and the second look shows it is the group's.
        """
        try:
            handle = os.pidfd_open(pid)
        except OSError:
            return
        try:
            if pid in self._pids():
                signal.pidfd_send_signal(handle, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(handle)

    def remove(self) -> None:
        """Kill what is left in the group and its children, then remove them; never raises.

        Bounded: at most CGROUP_SWEEP_SECONDS of waiting for killed processes.
        """
        for path in self.paths:
            with contextlib.suppress(OSError):
                for child in path.iterdir():
                    if child.is_dir():
                        Cgroup(self.layout, (child,)).remove()
        deadline = time.monotonic() + CGROUP_SWEEP_SECONDS
        while (pids := self._pids()) and time.monotonic() < deadline:
            kill = self.paths[0] / "cgroup.kill"
            if self.layout.kind == "v2" and kill.exists():
                with contextlib.suppress(OSError):
                    _write(kill, "1")
            else:
                for pid in pids:
                    self._kill(pid)
            time.sleep(0.002)
        for path in self.paths:
            # Removing a group with no processes left is refused (EBUSY) only for a moment
            # while the last ones exit; a few tries, then it is left for the host.
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.002)


def join_command(group: Cgroup, argv: list[str]) -> list[str]:
    """``argv`` run by a shell that first joins ``group`` (so all it starts is inside).

    The shell exits 125 without running ``argv`` when a join is refused.
    """
    script = 'while [ "$1" != -- ]; do echo 0 >"$1" || exit 125; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *map(str, group.procs_files), "--", *argv]


def new_name(kind: str) -> str:
    """A group name unique on this host: the kind, this process's id and a counter."""
    return f"{kind}-{os.getpid()}-{next(_NAMES)}"
