"""Agent child processes: spawned without a shell, contained, killed as a group.

Each agent starts through :mod:`playproof._containment`: where PID namespaces
are available it runs under an init of its own, and everything it spawns dies
when it exits or is killed, even what left its process group. Either way the
outermost process leads a new process group (POSIX ``start_new_session``), so
one ``killpg`` ends the agent; without namespaces that group kill is all there is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from playproof._containment import Launcher, containment, known_containment
from playproof._environment import environment_problem
from playproof.errors import DriverError

__all__ = [
    "MAX_PROBED_FDS",
    "MAX_PROBED_PROCESSES",
    "PIPE_GRACE_S",
    "REAP_TIMEOUT_S",
    "STDERR_TAIL_BYTES",
    "OutputTail",
    "actor_name",
    "checked_argv",
    "close_pipes",
    "discard_until_eof",
    "kill_group",
    "launcher",
    "pipe_inode",
    "pipe_still_held",
    "reap",
    "settle",
    "spawn",
]

STDERR_TAIL_BYTES = 2048
"""How much of an agent's stderr an error message quotes (the end of it)."""
REAP_TIMEOUT_S = 5.0
"""How long to wait for a SIGKILLed child to be reaped before giving up on it."""
PIPE_GRACE_S = 0.5
"""How long the readers of an ended agent's pipes wait for end-of-file before the pipes are
closed: without PID namespaces, something it started outside its group may hold them open."""
_REAP_POLL_S = 0.005
"""How often :func:`reap` looks whether the killed child's exit has been seen."""
_MAX_NAME_CHARS = 200
_DISCARD_CHUNK = 64 * 1024
MAX_PROBED_PROCESSES = 65536
"""Most ``/proc`` entries one stdout probe reads; past it the probe cannot tell."""
MAX_PROBED_FDS = 4096
"""Most open files of one agent process a stdout probe looks at; past it it cannot tell."""
_STAT_BYTES = 4096
"""Bytes of ``/proc/<pid>/stat`` read (the fields used are near its start)."""
_PROC = Path("/proc")

# Arguments that look like program files name the agent well ("python agent.py");
# anything else (flags, tokens, URLs) stays out of the record.
_PROGRAM_SUFFIXES = (".py", ".js", ".mjs", ".ts", ".sh", ".rb", ".pl", ".lua", ".jar", ".exe")


def checked_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """Validate an argument vector: non-empty strings, no NUL (refused at construction)."""
    if isinstance(argv, str | bytes):
        raise DriverError("the agent command must be a list of arguments, not one string")
    args = tuple(argv)
    if not args or not args[0]:
        raise DriverError("the agent command is empty")
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            raise DriverError(f"agent argument {index} is {type(arg).__name__}, not str")
        if "\x00" in arg:
            raise DriverError(f"agent argument {index} contains a NUL byte")
    return args


def checked_env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """Validate the agent's environment: text names and values no process refuses.

    A NUL byte, an empty name or one holding ``=``, or text that cannot be
    encoded would otherwise be a bare ValueError at the first decision.
    """
    if env is None:
        return None
    problem = environment_problem(env)
    if problem is not None:
        raise DriverError(f"bad agent environment: {problem}")
    return dict(env)


def actor_name(argv: Sequence[str], name: str | None) -> str:
    """A short, secret-free name for the record: ``name`` or the program and script names."""
    if name is not None:
        if not name or "\x00" in name or len(name) > _MAX_NAME_CHARS:
            raise DriverError(f"agent name must be 1..{_MAX_NAME_CHARS} characters without NUL")
        return name
    parts = [Path(argv[0]).name]
    parts += [
        Path(arg).name
        for arg in argv[1:]
        if not arg.startswith("-") and arg.lower().endswith(_PROGRAM_SUFFIXES)
    ]
    return " ".join(parts)[:_MAX_NAME_CHARS]


async def launcher() -> Launcher:
    """How agents start here (probed once per process, off the event loop)."""
    known = known_containment()
    return known if known is not None else await asyncio.to_thread(containment)


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    contain: Launcher,
) -> asyncio.subprocess.Process:
    """Start ``argv`` (no shell) contained, with piped stdin/stdout/stderr, as a group leader."""
    try:
        command = contain.command(argv, env=env, cwd=cwd)
        return await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        raise DriverError(f"cannot start the agent {argv[0]!r}: {exc}") from exc


def kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the child's whole process group (it may already be gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def reap(process: asyncio.subprocess.Process) -> int | None:
    """Kill the group and wait (bounded) for the child's exit status; close its stdin.

    The status is watched for itself: ``process.wait()`` also waits until the
    child's pipes close, which, without PID namespaces, something it started
    outside its group can put off for ever.
    """
    kill_group(process)
    if process.stdin is not None:
        process.stdin.close()
    deadline = asyncio.get_running_loop().time() + REAP_TIMEOUT_S
    while process.returncode is None:
        if asyncio.get_running_loop().time() > deadline:
            return None
        await asyncio.sleep(_REAP_POLL_S)
    return process.returncode


