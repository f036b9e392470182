"""The jail a candidate runs in: bubblewrap when it works, rlimits always.

Under bubblewrap a candidate has no network, a private empty ``/tmp``, the
system's ``/usr`` read-only, and only the paths its spec names; the corpus, the
answers and the workspace stay invisible unless named. Wherever a hidden path
(the spec's ``hidden`` and ``secret`` paths, and always the package's own corpus
data folder, which holds the shipped answers) lies inside a visible path, an
empty read-only mount covers it, so a wheel install whose site-packages is
visible shows no answers either. Without bubblewrap nothing can be covered:
as root the candidate runs under a uid of its own and :func:`launch` refuses to
start it while that uid could read an answers file; as an ordinary user the
candidate runs as that user and sees what the user sees. Resource limits (CPU
seconds, address space, file size, open files, processes) are set by
``prlimit`` just before the jail starts, and the runner adds a wall-clock
deadline and output caps. When playproof runs as root, each pool slot runs its
candidates under a uid of its own, because the kernel never applies the process
limit to root; after every case every process of that uid is killed. The
runner gives each pool slot two such uids, so the next case's jail can start
while the previous one is cleaned up. Lanes (and so uids) are reserved per run
with a lock file each (:func:`reserve_lanes`), so two gradings on one host
never share a uid and never clean up each other's candidates.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from playproof.corpus._cgroup import (
    CGROUP_TASK_HEADROOM,
    Cgroup,
    CgroupLayout,
    cgroup_layout,
    join_command,
    new_name,
)
from playproof.corpus._hiding import answers_files, masks
from playproof.corpus._trees import give_tree, remove_tree

__all__ = [
    "memory_limit_reason",
    "JAIL_UID_BASE",
    "Isolation",
    "IsolationChoice",
    "Sandbox",
    "JailLimits",
    "JailSpec",
    "JailedProcess",
    "bubblewrap_command",
    "bubblewrap_usable",
    "check_reachable",
    "kill_uid",
    "launch",
    "python_paths",
    "readable",
    "reserve_lanes",
    "resolve_isolation",
]

Isolation = Literal["bubblewrap", "rlimits"]
"""What a case actually ran under; recorded in every grade."""
IsolationChoice = Literal["auto", "bubblewrap", "rlimits"]
Sandbox = Literal["per-process", "per-slot"]
"""How a bubblewrap grading laid its sandboxes out: a new one for every candidate process,
or one per grading slot with each process in namespaces and a uid of its own (the warm jail)."""

JAIL_UID_BASE = 61000
"""When root, jail lane ``n`` runs candidates as uid/gid ``JAIL_UID_BASE + n``.

The runner gives pool slot ``s`` lanes ``2s`` and ``2s + 1``."""
TMPFS_BYTES = 64 * 1024 * 1024
"""Size of the jail's private /tmp."""
PROBE_SECONDS = 10.0
"""How long the bubblewrap probe may take."""
SWEEP_SECONDS = 5.0
MAX_LANES = 4096
"""How many lanes (uids ``JAIL_UID_BASE`` upward) runs on one host may reserve in all."""

_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/alternatives")


@dataclass(frozen=True)
class JailLimits:
    """Per-case resource limits."""

    cpu_seconds: int = 120
    address_space_bytes: int = 4 * 1024**3
    file_size_bytes: int = 16 * 1024 * 1024
    open_files: int = 256
    processes: int = 64
    """Processes and threads of the jail's uid (includes bubblewrap's own two)."""
    total_memory_bytes: int = 4 * 1024**3
    """Memory (no swap) all processes of one candidate process's control group may use
    together, as root where a group can be made (``_cgroup``); the address-space limit
    alone is per process, and 64 processes of 4 GiB would exhaust the grader's host."""
    wall_seconds: float = 120.0
    writable_bytes: int = 2 * 1024**3
    """Bytes on disk the writable folders may hold (a build is stopped past it)."""
    writable_files: int = 20_000
    """Files the writable folders may hold (a build is stopped past it)."""


