"""The desktop program's processes: launched contained, read with bounds, ended as a whole.

Every command runs under the project's containment (a PID namespace of its
own where the machine allows it, else a process group of its own; see
:mod:`playproof._containment`) with ``start_new_session``, so ending the group
ends the program and everything it forked. A background thread drains the
program's standard output into a bounded buffer; :meth:`Program.take` waits
until one input's output is complete (a prompt matched at its end, or a
quiet interval passed) within a deadline.

Helpers (an input helper, a capture helper) are short-lived commands run the
same way, with a deadline and a bound on what they print.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from playproof._bounded import read_bounded
from playproof._containment import containment
from playproof.errors import RunError

__all__ = [
    "END_GRACE_S",
    "MAX_HELPER_OUTPUT_BYTES",
    "MAX_OUTPUT_BYTES",
    "Program",
    "descendants",
    "find_descendant",
    "process_alive",
    "run_helper",
]

MAX_OUTPUT_BYTES = 256 * 1024
"""Bytes of program output one input may produce before the run stops with an error."""
MAX_HELPER_OUTPUT_BYTES = 256 * 1024
"""Bytes a helper may print."""
END_GRACE_S = 1.0
"""How long a program has to end after SIGTERM before its whole group gets SIGKILL."""
_READ_BYTES = 64 * 1024
_POLL_S = 0.01
_PID_FILE_BYTES = 64
_MAX_PROCESSES_SCANNED = 100_000


def _end_group(process: subprocess.Popen[bytes], grace_s: float = END_GRACE_S) -> None:
    """End ``process`` and its whole group: SIGTERM, a grace period, then SIGKILL; reap it."""
    pgid = process.pid  # start_new_session: the leader's pid is the group's id
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace_s)
    # The leader may be gone while members it forked are not: the group is killed anyway.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    process.wait()


def _start(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bool,
    stdout: bool,
) -> tuple[subprocess.Popen[bytes], bool]:
    launcher = containment()
    try:
        command = launcher.command(argv, env=env, cwd=cwd)
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        raise RunError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from exc
    return process, launcher.contained


class Program:
    """A launched desktop program: its stdin, its drained stdout, and the end of its group."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin: bool,
        stdout: bool,
    ) -> None:
        self.process, self.contained = _start(argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout)
        self.started = time.monotonic()
        self._buffer = bytearray()
        self._overflow = False
        self._eof = not stdout
        self._last = time.monotonic()
        self._changed = threading.Condition()
        self._reader: threading.Thread | None = None
        if stdout:
            self._reader = threading.Thread(
                target=self._drain, name="playproof-desktop-stdout", daemon=True
            )
            self._reader.start()

    @property
    def pid(self) -> int:
        """The launched command's process id (the group's id)."""
        return self.process.pid

    def _drain(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, _READ_BYTES)
            except OSError:
                chunk = b""
            with self._changed:
                if not chunk:
                    self._eof = True
                    self._changed.notify_all()
                    return
                if len(self._buffer) + len(chunk) > MAX_OUTPUT_BYTES:
                    self._overflow = (
                        True  # keep draining (so the program never blocks), keep nothing
                    )
                else:
                    self._buffer += chunk
                self._last = time.monotonic()
                self._changed.notify_all()

    def send(self, text: str, timeout_s: float) -> bool:
        """Write ``text`` to the program's stdin; False when the program closed it.

        A program that stops reading its input fills the pipe, and a plain write
        would then wait forever: RunError when the text is not taken within ``timeout_s``.
        """
        stream = self.process.stdin
        if stream is None:
            raise RunError(
                "the program's standard input is not connected; send inputs via a helper"
            )
        data = text.encode("utf-8")
        deadline = time.monotonic() + timeout_s
        try:
            fd = stream.fileno()
            os.set_blocking(fd, False)
            writable = select.poll()
            writable.register(fd, select.POLLOUT)
            while data:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RunError(
                        f"the program did not read its input within {timeout_s:g} s; make it "
                        "read its standard input, or raise observe.step_timeout_s"
                    )
                if not writable.poll(max(left * 1000.0, 1.0)):
                    continue
                try:
                    data = data[os.write(fd, data) :]
                except BlockingIOError:
                    continue
        except (ValueError, OSError):  # closed by the program (a broken pipe) or by end()
            return False
        return True

    def take(self, prompt: re.Pattern[str] | None, quiet_s: float, timeout_s: float) -> str:
        """The output since the last call, once complete (see the module docstring).

        Complete means: ``prompt`` matches at the end of the text, else
        ``quiet_s`` passed with no output; or the output ended. RunError when
        it is neither within ``timeout_s`` or when it is over MAX_OUTPUT_BYTES.
        """
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                if self._overflow:
                    raise RunError(
                        f"the program wrote over {MAX_OUTPUT_BYTES} bytes for one input; "
                        "raise nothing, make the program print less"
                    )
                text = self._buffer.decode("utf-8", errors="replace")
                now = time.monotonic()
                if self._eof:
                    break
                if prompt is not None:
                    if prompt.search(text):
                        break
                elif now - self._last >= quiet_s:
                    break
                if now >= deadline:
                    wanted = "its prompt" if prompt is not None else "a quiet interval"
                    raise RunError(
                        f"the program did not reach {wanted} within {timeout_s:g} s of an input; "
                        "raise observe.step_timeout_s or fix observe.prompt"
                    )
                wait = (
                    deadline - now
                    if prompt is not None
                    else min(deadline - now, quiet_s - (now - self._last))
                )
                self._changed.wait(max(min(wait, 0.05), _POLL_S))
            self._buffer.clear()
            self._last = time.monotonic()
        return text

    def exit_status(self) -> int | None:
        """The program's exit status once it ended, else None."""
        return self.process.poll()

    def end(self) -> None:
        """End the program and everything in its group; idempotent."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        _end_group(self.process)
        if self._reader is not None:
            self._reader.join(END_GRACE_S)
        if self.process.stdout is not None:
            with contextlib.suppress(OSError):
                self.process.stdout.close()


def run_helper(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    what: str,
) -> bytes:
    """Run a helper to its end within ``timeout_s``; its stdout (at most MAX_HELPER_OUTPUT_BYTES).

    A helper that runs too long, prints too much or fails ends with its whole
    group and raises RunError naming ``what``.
    """
    process, _ = _start(argv, cwd=cwd, env=env, stdin=False, stdout=True)
    stream = process.stdout
    assert stream is not None
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout_s
    try:
        # poll, not select: select refuses a descriptor numbered 1024 or above, which a
        # process holding many files (a long session, many games open) gets for new pipes.
        readable = select.poll()
        readable.register(stream.fileno(), select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunError(f"the {what} did not finish within {timeout_s:g} s")
            if not readable.poll(max(left * 1000.0, 1.0)):
                continue
            chunk = os.read(stream.fileno(), _READ_BYTES)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_HELPER_OUTPUT_BYTES:
                raise RunError(f"the {what} printed over {MAX_HELPER_OUTPUT_BYTES} bytes")
            chunks.append(chunk)
        try:
            status = process.wait(max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired as exc:
            raise RunError(f"the {what} did not finish within {timeout_s:g} s") from exc
        if status != 0:
            raise RunError(f"the {what} {argv[0]!r} exited with status {status}")
    finally:
        _end_group(process, grace_s=0.0)
        stream.close()
    return b"".join(chunks)


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces or ')': split after the last.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def descendants(root: int) -> list[int]:
    """Every live process under ``root`` (children, their children ...), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for count, entry in enumerate(Path("/proc").iterdir()):
        if count > _MAX_PROCESSES_SCANNED:
            break
        if not entry.name.isdigit():
            continue
        parent = _parent_of(int(entry.name))
        if parent is not None:
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def _name_of(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text(errors="replace").strip()
    except OSError:
        return None


def _inner_pid(pid: int) -> int | None:
    """The process id ``pid`` has in its innermost PID namespace (the one it sees itself as)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(errors="replace")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return pid


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    fields = stat[stat.rfind(b")") + 2 :].split()
    return bool(fields) and fields[0] not in (b"Z", b"X")


def find_descendant(
    root: int,
    *,
    name: str | None = None,
    pid_file: Path | None = None,
    timeout_s: float,
    same_numbering: bool = False,
) -> int:
    """The descendant of ``root`` named ``name``, or whose id ``pid_file`` holds, once it exists.

    A PID file written inside the program's own PID namespace holds the id
    the program sees; it is matched against each descendant's id in its
    innermost namespace. With ``same_numbering`` (the program shares this
    machine's process ids: no PID namespace) a live process whose id the file
    holds is taken even when it left the launcher's tree (a daemon that forked
    away). RunError when none appears within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        wanted: int | None = None
        if pid_file is not None:
            with contextlib.suppress(RunError, ValueError):
                wanted = int(read_bounded(pid_file, _PID_FILE_BYTES, "PID file", RunError).strip())
        if same_numbering and wanted is not None and wanted > 1 and process_alive(wanted):
            return wanted
        for pid in descendants(root):
            if name is not None and _name_of(pid) == name and process_alive(pid):
                return pid
            if wanted is not None and _inner_pid(pid) == wanted and process_alive(pid):
                return pid
        if time.monotonic() >= deadline:
            looked = f"named {name!r}" if name is not None else f"whose id {pid_file} holds"
            raise RunError(
                f"no process {looked} appeared under the launcher within {timeout_s:g} s; "
                "check launch.command or raise launch.ready_timeout_s"
            )
        time.sleep(0.02)