def close_pipes(process: asyncio.subprocess.Process) -> None:
    """Close this side of the child's pipes: their readers see end-of-file at once.

    Unsent request bytes are dropped, not flushed into a pipe nobody may read.
    """
    stdin = process.stdin
    if stdin is not None and stdin.transport.get_write_buffer_size():
        stdin.transport.abort()
    transport = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()


async def settle(tasks: Sequence[asyncio.Future[Any]], process: asyncio.subprocess.Process) -> None:
    """Let the pipe readers of an ended or killed agent reach EOF, briefly; else close the pipes.

    EOF comes at once when every process holding a pipe is gone. Without PID
    namespaces, something the agent started outside its group may hold one
    open for ever: after :data:`PIPE_GRACE_S` the pipes are closed, which ends
    the readers (a reader merely cancelled would leave its pipe to the garbage
    collector).
    """
    _, pending = await asyncio.wait(tasks, timeout=PIPE_GRACE_S) if tasks else ((), ())
    if pending:
        close_pipes(process)
        _, pending = await asyncio.wait(pending, timeout=PIPE_GRACE_S)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def discard_until_eof(stream: asyncio.StreamReader | None) -> None:
    """Read and drop what a killed child left in a pipe, so the pipe closes (bounded in time)."""
    if stream is None:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(REAP_TIMEOUT_S):
            while await stream.read(_DISCARD_CHUNK):
                pass


def pipe_inode(process: asyncio.subprocess.Process, fd: int) -> int | None:
    """The inode of the pipe behind the child's ``fd`` (1: stdout), or None when unknown."""
    transport = getattr(process, "_transport", None)
    pipe = transport.get_pipe_transport(fd) if transport is not None else None
    stream = pipe.get_extra_info("pipe") if pipe is not None else None
    try:
        return os.fstat(stream.fileno()).st_ino if stream is not None else None
    except (OSError, ValueError):
        return None


def _parent_pids() -> dict[int, int] | None:
    """Every visible process and its parent, from ``/proc`` (None when it cannot be read)."""
    parents: dict[int, int] = {}
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        if len(parents) >= MAX_PROBED_PROCESSES:
            return None
        try:
            fd = os.open(_PROC / entry / "stat", os.O_RDONLY | os.O_CLOEXEC)
            try:
                stat = os.read(fd, _STAT_BYTES)
            finally:
                os.close(fd)
        except OSError:
            continue  # it exited meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat.rpartition(b")")[2].split()
        if len(fields) >= 2 and fields[1].isdigit():
            parents[int(entry)] = int(fields[1])
    return parents


def _holds(pid: int, target: str) -> bool | None:
    """True when process ``pid`` has ``target`` (a ``pipe:[inode]`` link) open; None: unknown."""
    folder = _PROC / str(pid) / "fd"
    try:
        fds = os.listdir(folder)
    except FileNotFoundError:
        return False  # it exited meanwhile
    except OSError:
        return None
    if len(fds) > MAX_PROBED_FDS:
        return None
    for fd in fds:
        try:
            if os.readlink(folder / fd) == target:
                return True
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return False


def pipe_still_held(process: asyncio.subprocess.Process, inode: int, *, layers: int) -> bool:
    """Whether the agent can still write the pipe ``inode`` (its stdout); True when unsure.

    Looks at the child's descendants (``/proc``) below its first ``layers``
    generations, the launcher's own processes (``unshare`` and the namespace's
    init, which keep the pipe open as long as they run); the agent and
    everything it started are below them. False only when there is at least
    one such process, every one could be read and none has the pipe open: no
    reply can come. (Before the launcher has started the agent there is none.)
    It reads ``/proc`` synchronously: an async caller runs it in a thread.
    """
    parents = _parent_pids()
    if parents is None:
        return True
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    target = f"pipe:[{inode}]"
    generation, depth, looked = [process.pid], 0, False
    while generation:
        if depth >= layers:
            for pid in generation:
                held = _holds(pid, target)
                if held is None or held:
                    return True
                looked = True
        generation = [child for pid in generation for child in children.get(pid, ())]
        depth += 1
    return not looked


class OutputTail:
    """The last ``limit`` bytes written to a stream, for error messages."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self._limit = limit
        self._data = bytearray()

    def add(self, chunk: bytes) -> None:
        """Append a chunk, keeping only the tail."""
        self._data += chunk
        if len(self._data) > self._limit:
            del self._data[: len(self._data) - self._limit]

    def text(self) -> str:
        """The tail as text (undecodable bytes replaced), stripped."""
        return self._data.decode("utf-8", errors="replace").strip()

    def suffix(self) -> str:
        """``": <tail>"`` for an error message, or nothing when the stream was empty."""
        tail = self.text()
        return f"; stderr ends with: {tail}" if tail else ""
