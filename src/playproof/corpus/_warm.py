"""A warm jail: one bubblewrap sandbox per pool slot, a fresh candidate process per case.

Starting a bubblewrap sandbox, ``prlimit`` and ``setpriv`` for every case costs
about 8 ms, a third of a Mooneye case. A :class:`WarmJail` starts the
sandbox once per slot (the same mounts, masks, limits and namespaces as
:func:`~playproof.corpus._jail.launch`, with ``prlimit`` applied to the
sandbox), with a small shell inside it running as root. For each case the
shell forks, and the fork runs the candidate through ``unshare``, which gives
that one process a network and IPC namespace of its own and drops to the
case's uid (no supplementary groups, no capabilities). So every case still
gets a fresh process under a uid of its own, with nothing of an earlier case
in its namespaces; what the cases of one slot share is the read-only
filesystem view, which is the same for all of them, and the process table's
view (they see each other's process ids, and cannot signal or trace them:
other uids).

Files: ``/tmp`` belongs to root (0755) and each case gets ``/tmp/<n>`` (its
``HOME`` and ``TMPDIR``, 0700, the case's uid): a tmpfs of its own that the
shell mounts before the candidate starts (at most :data:`CASE_HOME_BYTES`
and :data:`CASE_HOME_FILES`) and unmounts after it, which frees everything
in it at once however many files the candidate made (removing 200 000 files
one by one took seconds per case). The empty folder is removed from outside
(through a handle on the sandbox's /tmp kept open from outside, so a reused
process id can never redirect it), so a case leaves nothing for a later one.

Memory: as root where a control group can be made (``_cgroup``), the slot
has a group with the sandbox's own processes in a ``sandbox`` group below
it, and each case a ``case-<n>`` group beside that with the total memory
and task limits; the shell's fork joins the case's group (bound into the
sandbox under the root-only control folder) before it mounts the home or
starts the candidate, so everything the candidate starts is inside.

The candidate's stdin and stdout are FIFOs in a root-only folder bound into
the sandbox; its stderr and exit status are files there.

Only used as root with bubblewrap (the shell must change uid) and for
candidates with no writable folders; everything else starts a fresh sandbox
per process with :func:`~playproof.corpus._jail.launch`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

from playproof.corpus._cgroup import (
    CGROUP_TASK_HEADROOM,
    Cgroup,
    cgroup_layout,
    join_command,
    new_name,
)
from playproof.corpus._jail import (
    JAIL_UID_BASE,
    SWEEP_SECONDS,
    TMPFS_BYTES,
    JailSpec,
    _bwrap_prefix,
    _prlimit_prefix,
    kill_uid,
    readable,
    resolve_isolation,
)
from playproof.corpus._trees import remove_tree

__all__ = ["WarmCase", "WarmJail", "warm_usable"]

CONTROL = "/run/playproof"
"""Where the root-only control folder (FIFOs, stderr and status files) sits in the sandbox."""
READY_SECONDS = 10.0
"""How long a new sandbox may take to say it is ready."""
OPEN_SECONDS = 10.0
"""How long the case's FIFOs may take to be opened by the shell."""
STATUS_SECONDS = 2.0
"""How long a killed case's exit status may take to be written."""
MAX_INFO_BYTES = 4096
CASE_HOME_BYTES = TMPFS_BYTES
"""Bytes a case's home (its own tmpfs) may hold; the pages count against its memory too."""
CASE_HOME_FILES = 16_384
"""Files and folders a case's home may hold: what its unmount frees is bounded by it."""

