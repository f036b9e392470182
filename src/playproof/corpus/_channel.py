"""A served task: the agent's shell as its own user, the grader behind a narrow channel.

In a served task two identities work side by side:

- the **grader** (root, running ``playproof task serve``) owns the task
  folder's ``.playproof`` (grader key, signed reward state; mode 0700), reads
  the answers, builds and grades in the jails, and writes ``last.tsv`` and
  ``prev.tsv``;
- the **agent** (an unprivileged uid of its own) owns the workspace and
  nothing else, and runs its commands through ``playproof task shell``: a
  bubblewrap sandbox under the agent's uid with a fresh process table, the
  system's folders, the task folder read-only (its workspace writable), and an
  empty folder wherever the grader's secrets would show: ``.playproof``, the
  answers, the package's corpus data, PyBoy.

The one way from the agent to the grader is the task's ``grader.sock``: a
Unix socket the grader listens on. It takes one JSON line of at most
:data:`~playproof.corpus.task_client.MAX_REQUEST_BYTES` (``run-tests`` with an
optional failure filter, or ``progress``), only from the agent's uid (checked
with ``SO_PEERCRED``), read within :data:`REQUEST_SECONDS`, and answers one
JSON line: the same bounded feedback ``run-tests --json`` prints. A request
names no path, key or case: there is nothing else to ask for.

As an ordinary user none of this can hold: the agent would be the grader's
own user and could read its key and answers. :func:`prepare_served_task`
refuses then, unless the operator accepts that every grade is recorded
untrusted (reward 0).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playproof._atomic import write_atomic
from playproof.core.canonical import parse_json
from playproof.corpus._hiding import answers_files
from playproof.corpus._jail import JailLimits, JailSpec, bubblewrap_command, bubblewrap_usable
from playproof.corpus._runtime import reference_paths
from playproof.corpus._shipped import DATA
from playproof.corpus._task import (
    MAX_LISTED_FAILURES,
    PRIVATE_FOLDER,
    TaskSpec,
    load_task,
    task_answers_path,
    task_progress,
    task_run_tests,
)
from playproof.corpus._trees import give_tree
from playproof.corpus.task_client import (
    MAX_FILTER_CHARS,
    MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES,
    SOCKET_NAME,
)
from playproof.errors import FormatError, NotSupportedError, PlayproofError, RunError

__all__ = [
    "CLIENT_NAME",
    "REQUEST_SECONDS",
    "ServedTask",
    "TaskFailure",
    "TaskReply",
    "TaskReplyReport",
    "TaskRequest",
    "agent_shell_command",
    "prepare_served_task",
    "resolve_agent",
]

REQUEST_SECONDS = 5.0
"""How long the grader waits for a request line once a client connected."""
ACCEPT_POLL_SECONDS = 0.2
"""How often the serving loop looks at its stop flag while no client connects."""
CLIENT_NAME = "run-tests"
"""The standard-library client the set-up copies into the task folder."""
MAX_LOG_CHARS = 4000
"""Build log characters a reply carries (its end)."""
_CHECK_SECONDS = 10.0


class TaskRequest(BaseModel):
    """One request from the agent: run the tests (optionally listing fewer failures) or progress."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    format: Literal[1] = 1
    op: Literal["run-tests", "progress"]
    filter: Annotated[str, Field(max_length=MAX_FILTER_CHARS)] | None = None


class TaskFailure(BaseModel):
    """One failing case as the feedback shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: Annotated[str, Field(max_length=300)]
    reason: Annotated[str, Field(max_length=600)]


class TaskReplyReport(BaseModel):
    """The bounded feedback: what ``task run-tests --json`` prints, nothing more."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["graded", "build-failed", "grading-timed-out", "built", "progress"]
    passed: Annotated[int, Field(ge=0)]
    denominator: Annotated[int, Field(ge=0)]
    reward: int = 0
    cumulative: int = 0
    finished: bool = False
    trusted: bool = True
    failures: Annotated[list[TaskFailure], Field(max_length=MAX_LISTED_FAILURES)] = []
    build_log: Annotated[str, Field(max_length=MAX_LOG_CHARS)] = ""


