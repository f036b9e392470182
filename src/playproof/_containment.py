"""Containment of started programs: nothing an agent or a worker child spawns outlives it.

A process group is not enough: a program that forks twice and calls
``setsid`` leaves its group, and a group kill misses it. So, where the system
allows it, every program playproof starts runs as the only child of a small
init (``/bin/sh``) that is process 1 of a PID namespace of its own, made by
util-linux ``unshare``::

    unshare --pid --mount-proc --fork --kill-child  sh -c '"$@"; exit $?' sh  PROGRAM ARGS...

When that init exits -- because the program exited, or because the outer
``unshare`` was killed (``--kill-child`` passes the kill on) -- the kernel
kills every process left in the namespace, however it detached. The program
itself is process 2: its signals behave as usual (process 1 ignores the
signals it has no handler for), and ``/proc`` is remounted so the process ids
it sees are its own. As root no user namespace is needed; an ordinary user
gets one that maps the user and group to themselves.

Where none of this works (no ``unshare``, namespaces refused, not Linux),
programs start in a process group of their own as before, one
:class:`ContainmentWarning` says so, and :attr:`Launcher.kind` is
``"process-group"`` so that provenance never claims a containment that is not
there. Which mechanism works is a fact about the machine and the user, probed
once per process (one short run of the real launch command) and remembered.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "PROBE_TIMEOUT_S",
    "ContainmentKind",
    "ContainmentWarning",
    "Launcher",
    "containment",
    "describe_exit",
    "known_containment",
    "probe",
    "resolve_program",
]

ContainmentKind = Literal["pid-namespace", "process-group"]

PROBE_TIMEOUT_S = 10.0
"""How long one probe run of the launch command may take before it counts as failed."""
_PROBE_STDERR_BYTES = 400
"""How much of a failed probe's stderr the fallback warning quotes."""
_INIT_SHELL = "/bin/sh"
# The init: run the program as its child (the trailing exit keeps the shell from
# exec'ing it, which would make the program process 1 again) and exit with its status.
_INIT_SCRIPT = '"$@"; exit $?'
# The probe's program checks that it runs as the child of the namespace's init.
_PROBE_PROGRAM = (_INIT_SHELL, "-c", 'test "$PPID" = 1')
_NAMESPACE_FLAGS = ("--fork", "--kill-child")


class ContainmentWarning(RuntimeWarning):
    """Started programs fall back to a process group: a double fork plus setsid escapes it."""


@dataclass(frozen=True)
class Launcher:
    """How programs are started here: the argv prefix of the containment, or none."""

    kind: ContainmentKind
    prefix: tuple[str, ...] = ()
    """``unshare ... sh -c SCRIPT sh``; the program's argv follows it."""
    pdeathsig: tuple[str, ...] = ()
    """``setpriv --pdeathsig KILL`` where it works: the launcher then dies with its parent."""
    reason: str = ""
    """Why programs are not contained (empty when they are)."""

    @property
    def contained(self) -> bool:
        """True when a program's descendants die with it whatever they do."""
        return self.kind == "pid-namespace"

    def command(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None = None,
        die_with_parent: bool = False,
    ) -> list[str]:
        """The argv that starts ``argv`` here (``FileNotFoundError`` when it names no program).

        ``die_with_parent`` also kills the launcher when the thread that starts
        it exits (Linux parent-death signal): request it only from the main thread.
        """
        if not self.contained:
            return list(argv)
        # The init shell would run a builtin or function of the same name: give it a path.
        program = resolve_program(argv[0], env, cwd)
        outer = self.pdeathsig if die_with_parent else ()
        return [*outer, *self.prefix, program, *argv[1:]]


def resolve_program(
    name: str, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None = None
) -> str:
    """``name`` as ``exec`` would find it (on the PATH of ``env`` unless it has a slash).

    A name that finds no executable file raises the ``OSError`` that ``exec``
    would, so a missing agent is reported before any launcher starts.
    """
    if os.sep in name:
        where = os.path.join(os.fspath(cwd), name) if cwd is not None else name
        if not os.path.isfile(where):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
        if not os.access(where, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
        return name
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    found = shutil.which(name, path=path)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "not found on PATH", name)
    return os.path.abspath(found)


