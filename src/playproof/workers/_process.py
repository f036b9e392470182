"""The parent's handle on one child process: spawn, framed I/O with deadlines, teardown.

Every read waits with ``poll`` against a deadline before ``os.read``; writes
are non-blocking and wait the same way, so a hung child can never hang the
parent. The child starts contained (:mod:`playproof._containment`): where PID
namespaces are available, everything the game spawns dies with the worker even
if it left the process group. The outermost process leads a new session
(process group); teardown kills the whole group.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping

from playproof._containment import ContainmentKind, containment, describe_exit
from playproof.errors import WorkerCrashed, WorkerProtocolError, WorkerTimeout
from playproof.workers._wire import HEADER, MAX_MESSAGE_BYTES

__all__ = ["QUIT_GRACE", "READ_CHUNK", "STDERR_TAIL_BYTES", "ChildProcess", "child_argv"]

_NAMESPACE_INIT_PID = 1
"""A contained child's parent as the child sees it: the init of its PID namespace."""

STDERR_TAIL_BYTES = 8192
"""How much of the child's stderr is kept (the last bytes) for error messages."""
READ_CHUNK = 1 << 20
"""Largest single ``os.read`` on the protocol pipe."""
QUIT_GRACE = 1.0
"""Seconds a child gets to exit after ``quit`` before its process group is killed."""
_REAP_WAIT = 5.0
"""Seconds to wait for the kernel to reap a SIGKILLed child (it cannot refuse)."""
_DRAIN_JOIN = 1.0
"""Seconds to wait for the stderr drain to see EOF after a kill."""
_POLL_IN = select.POLLIN | select.POLLHUP | select.POLLERR
_POLL_OUT = select.POLLOUT | select.POLLHUP | select.POLLERR


class _StderrTail:
    """Drains a pipe on a daemon thread, keeping only the last bytes (never blocks the child)."""

    def __init__(self, stream: object) -> None:
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._drain, args=(stream,), name="playproof-worker-stderr", daemon=True
        )
        self._thread.start()

    def _drain(self, stream: object) -> None:
        fd = stream.fileno()  # type: ignore[attr-defined]
        try:
            while chunk := os.read(fd, 1 << 16):
                with self._lock:
                    self._tail += chunk
                    if len(self._tail) > STDERR_TAIL_BYTES:
                        del self._tail[: len(self._tail) - STDERR_TAIL_BYTES]
        except OSError:
            pass
        finally:
            stream.close()  # type: ignore[attr-defined]

    def join(self, timeout: float) -> None:
        """Wait (bounded) until the pipe reached EOF."""
        self._thread.join(timeout)

    def text(self) -> str:
        """The kept tail, decoded leniently."""
        with self._lock:
            return self._tail.decode("utf-8", errors="replace")