class TaskReply(BaseModel):
    """The grader's one reply line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    ok: bool
    op: Literal["run-tests", "progress"] | None = None
    error: Annotated[str, Field(max_length=600)] | None = None
    report: TaskReplyReport | None = None


def resolve_agent(name: str) -> int:
    """The agent's uid from a user name or a number; never root."""
    import pwd

    if name.isdigit():
        uid = int(name)
    else:
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            raise RunError(
                f"no user {name!r}: create it (useradd --system {name}) or give a numeric uid"
            ) from None
    if uid == 0:
        raise RunError("the agent cannot be root: give an unprivileged user of its own")
    return uid


def _readable_by(uid: int, paths: list[str]) -> list[str]:
    """Which of ``paths`` ``uid`` could read (a shell tests them as that uid)."""
    if not paths:
        return []
    script = 'for p do if [ -r "$p" ]; then printf "%s\\n" "$p"; fi; done'
    done = subprocess.run(
        ["sh", "-c", script, "sh", *paths],
        user=uid,
        group=uid,
        extra_groups=[],
        capture_output=True,
        timeout=_CHECK_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        return paths  # could not tell: count them all as readable
    return done.stdout.decode("utf-8", errors="replace").splitlines()


def prepare_served_task(folder: Path, agent: int, *, same_user: bool = False) -> str | None:
    """Make ``folder`` a served task for agent uid ``agent``; the untrusted reason, if any.

    As root: the grader owns the task folder, its files and ``.playproof``
    (0700); the agent owns the workspace; the client is copied in. Refused
    (fail closed) when the agent's uid could still read a secret: the grader
    key, the reward state or the task's answers, or the package's shipped
    answers where no bubblewrap shell can cover them. As an ordinary user:
    refused unless ``same_user``, and then every grade is untrusted.
    """
    folder = folder.resolve()
    spec = load_task(folder)
    private = folder / PRIVATE_FOLDER
    if os.geteuid() != 0:
        if not same_user:
            raise NotSupportedError(
                "serving a task to an agent of its own needs root (to run the agent as "
                "another user); as an ordinary user the agent could read the grader key and "
                "the answers. Run as root, or pass --same-user to serve with every grade "
                "untrusted (reward 0)"
            )
        private.mkdir(mode=0o700, exist_ok=True)
        _install_client(folder)
        return "served as the grader's own user: the agent could read the grader's secrets"
    if agent == os.geteuid():
        raise RunError("the agent's uid must differ from the grader's")
    # The folder first: once it is the grader's (0755), nobody else can add, rename or
    # remove a name in it, so the names checked below stay what they were checked as.
    os.chown(folder, 0, 0)
    folder.chmod(0o755)
    if private.is_symlink() or (private.exists() and not private.is_dir()):
        raise RunError(
            f"{private} is a link or not a folder (planted before serving?); remove it and "
            "serve again"
        )
    _refuse_agents_configuration(folder, spec, agent)
    spec = load_task(folder)  # as it is now that the agent can no longer replace it
    private.mkdir(mode=0o700, exist_ok=True)
    os.chown(private, 0, 0, follow_symlinks=False)
    private.chmod(0o700)
    _refuse_planted(private, agent)
    _install_client(folder)
    for name in ("task.json", "INSTRUCTIONS.md", "PROTOCOL.md", "last.tsv", "prev.tsv"):
        path = folder / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise RunError(
                f"{path} is a link or not a file (planted before serving?); remove it and "
                "serve again"
            )
        if path.is_file() and not path.is_symlink():
            os.chown(path, 0, 0)
            path.chmod(0o644)
    named = folder / spec.workspace
    if named.is_symlink() or (named.exists() and not named.is_dir()):
        raise RunError(
            f"the workspace {named} is a link or not a folder (planted before serving?); "
            "remove it and serve again"
        )
    workspace = named.resolve()
    if workspace.parent != folder:
        raise RunError(f"the workspace {workspace} must be a folder directly in the task folder")
    workspace.mkdir(exist_ok=True)
    give_tree(workspace, agent)  # by descriptor: the agent may be changing it meanwhile
    answers = task_answers_path(folder)
    if answers.is_relative_to(folder):
        os.chown(answers, 0, 0)
        answers.chmod(0o600)
    secrets = [str(p) for p in sorted(private.rglob("*")) if p.is_file()]
    # A shipped corpus's answers lie in the package: the agent's shell covers those.
    shipped_answers = answers.is_relative_to(DATA.resolve())
    readable = _readable_by(agent, [*secrets, *([] if shipped_answers else [str(answers)])])
    if readable:
        raise RunError(
            f"the agent's uid {agent} could read {readable[0]}; make it readable to the "
            "grader only (chmod o-rwx on it or a folder above) before serving"
        )
    shipped = _readable_by(agent, answers_files(()))
    if shipped and not bubblewrap_usable():
        raise RunError(
            f"the agent's uid {agent} could read the shipped answers in {shipped[0]} and "
            "bubblewrap cannot start the agent's shell that covers them; install bubblewrap "
            "(scripts/system-deps.sh) or make them unreadable to other users"
        )
    return None


def _refuse_agents_configuration(folder: Path, spec: TaskSpec, agent: int) -> None:
    """Refuse a ``task.json``, or a manifest, answers file or controller key it names, that
    the agent's uid owns: edited while the agent owned the task folder, it could name the
    agent's own corpus and key, and a corpus the agent signed would grade trusted."""
    named = [spec.manifest, spec.answers, spec.controller_key]
    for path in [folder / "task.json", *(folder / name for name in named if name)]:
        with contextlib.suppress(FileNotFoundError):
            if agent in (os.lstat(path).st_uid, os.stat(path).st_uid):
                raise RunError(
                    f"{path} is the agent's (edited before serving?); the task's "
                    "configuration must be the grader's: write it again as the grader and "
                    "serve again"
                )


def _refuse_planted(private: Path, agent: int) -> None:
    """Refuse a ``.playproof`` holding a link, a special file or anything the agent's uid
    owns: planted while the agent owned the task folder (its own key and a reward state it
    signed, or a link where the grader writes), it would be graded from or written through."""
    for path in sorted(private.rglob("*")):  # rglob never enters a linked folder
        info = path.lstat()
        if (
            stat.S_ISLNK(info.st_mode)
            or not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode))
            or info.st_uid == agent
        ):
            raise RunError(
                f"{path} is a link, a special file or the agent's (planted before serving?); "
                f"the grader's history there cannot be trusted: delete {private} to start a "
                "new history from zero, and serve again"
            )