def describe_exit(status: int | None, *, contained: bool) -> str:
    """A program's end in words: ``exited with status 3``, ``was killed by SIGKILL``.

    A contained program's status comes through the init shell, which reports a
    death by signal ``N`` as status ``128 + N``; the signal is named alongside.
    """
    if status is None:
        return "did not exit"
    if status < 0:
        return f"was killed by {_signal_name(-status)}"
    text = f"exited with status {status}"
    if contained and status > 128 and _is_signal(status - 128):
        text += f" (128 + {_signal_name(status - 128)})"
    return text


def _is_signal(number: int) -> bool:
    return number in {int(sig) for sig in signal.Signals}


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


Runner = Callable[[Sequence[str]], tuple[int | None, str]]
"""Runs a probe command: its exit status (None when it could not run in time) and stderr."""


def _run_probe(argv: Sequence[str]) -> tuple[int | None, str]:
    with tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            return None, str(exc)
        try:
            status: int | None = process.wait(PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None, f"no answer within {PROBE_TIMEOUT_S} s"
        err.seek(0)
        return status, err.read(_PROBE_STDERR_BYTES).decode("utf-8", errors="replace").strip()


def _candidates() -> list[tuple[str, ...]]:
    """The ``unshare`` flag sets to try, best first."""
    as_self = (
        "--user",
        f"--map-user={os.geteuid()}",
        f"--map-group={os.getegid()}",
    )
    mounts_proc = ("--pid", "--mount-proc", *_NAMESPACE_FLAGS)
    host_proc = ("--pid", *_NAMESPACE_FLAGS)
    if os.geteuid() == 0:
        return [mounts_proc, (*as_self, *mounts_proc), host_proc, (*as_self, *host_proc)]
    return [(*as_self, *mounts_proc), (*as_self, *host_proc)]


def probe(run: Runner = _run_probe) -> Launcher:
    """Find the best containment that works here by running the launch command once per try."""
    if not sys.platform.startswith("linux"):
        return Launcher("process-group", reason="PID namespaces are a Linux feature")
    unshare = shutil.which("unshare")
    if unshare is None or not os.access(_INIT_SHELL, os.X_OK):
        return Launcher("process-group", reason=f"util-linux unshare or {_INIT_SHELL} is missing")
    reason = ""
    for flags in _candidates():
        prefix = (unshare, *flags, _INIT_SHELL, "-c", _INIT_SCRIPT, "sh")
        status, err = run([*prefix, *_PROBE_PROGRAM])
        if status == 0:
            return Launcher("pid-namespace", prefix, _pdeathsig_prefix(prefix, run))
        reason = err or f"unshare exited with status {status}"
    return Launcher("process-group", reason=reason)


def _pdeathsig_prefix(prefix: tuple[str, ...], run: Runner) -> tuple[str, ...]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return ()
    outer = (setpriv, "--pdeathsig", "KILL")
    status, _ = run([*outer, *prefix, *_PROBE_PROGRAM])
    return outer if status == 0 else ()


_lock = threading.Lock()
_chosen: list[Launcher] = []  # the probe's answer for this process (a fact about the machine)


def known_containment() -> Launcher | None:
    """The containment already probed in this process, without probing."""
    return _chosen[0] if _chosen else None


def containment() -> Launcher:
    """The containment used here: probed on first use, then remembered; warns once on fallback."""
    with _lock:
        if not _chosen:
            launcher = probe()
            _chosen.append(launcher)
            if not launcher.contained:
                warnings.warn(
                    "programs started by playproof run in a process group only "
                    f"({launcher.reason}); a program that forks twice and calls setsid can "
                    "outlive its agent or worker. Install util-linux and allow PID "
                    "(or unprivileged user) namespaces to contain them",
                    ContainmentWarning,
                    stacklevel=3,
                )
        return _chosen[0]