# The shell in the sandbox (root): one line ``<n> <uid>`` per case on stdin. $1 is
# the working directory ('' for the case's own folder), the rest the candidate's argv.
# The fork joins the case's control groups (when the grader made them: the glob then
# matches) in an inner fork that then execs the candidate, so the fork itself stays in
# the sandbox's group: killing what is left in the case's group never stops it from
# writing the status and then unmounting (lazily: a killed candidate's last references
# go with it) and removing the home, off the grader's path.
LAUNCHER = (
    r"""
workdir=$1
shift
echo ready
while read -r n uid; do
  (
    home=/tmp/$n
    options=size=HOMEBYTES,nr_inodes=HOMEFILES,mode=0700,uid=$uid,gid=$uid,nosuid,nodev
    mount -t tmpfs -o "$options" playproof-home "$home" ||
      { echo 125 >"CONTROL/$n.status"; exit 1; }
    if cd "${workdir:-$home}"; then
      (
        for procs in CONTROL/cgroup/*/case-$n/cgroup.procs; do
          [ -e "$procs" ] || continue
          echo 0 >"$procs" || exit 125
        done
        HOME=$home TMPDIR=$home exec unshare --ipc --net --setgid="$uid" --setuid="$uid" -- "$@"
      ) >"CONTROL/$n.out" <"CONTROL/$n.in" 2>"CONTROL/$n.err"
      status=$?
    else
      status=126
    fi
    echo "$status" >"CONTROL/$n.status"
    cd /
    umount -l "$home" && rmdir "$home"
  ) &
done
""".replace("CONTROL", CONTROL)
    .replace("HOMEBYTES", str(CASE_HOME_BYTES))
    .replace("HOMEFILES", str(CASE_HOME_FILES))
)


def warm_usable(spec: JailSpec) -> bool:
    """True when ``spec``'s candidates can run in a warm jail (root, bubblewrap, read-only)."""
    return (
        os.geteuid() == 0
        and not spec.writable
        and shutil.which("unshare") is not None
        and resolve_isolation(spec.isolation) == "bubblewrap"
    )


class _CaseProcess:
    """What the runner asks of a case's process: its pipes and, once it ended, its status."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO, status_path: Path) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self._status_path = status_path
        self._status: int | None = None
        self.stopped = False

    @property
    def returncode(self) -> int | None:
        """The exit status; once the case was stopped, waited for (at most STATUS_SECONDS)."""
        if self._status is None and self.stopped:
            self.wait(STATUS_SECONDS)
        return self._status

    def poll(self) -> int | None:
        """The exit status when the shell has written it, else None."""
        if self._status is None:
            try:
                text = self._status_path.read_bytes()[:16]
            except OSError:
                return None
            if text.endswith(b"\n") and text.strip().isdigit():
                self._status = int(text)
        return self._status

    def wait(self, timeout: float) -> int | None:
        """The exit status, waiting at most ``timeout`` seconds for it (None if not yet)."""
        deadline = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        return self._status


class WarmCase:
    """One case's candidate in a warm jail; the same interface the runner uses for a jail."""

    def __init__(
        self,
        jail: WarmJail,
        number: int,
        uid: int,
        process: _CaseProcess,
        cgroup: Cgroup | None = None,
    ) -> None:
        self.jail = jail
        self.number = number
        self.uid = uid
        self.process = process
        self.stderr_path = jail.control / f"{number}.err"
        self.cgroup = cgroup

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for the group's memory limit."""
        return self.cgroup.oom_kills() if self.cgroup is not None else 0

    def stop(self) -> None:
        """Kill every process of the case's uid and close the pipes.

        The exit status is read when asked for (``process.returncode``): the
        runner wants it only for a crash, and the shell writes it a moment later.
        """
        kill_uid(self.uid)
        self.process.stopped = True
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()

    def discard(self) -> None:
        """Remove the case's control files and control group (the shell removes its home)."""
        self.jail.forget(self.number)
        if self.cgroup is not None:
            self.cgroup.remove()