@dataclass(frozen=True)
class JailSpec:
    """What a jailed process may see and how it is limited."""

    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    """Paths masked even when they lie under a visible path (the corpus)."""
    secret: tuple[Path, ...] = ()
    """Answers files: masked like ``hidden``, and without bubblewrap as root the jail
    refuses to start while its uid could read one (the package's own always count)."""
    limits: JailLimits = field(default_factory=JailLimits)
    isolation: IsolationChoice = "auto"
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: Path | None = None
    """The working directory (default: the private /tmp)."""


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    # Without it, bubblewrap (run as root) makes /etc 0700: the jail's uid could read
    # neither the loader cache nor the alternatives' symlinks (``cc``).
    args += ["--perms", "0755", "--dir", "/etc"]
    for path in _SYSTEM_FILES:
        args += ["--ro-bind-try", path, path]
    return args


def _mount_points(spec: JailSpec) -> list[str]:
    """``--dir`` for every folder above a bound path, world-traversable.

    bubblewrap would otherwise copy the host folder's mode (``/root`` is 0700),
    and the unprivileged jail uid could not reach what is bound below it.
    """
    bound = [*spec.read_only, *spec.writable]
    made: list[str] = []
    for path in sorted(bound, key=lambda p: len(p.parts)):
        for parent in reversed(path.parents):
            text = str(parent)
            inside = any(parent == b or b in parent.parents for b in bound)
            if text == "/" or text in made or inside or text.startswith(_SYSTEM_DIRS):
                continue
            made.append(text)
    args: list[str] = []
    for text in made:
        args += ["--perms", "0755", "--dir", text]
    return args


def _bwrap_prefix(
    spec: JailSpec,
    uid: int | None,
    *,
    privileged: bool | None = None,
    tmp_mode: str = "01777",
    control: tuple[Path, str] | None = None,
    binds: tuple[tuple[Path, str], ...] = (),
    cgroup_namespace: bool = True,
) -> list[str]:
    """bubblewrap's argv up to the command, dropping to ``uid`` inside (root only).

    ``privileged`` (default: ``uid`` is set) runs bubblewrap as root with no user
    namespace. ``tmp_mode`` is the private /tmp's mode; ``control`` binds a host
    folder at a path inside (the warm jail's, :mod:`playproof.corpus._warm`), and
    ``binds`` more after it (below it). ``cgroup_namespace=False`` keeps the host's
    cgroup namespace (the warm jail's shell moves case processes between groups, which
    a namespace rooted at its own group would refuse).
    """
    # As root, bubblewrap runs privileged (no user namespace) and setpriv drops to
    # the slot's uid inside, so the process limit applies; otherwise it is unprivileged.
    unshare = (
        [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            *(["--unshare-cgroup-try"] if cgroup_namespace else []),
        ]
        if (uid is not None if privileged is None else privileged)
        else ["--unshare-all"]
    )
    args = [
        "bwrap",
        *unshare,
        "--die-with-parent",
        "--new-session",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        tmp_mode,
        "--size",
        str(TMPFS_BYTES),
        "--tmpfs",
        "/tmp",
        *_mount_points(spec),
    ]
    if control is not None:
        args += ["--bind", str(control[0]), control[1]]
    for source, target in binds:
        args += ["--bind", str(source), target]
    for path in sorted(spec.read_only, key=lambda p: len(p.parts)):
        args += ["--ro-bind", str(path), str(path)]
    for path in spec.writable:
        args += ["--bind", str(path), str(path)]
    args += masks((*spec.hidden, *spec.secret), [*spec.read_only, *spec.writable])
    args += ["--chdir", str(spec.workdir or "/tmp"), "--clearenv"]
    for name, value in _environment(spec, "/tmp").items():
        args += ["--setenv", name, value]
    args.append("--")
    if uid is not None:
        args += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    return args


def bubblewrap_command(spec: JailSpec, uid: int | None) -> list[str]:
    """The bubblewrap argv (up to ``--``) that starts a program as ``spec`` says, as ``uid``.

    ``uid`` is dropped to inside the sandbox (root only); ``None`` keeps the caller's.
    No resource limits: :func:`launch` adds those for candidates and builds.
    """
    return _bwrap_prefix(spec, uid)