class ChildProcess:
    """One spawned worker child (running ``python -m module``) and its framed pipes."""

    def __init__(self, module: str, env: Mapping[str, str] | None) -> None:
        environment = dict(os.environ)
        if env is not None:
            environment.update(env)
        launcher = containment()
        self.containment: ContainmentKind = launcher.kind
        """How the child is contained (``pid-namespace`` or ``process-group``)."""
        # Linux fires the parent-death signal when the creating *thread* exits, so it is
        # only requested from the main thread; elsewhere stdin EOF tells the child.
        watch = threading.current_thread() is threading.main_thread()
        argv = child_argv(module, parent_pid=_watched_parent(launcher.contained) if watch else None)
        self._proc = subprocess.Popen(
            launcher.command(argv, env=environment, die_with_parent=watch),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env=environment,
            start_new_session=True,
            close_fds=True,
        )
        stdin, stdout = self._proc.stdin, self._proc.stdout
        if stdin is None or stdout is None:  # pragma: no cover - PIPE always gives streams
            raise RuntimeError("subprocess pipes were not created")
        self._stderr = _StderrTail(self._proc.stderr)
        self._in = stdout.fileno()
        self._out = stdin.fileno()
        os.set_blocking(self._out, False)
        self._buffer = bytearray()
        self._poll_in = select.poll()
        self._poll_in.register(self._in, _POLL_IN)
        self._poll_out = select.poll()
        self._poll_out.register(self._out, _POLL_OUT)
        self._reaped = False

    @property
    def pid(self) -> int:
        """The process id of the child's outermost process (also its process group id)."""
        return self._proc.pid

    @property
    def alive(self) -> bool:
        """True while the child runs (checked without reaping, so its group id stays ours)."""
        return not self._reaped and not self.wait_exit(0.0)

    def send(self, body: bytes, sequence: int, deadline: float, what: str) -> None:
        """Write frame number ``sequence`` before ``deadline``.

        A full pipe waits; a closed one is a crash.
        """
        if len(body) > MAX_MESSAGE_BYTES:
            raise WorkerProtocolError(
                f"refusing to send a {len(body)}-byte {what} request, over the "
                f"{MAX_MESSAGE_BYTES}-byte message cap"
            )
        view = memoryview(HEADER.pack(len(body), sequence) + body)
        while view:
            try:
                written = os.write(self._out, view)
            except BlockingIOError:
                self._wait(self._poll_out, deadline, what)
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise self.crashed(f"while sending {what}") from None
            view = view[written:]

    def receive(self, deadline: float, what: str) -> tuple[int, bytes]:
        """Read one frame before ``deadline``: its sequence number and body.

        The size cap is checked on the header, before any of the body is read.
        """
        self._fill(HEADER.size, deadline, what)
        size, sequence = HEADER.unpack_from(self._buffer)
        if size > MAX_MESSAGE_BYTES:
            raise WorkerProtocolError(
                f"worker announced a {size}-byte answer to {what}, over the "
                f"{MAX_MESSAGE_BYTES}-byte message cap"
            )
        end = HEADER.size + size
        self._fill(end, deadline, what)
        body = bytes(self._buffer[HEADER.size : end])
        del self._buffer[:end]
        return sequence, body

    def _fill(self, count: int, deadline: float, what: str) -> None:
        buffer = self._buffer
        while len(buffer) < count:
            self._wait(self._poll_in, deadline, what)
            try:
                chunk = os.read(self._in, min(READ_CHUNK, max(count - len(buffer), 1 << 16)))
            except OSError:
                chunk = b""
            if not chunk:
                raise self.crashed(f"while waiting for the answer to {what}")
            buffer += chunk

    def _wait(self, poller: select.poll, deadline: float, what: str) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000.0):
            raise WorkerTimeout(f"worker pid {self.pid} did not answer {what} in time")

    def crashed(self, context: str) -> WorkerCrashed:
        """A WorkerCrashed naming the exit status and the stderr tail (reaps the child)."""
        self.kill()
        status = describe_exit(self._proc.returncode, contained=self.containment == "pid-namespace")
        return WorkerCrashed(f"worker pid {self.pid} {status} {context}{self.stderr_suffix()}")

    def stderr_suffix(self) -> str:
        """``"; stderr tail: ..."`` when the child wrote to stderr, else empty."""
        tail = self._stderr.text().strip()
        return f"; stderr tail:\n{tail}" if tail else ""

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the child to exit, without reaping it (keeps its pgid)."""
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            if not hasattr(os, "waitid"):  # pragma: no cover - systems without waitid reap here
                if self._proc.poll() is not None:
                    return True
            else:
                try:
                    info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    return True
                if info is not None:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def kill(self) -> None:
        """Kill the child's whole process group, reap the child, close the pipes. Idempotent."""
        if self._reaped:
            return
        # The unreaped child (even a zombie) keeps the group id ours, so this
        # cannot hit an unrelated group that reused the number.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(_REAP_WAIT)
        self._reaped = self._proc.returncode is not None
        self._stderr.join(_DRAIN_JOIN)
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _watched_parent(contained: bool) -> int:
    return _NAMESPACE_INIT_PID if contained else os.getpid()


def child_argv(module: str, *, parent_pid: int | None) -> list[str]:
    """The command that runs ``module`` as a worker child.

    With ``parent_pid`` the child asks for the parent-death signal and exits at
    once if its parent is already not ``parent_pid`` (as the child sees it).
    """
    # -P: ``-m`` would put the working folder first on the child's import path, so a
    # ``gymnasium.py`` beside the records being verified would run inside the verifier.
    argv = [sys.executable, "-P", "-m", module]
    if parent_pid is not None:
        argv += ["--parent-pid", str(parent_pid)]
    return argv