def _install_client(folder: Path) -> None:
    """Copy the standard-library client into the task folder as ``run-tests``."""
    from playproof.corpus import task_client

    source = Path(task_client.__file__).read_bytes()
    target = folder / CLIENT_NAME
    # Created afresh, never through a link planted at the temporary name.
    write_atomic(target, b"#!/usr/bin/env python3\n" + source, mode=0o755)
    descriptor = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(descriptor, 0o755)  # what the umask took off
    finally:
        os.close(descriptor)


def agent_shell_command(
    folder: Path, agent: int, command: list[str], *, binds: tuple[Path, ...] = ()
) -> list[str]:
    """The argv that runs ``command`` as the agent, in its shell's sandbox (see the module).

    ``binds`` are further folders shown read-only (the agent's tools: a Rust
    toolchain, an editor). Whatever they show, the grader's secrets, the
    package's corpus data and PyBoy stay covered.
    """
    if not bubblewrap_usable():
        raise NotSupportedError(
            "the agent's shell needs bubblewrap (scripts/system-deps.sh): without it the "
            "shipped answers and the grader's packages cannot be covered"
        )
    folder = folder.resolve()
    spec = load_task(folder)
    workspace = (folder / spec.workspace).resolve()
    jail = JailSpec(
        read_only=(folder, *(b.resolve() for b in binds)),
        writable=(workspace,),
        hidden=(folder / PRIVATE_FOLDER, *reference_paths()),
        secret=(task_answers_path(folder),),
        limits=JailLimits(),
        isolation="bubblewrap",
        env={"PLAYPROOF_TASK": str(folder), "PATH": f"{folder}:/usr/local/bin:/usr/bin:/bin"},
        workdir=workspace,
    )
    return [*bubblewrap_command(jail, agent), *command]