def _refuse_readable_secrets(spec: JailSpec, uid: int) -> None:
    """RunError when jail uid ``uid`` could read an answers file (rlimits fallback as root)."""
    files = answers_files(spec.secret)
    if not files:
        return
    # One shell tests them all as the jail uid, so ACLs and every folder above count.
    script = 'for p do if [ -r "$p" ]; then printf "%s\\n" "$p"; fi; done'
    done = _run_as(uid, ["sh", "-c", script, "sh", *files])
    readable = done.stdout.decode("utf-8", errors="replace").splitlines()
    if done.returncode != 0 or readable:
        from playproof.errors import RunError

        shown = readable[0] if readable else files[0]
        raise RunError(
            f"without bubblewrap the candidate runs as uid {uid}, which could read the "
            f"answers in {shown}; install bubblewrap (scripts/system-deps.sh) or make the "
            "answers unreadable to other users (chmod o-rwx on the file or a folder above)"
        )


def _environment(spec: JailSpec, home: str) -> dict[str, str]:
    # One BLAS thread: threads count against the process limit and buy nothing here.
    base = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return {**base, **spec.env}


def _prlimit_prefix(limits: JailLimits, extra_processes: int) -> list[str]:
    return [
        "prlimit",
        f"--cpu={limits.cpu_seconds}",
        f"--as={limits.address_space_bytes}",
        f"--fsize={limits.file_size_bytes}",
        f"--nofile={limits.open_files}",
        f"--nproc={limits.processes + extra_processes}",
        "--core=0",
        "--",
    ]