class WarmJail:
    """A sandbox kept for one pool slot's cases (module docstring)."""

    def __init__(self, argv: list[str], spec: JailSpec, *, cgroup: bool = False) -> None:
        """``cgroup``: bound each case's memory in a control group where one can be made."""
        self.argv = list(argv)
        self.spec = spec
        layout = cgroup_layout() if cgroup else None
        self._group: Cgroup | None = None
        """The slot's group: the sandbox's own group and every case's are below it."""
        self._sandbox_group: Cgroup | None = None
        if layout is not None:
            self._group = Cgroup.make(layout, new_name("slot"), None, None, nest=True)
            try:
                self._sandbox_group = Cgroup.make(layout, "sandbox", None, None, parent=self._group)
            except OSError:
                self._group.remove()
                raise
        self._lock = threading.Lock()
        self._next = 0
        self._sandbox: subprocess.Popen[bytes] | None = None
        self._tmp: int | None = None
        """The sandbox's /tmp, open (immune to the sandbox's pid being reused)."""
        self._init: int | None = None
        """A pidfd of the sandbox's first process: it exits once all in the sandbox are gone."""
        self.control = Path(tempfile.mkdtemp(prefix="playproof-warm-"))
        self.control.chmod(0o700)

    def _start_sandbox(self) -> None:
        """Start the sandbox and its shell; wait until it says it is ready."""
        group = self._group
        binds = (
            tuple((path, f"{CONTROL}/cgroup/{index}") for index, path in enumerate(group.paths))
            if group is not None
            else ()
        )
        prefix = _bwrap_prefix(
            self.spec,
            None,
            privileged=True,
            tmp_mode="0755",
            control=(self.control, CONTROL),
            binds=binds,
            cgroup_namespace=group is None,
        )
        workdir = str(self.spec.workdir) if self.spec.workdir is not None else ""
        info_read, info_write = os.pipe()
        command = [
            *_prlimit_prefix(self.spec.limits, 0),
            prefix[0],
            "--info-fd",
            str(info_write),
            *prefix[1:],
            "/bin/sh",
            "-c",
            LAUNCHER,
            "sh",
            workdir,
            *self.argv,
        ]
        if self._sandbox_group is not None:
            command = join_command(self._sandbox_group, command)
        try:
            sandbox = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                start_new_session=True,
                pass_fds=(info_write,),
            )
        finally:
            os.close(info_write)
        try:
            info = _read_bounded(info_read, READY_SECONDS)
            assert sandbox.stdout is not None
            ready = _read_line(sandbox.stdout.fileno(), READY_SECONDS)
            pid = int(json.loads(info)["child-pid"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _end(sandbox)
            raise OSError(f"the warm jail did not start: {exc}") from None
        finally:
            os.close(info_read)
        init: int | None = None
        try:
            if ready != b"ready":
                raise OSError("its shell did not say ready")
            init = os.pidfd_open(pid)
            tmp = os.open(f"/proc/{pid}/root/tmp", os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            _end(sandbox, init)
            if init is not None:
                os.close(init)
            raise OSError(f"the warm jail did not start: {exc}") from None
        self._close_handles()
        self._sandbox, self._tmp, self._init = sandbox, tmp, init

    def start(self, lane: int) -> WarmCase:
        """Start the candidate for one case as lane ``lane``'s uid; OSError if it cannot start."""
        uid = JAIL_UID_BASE + lane
        with self._lock:
            if self._sandbox is None or self._sandbox.poll() is not None:
                if self._sandbox is not None:
                    _end(self._sandbox, self._init)
                self._start_sandbox()
            assert self._sandbox is not None
            assert self._tmp is not None
            self._next += 1
            number = self._next
            sandbox, tmp = self._sandbox, self._tmp
        kill_uid(uid)  # nothing of an earlier case may count against this one's limits
        group: Cgroup | None = None
        try:
            if self._group is not None:
                limits = self.spec.limits
                tasks = limits.processes + CGROUP_TASK_HEADROOM
                group = Cgroup.make(
                    self._group.layout,
                    f"case-{number}",
                    limits.total_memory_bytes,
                    tasks,
                    parent=self._group,
                )
            return self._start_case(sandbox, tmp, number, uid, group)
        except BaseException:
            # The shell's fork may be left waiting on a FIFO: a new sandbox for the next
            # case. It is ended (everything in it gone) before the case's files go.
            with self._lock:
                init = self._init if self._sandbox is sandbox else None
                if self._sandbox is sandbox:
                    self._sandbox = None
            _end(sandbox, init)
            with self._lock:
                if self._sandbox is None:
                    self._close_handles()
            self.forget(number)
            if group is not None:
                group.remove()
            raise

    def _start_case(
        self,
        sandbox: subprocess.Popen[bytes],
        tmp: int,
        number: int,
        uid: int,
        group: Cgroup | None,
    ) -> WarmCase:
        stdin_path, stdout_path = self.control / f"{number}.in", self.control / f"{number}.out"
        status_path = self.control / f"{number}.status"
        os.mkfifo(stdin_path, 0o600)
        os.mkfifo(stdout_path, 0o600)
        os.mkdir(str(number), 0o700, dir_fd=tmp)
        os.chown(str(number), uid, uid, dir_fd=tmp, follow_symlinks=False)
        assert sandbox.stdin is not None
        sandbox.stdin.write(b"%d %d\n" % (number, uid))
        sandbox.stdin.flush()
        # The fork opens its stdout, then its stdin (the shell's redirections go left
        # to right). Our read side first, at once; then our write side, which opens
        # only once the fork has opened its stdin: by then its stdout is open, so a
        # read never sees an end of file before the candidate has even started.
        reader = os.open(stdout_path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            writer = _open_writer(stdin_path, OPEN_SECONDS, sandbox, status_path)
        except BaseException:
            os.close(reader)
            raise
        os.set_blocking(reader, True)
        process = _CaseProcess(
            os.fdopen(writer, "wb", buffering=0), os.fdopen(reader, "rb", buffering=0), status_path
        )
        return WarmCase(self, number, uid, process, group)

    def forget(self, number: int) -> None:
        """Remove case ``number``'s control files (and its folder, if never mounted on).

        The shell may write the case's status file a moment after this (a killed
        candidate's fork writes it once it has waited): such late files go with
        the control folder when the jail closes. The shell unmounts and removes the
        case's home itself after the status; only a folder it never mounted on (the
        case did not start) is still empty here. A mounted one is never walked: its
        unmount frees it at once, while removing it file by file costs seconds.
        """
        with self._lock:
            if self._tmp is not None:
                with contextlib.suppress(OSError):
                    os.rmdir(str(number), dir_fd=self._tmp)
        for suffix in ("in", "out", "err", "status"):
            with contextlib.suppress(OSError):
                (self.control / f"{number}.{suffix}").unlink()

    def close(self) -> None:
        """End the sandbox and everything in it; remove the control folder."""
        with self._lock:
            sandbox, self._sandbox = self._sandbox, None
            init = self._init
        if sandbox is not None:
            _end(sandbox, init)
        with self._lock:
            self._close_handles()
        remove_tree(self.control)
        if self._group is not None:
            self._group.remove()  # the sandbox's group and any case's left below it
            self._group = None

    def _close_handles(self) -> None:
        for name in ("_tmp", "_init"):
            handle = getattr(self, name)
            if handle is not None:
                os.close(handle)
                setattr(self, name, None)


def _end(sandbox: subprocess.Popen[bytes], init: int | None = None) -> None:
    """Kill the sandbox; with its first process's pidfd, wait until all in it are gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sandbox.pid, signal.SIGKILL)
    if init is not None:
        # Its own session (bubblewrap's --new-session): killed through the pidfd, and
        # it exits only after every process of its namespace is gone.
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(init, signal.SIGKILL)
        with contextlib.suppress(OSError):
            readable([init], SWEEP_SECONDS)
    with contextlib.suppress(subprocess.TimeoutExpired):
        sandbox.wait(timeout=SWEEP_SECONDS)
    for stream in (sandbox.stdin, sandbox.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _wait_readable(fd: int, deadline: float) -> None:
    """Return once ``fd`` has something to read (or its end); OSError past ``deadline``."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise OSError("timed out")
        if readable([fd], remaining):
            return


def _read_bounded(fd: int, seconds: float) -> bytes:
    """Everything written to ``fd`` until its writer closes it (at most MAX_INFO_BYTES)."""
    deadline = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_INFO_BYTES:
        _wait_readable(fd, deadline)
        chunk = os.read(fd, MAX_INFO_BYTES + 1)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise OSError("bubblewrap's information is too long")


def _read_line(fd: int, seconds: float) -> bytes:
    """One line from ``fd`` (without its newline), read a byte at a time (at most 64)."""
    deadline = time.monotonic() + seconds
    line = b""
    while len(line) < 64:
        _wait_readable(fd, deadline)
        byte = os.read(fd, 1)
        if not byte:
            raise OSError("the shell ended")
        if byte == b"\n":
            return line
        line += byte
    raise OSError("the shell's first line is too long")


def _open_writer(path: Path, seconds: float, sandbox: subprocess.Popen[bytes], status: Path) -> int:
    """Open FIFO ``path`` for writing once the shell's fork opened it for reading.

    OSError when the sandbox ended, the fork ended first (``status`` written:
    it could not enter the working directory) or ``seconds`` passed.
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if sandbox.poll() is not None or status.exists() or time.monotonic() > deadline:
                raise OSError("the warm jail did not start the candidate") from None
            time.sleep(0.0002)
            continue
        os.set_blocking(fd, True)
        return fd