def _readable_to_all(path: Path) -> None:
    """Make the regular file ``path`` mode 0644, never through a link (one planted at a
    results name could point at the answers); a link or a missing file is left alone."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.fchmod(descriptor, 0o644)
    finally:
        os.close(descriptor)


def _peer_uid(connection: socket.socket) -> int:
    raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


class ServedTask:
    """The grader's end of the channel: one task folder, one agent uid, one request at a time."""

    def __init__(self, folder: Path, agent: int, *, untrusted: str | None = None) -> None:
        self.folder = folder.resolve()
        self.agent = agent
        self.untrusted = untrusted
        self.path = self.folder / SOCKET_NAME
        self._listener: socket.socket | None = None

    def open(self) -> None:
        """Listen on the task's ``grader.sock`` (replacing a stale one)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        # Anyone may connect; only the agent's uid (and the grader's) gets an answer.
        self.path.chmod(0o666)
        listener.listen(8)
        listener.settimeout(ACCEPT_POLL_SECONDS)
        self._listener = listener

    def close(self) -> None:
        """Stop listening and remove the socket."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def serve(self, stop: threading.Event) -> None:
        """Answer requests until ``stop`` is set."""
        if self._listener is None:
            self.open()
        assert self._listener is not None
        while not stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            with connection:
                reply = self.handle(connection)
                line = reply.model_dump_json(exclude_none=True).encode("utf-8") + b"\n"
                with contextlib.suppress(OSError):
                    connection.settimeout(REQUEST_SECONDS)
                    connection.sendall(line[:MAX_REPLY_BYTES])

    def handle(self, connection: socket.socket) -> TaskReply:
        """Read one request from ``connection`` and carry it out; the reply to send."""
        uid = _peer_uid(connection)
        if uid not in (self.agent, os.geteuid()):
            return TaskReply(ok=False, error=f"uid {uid} is not this task's agent")
        try:
            request = self._read(connection)
        except ValueError as exc:
            return TaskReply(ok=False, error=str(exc)[:600])
        try:
            return TaskReply(ok=True, op=request.op, report=self._carry_out(request))
        except PlayproofError as exc:
            return TaskReply(ok=False, op=request.op, error=str(exc)[:600])
        except OSError as exc:
            # A full disk, a file the agent removed mid-build: this request fails, the
            # grader goes on serving (the reward state is written atomically or not at all).
            error = f"the grader could not finish this request: {exc.strerror or exc}"
            return TaskReply(ok=False, op=request.op, error=error[:600])

    def _read(self, connection: socket.socket) -> TaskRequest:
        deadline = time.monotonic() + REQUEST_SECONDS
        data = bytearray()
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ValueError(f"no whole request line within {REQUEST_SECONDS:g} s")
            connection.settimeout(left)
            try:
                chunk = connection.recv(MAX_REQUEST_BYTES + 1 - len(data))
            except TimeoutError:
                continue
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_REQUEST_BYTES:
                raise ValueError(f"a request is one line of at most {MAX_REQUEST_BYTES} bytes")
        try:
            text = bytes(data).split(b"\n", 1)[0].decode("utf-8")
            # Nesting past the recursion limit, NaN and repeated keys are refused, not raised.
            parsed = parse_json(text, limit=MAX_REQUEST_BYTES, what="the request")
            return TaskRequest.model_validate(parsed)
        except (UnicodeDecodeError, FormatError, ValidationError) as exc:
            if isinstance(exc, ValidationError):
                first = str(exc.errors()[0]["msg"])
            else:
                first = str(exc)[:200] if isinstance(exc, FormatError) else "not UTF-8"
            raise ValueError(f"not a request: {first}") from None

    def _carry_out(self, request: TaskRequest) -> TaskReplyReport:
        if request.op == "progress":
            passed, total, cumulative, _ = task_progress(self.folder)
            return TaskReplyReport(
                status="progress", passed=passed, denominator=total, cumulative=cumulative
            )
        report = task_run_tests(
            self.folder, failure_filter=request.filter, untrusted=self.untrusted
        )
        for name in ("last.tsv", "prev.tsv"):
            _readable_to_all(self.folder / name)
        entry = report.entry
        return TaskReplyReport(
            status=entry.status,
            passed=entry.passed,
            denominator=report.denominator,
            reward=entry.reward,
            cumulative=report.cumulative,
            finished=entry.finished,
            trusted=entry.trusted,
            failures=[
                TaskFailure(case_id=r.case_id[:300], reason=r.reason[:600]) for r in report.failures
            ],
            build_log=report.build_log[-MAX_LOG_CHARS:] if entry.status != "graded" else "",
        )