@contextlib.contextmanager
def reserve_lanes(count: int) -> Iterator[tuple[int, ...]]:
    """Reserve ``count`` lanes no other run on this host holds, for the ``with`` block.

    Each lane is an exclusive ``flock`` on its own lock file; the kernel drops
    the locks when the holder exits, so a crashed run never leaks a lane.
    """
    folder = Path(tempfile.gettempdir()) / "playproof-jail-lanes"
    folder.mkdir(mode=0o755, exist_ok=True)
    held: list[tuple[int, int]] = []
    try:
        for lane in range(MAX_LANES):
            if len(held) == count:
                break
            handle = os.open(folder / f"{lane}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(handle)
                continue
            held.append((lane, handle))
        if len(held) < count:
            raise OSError(f"no {count} free jail lanes among {MAX_LANES}")
        yield tuple(lane for lane, _ in held)
    finally:
        for _, handle in held:
            os.close(handle)


def _jail_uid(slot: int) -> int | None:
    return JAIL_UID_BASE + slot if os.geteuid() == 0 else None


def _processes_of(uid: int) -> int:
    """How many processes ``uid`` already has (the process limit counts them all)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count


@functools.cache
def bubblewrap_usable() -> bool:
    """True when bubblewrap can start a jail here as the uid candidates run under."""
    if shutil.which("bwrap") is None or shutil.which("prlimit") is None:
        return False
    spec = JailSpec(limits=JailLimits(wall_seconds=PROBE_SECONDS))
    try:
        done = subprocess.run(
            [*_bwrap_prefix(spec, _jail_uid(0)), "/usr/bin/true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def resolve_isolation(choice: IsolationChoice) -> Isolation:
    """The isolation a case will get for ``choice`` (``auto`` prefers bubblewrap)."""
    if choice == "rlimits":
        return "rlimits"
    if bubblewrap_usable():
        return "bubblewrap"
    if choice == "bubblewrap":
        from playproof.errors import NotSupportedError

        raise NotSupportedError("bubblewrap cannot start a jail here (install bubblewrap)")
    return "rlimits"


@dataclass
class JailedProcess:
    """A started candidate and what is needed to clean up after it."""

    process: subprocess.Popen[bytes]
    isolation: Isolation
    uid: int | None
    scratch: Path
    stderr_path: Path
    cgroup: Cgroup | None = None
    """The control group bounding all its processes' memory (root, where one can be made)."""

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for the group's memory limit."""
        return self.cgroup.oom_kills() if self.cgroup is not None else 0

    def stop(self) -> None:
        """Kill the candidate and everything it started."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, 9)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=SWEEP_SECONDS)
        if self.uid is not None:
            # Children that left the process group (setsid) still share the uid.
            kill_uid(self.uid)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def discard(self) -> None:
        """Remove the scratch folder (stderr file, fallback home) and the control group."""
        remove_tree(self.scratch)
        if self.cgroup is not None:
            self.cgroup.remove()


def readable(handles: list[int], seconds: float) -> list[int]:
    """Which of ``handles`` turn readable (or reach their end) within ``seconds``.

    ``poll``, not ``select``: select refuses a descriptor numbered 1024 or above,
    and a grader running many slots (or serving for long) holds that many.
    """
    poller = select.poll()
    for handle in handles:
        poller.register(handle, select.POLLIN)
    return [handle for handle, _ in poller.poll(max(0, math.ceil(seconds * 1000)))]


def kill_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` and wait until each has exited (bounded rounds).

    Each process is signalled through a pidfd opened before its owner is
    checked again, so a pid reused by another user's process in between is
    never signalled; the wait is on those pidfds (each turns readable when its
    process exits), and one more look catches what was forked meanwhile.
    Falls back to ``kill -9 -1`` run as ``uid`` where pidfds are missing
    (kernels before 5.3).
    """
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        _run_as(uid, ["kill", "-9", "-1"])
        return
    deadline = time.monotonic() + SWEEP_SECONDS
    while time.monotonic() < deadline:
        killed = _signal_uid(uid)
        if not killed:
            return
        try:
            pending = killed
            while pending and (remaining := deadline - time.monotonic()) > 0:
                ready = readable(pending, remaining)
                pending = [handle for handle in pending if handle not in ready]
        finally:
            for handle in killed:
                os.close(handle)


def _signal_uid(uid: int) -> list[int]:
    """SIGKILL every live process of ``uid``; the open pidfds of those signalled."""
    killed: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue  # the cheap look first: most processes are someone else's
            handle = os.pidfd_open(int(entry.name))
        except OSError:
            continue  # gone already
        try:
            if os.stat(f"/proc/{entry.name}").st_uid == uid and _alive(entry.name):
                signal.pidfd_send_signal(handle, signal.SIGKILL)
                killed.append(handle)
                continue
        except OSError:
            pass  # exited between the open and the check
        os.close(handle)
    return killed


def _run_as(uid: int, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run a short system command as ``uid`` (no supplementary groups); status and output."""
    return subprocess.run(
        argv,
        user=uid,
        group=uid,
        extra_groups=[],
        capture_output=True,
        timeout=SWEEP_SECONDS,
        check=False,
    )


def _alive(pid: str) -> bool:
    """False for a zombie (dead, waiting for its parent to reap it)."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        stat = handle.read(4096)
    # The state follows the command name, which is in parentheses and may hold spaces.
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


def check_reachable(argv: list[str], spec: JailSpec, slot: int) -> None:
    """RunError unless lane ``slot``'s uid can run ``argv`` and read its paths without a jail.

    Only the rlimits fallback as root needs this: there the candidate runs as
    the lane's uid on the host's own folders, and a folder closed to other
    users (``/root`` is 0700) would otherwise fail every case as a crash,
    grading the environment instead of the candidate.
    """
    uid = _jail_uid(slot)
    if uid is None or resolve_isolation(spec.isolation) != "rlimits":
        return
    program = shutil.which(argv[0]) or argv[0]
    wanted = [("-x", program), *(("-r", str(path)) for path in spec.read_only)]
    wanted += [("-r", arg) for arg in argv[1:] if os.path.isabs(arg) and os.path.exists(arg)]
    closed = [path for flag, path in wanted if _run_as(uid, ["test", flag, path]).returncode != 0]
    if closed:
        from playproof.errors import RunError

        shown = ", ".join(closed[:3]) + (f" and {len(closed) - 3} more" if len(closed) > 3 else "")
        raise RunError(
            f"without bubblewrap the candidate runs as uid {uid}, which cannot reach {shown} "
            "(a folder above is closed to other users); install bubblewrap "
            "(scripts/system-deps.sh) or put the candidate and its interpreter where every "
            "user may read them"
        )


def launch(
    argv: list[str],
    spec: JailSpec,
    slot: int,
    *,
    merge_output: bool = False,
    cgroup: bool = False,
) -> JailedProcess:
    """Start ``argv`` in a jail for lane ``slot`` (its uid) with pipes on stdin and stdout.

    ``merge_output`` sends stdout to the stderr file instead (a build: nobody reads
    a pipe from it, and a full pipe would stall it). ``cgroup`` (root, bubblewrap,
    where :func:`~playproof.corpus._cgroup.cgroup_layout` finds a hierarchy) starts
    it in a control group of its own with ``spec.limits.total_memory_bytes`` for all
    its processes together; OSError when the group cannot be made.
    """
    isolation = resolve_isolation(spec.isolation)
    uid = _jail_uid(slot)
    if isolation == "rlimits" and uid is not None:
        _refuse_readable_secrets(spec, uid)
    scratch = Path(tempfile.mkdtemp(prefix="playproof-case-"))
    scratch.chmod(0o711)  # the jail uid must reach its home folder inside
    stderr_path = scratch / "stderr"
    home = scratch / "home"
    home.mkdir()
    if uid is not None:
        os.chown(home, uid, uid)
    # The kernel counts every process of the uid, and processes of a lane's previous
    # candidate may still be dying or unreaped (the sweep stops at the live ones):
    # counted in, they can never make this jail fail to start.
    extra = _processes_of(uid if uid is not None else os.getuid())
    for path in spec.writable:
        _give(path, uid)
    run_as = uid
    group: Cgroup | None = None
    if isolation == "bubblewrap":
        inside = argv if merge_output else [*_PIPES_INSIDE, *argv]
        command = [*_prlimit_prefix(spec.limits, extra), *_bwrap_prefix(spec, uid), *inside]
        layout = cgroup_layout() if cgroup and uid is not None else None
        if layout is not None:
            group = _case_group(layout, spec.limits)
            # The first process joins before it execs prlimit: all the sandbox starts is inside.
            command = join_command(group, command)
        if not merge_output:
            command = [*_PIPES_OUTSIDE, *command]
        env = None
        cwd = None
        run_as = None  # bubblewrap starts as root and drops to ``uid`` inside
    else:
        command = [*_prlimit_prefix(spec.limits, extra), *argv]
        env = _environment(spec, str(home))
        cwd = str(spec.workdir or home)
    try:
        process = _start(command, merge_output, stderr_path, env, cwd, run_as)
    except BaseException:
        if group is not None:
            group.remove()
        raise
    return JailedProcess(
        process=process,
        isolation=isolation,
        uid=uid,
        scratch=scratch,
        stderr_path=stderr_path,
        cgroup=group,
    )


_PIPES_OUTSIDE = ("/bin/sh", "-c", 'exec "$@" 3<&0 4>&1 </dev/null >/dev/null', "sh")
"""Starts bubblewrap with the candidate's pipes on descriptors 3 and 4, not on its stdio.

bubblewrap (and its first process in the sandbox) keep their own stdin and stdout
open until the sandbox ends, so a candidate that closed its output while still
running would never show an end of output: the grader would wait for the case's
deadline. Descriptors above 2 are closed by both, so only the candidate holds these."""
_PIPES_INSIDE = ("/bin/sh", "-c", 'exec "$@" <&3 >&4 3<&- 4>&-', "sh")
"""Inside the sandbox: descriptors 3 and 4 become the candidate's stdin and stdout."""


def memory_limit_reason(limits: JailLimits, kills: int, whose: str) -> str:
    """Why a jail failed when the kernel killed ``kills`` of ``whose`` processes for its group."""
    return (
        f"memory limit: {whose} processes together passed "
        f"{limits.total_memory_bytes // 2**20} MiB and the kernel killed "
        f"{'one of them' if kills == 1 else f'{kills} of them'}"
    )


def _case_group(layout: CgroupLayout, limits: JailLimits) -> Cgroup:
    """A new control group for one candidate process: its memory total and task limit."""
    return Cgroup.make(
        layout, new_name("case"), limits.total_memory_bytes, limits.processes + CGROUP_TASK_HEADROOM
    )


def _start(
    command: list[str],
    merge_output: bool,
    stderr_path: Path,
    env: Mapping[str, str] | None,
    cwd: str | None,
    run_as: int | None,
) -> subprocess.Popen[bytes]:
    with stderr_path.open("wb") as stderr:
        return subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=stderr if merge_output else subprocess.PIPE,
            stderr=stderr,
            env=env if env is not None else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            cwd=cwd,
            start_new_session=True,
            user=run_as,
            group=run_as,
            extra_groups=[] if run_as is not None else None,
            close_fds=True,
        )


def _give(path: Path, uid: int | None) -> None:
    """Hand a writable folder to the jail uid (a build writes its outputs there)."""
    if uid is None:
        return
    give_tree(path, uid)  # by descriptor: the workspace's owner may be changing it meanwhile


def python_paths() -> tuple[Path, ...]:
    """Folders a Python candidate run by this interpreter needs to see (read-only)."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent}
    return tuple(sorted(p for p in paths if not str(p).startswith("/usr")))
