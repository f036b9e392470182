"""A served task: from the agent's own user, every way to the answers fails; run-tests works.

The grader (this test process, root) serves a CHIP-8 task over its
``grader.sock``; the agent runs as a uid of its own through ``task shell``.
Each attack below is what an agent would try: read the files, the grader's
``/proc``, the environment, the socket with forged requests, ptrace, and the
installed package. None reaches an answer; the channel still grades and
updates the signed reward state.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from controllers import synthetic, synthetic_task
from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.corpus import (
    bubblewrap_usable,
    load_answers,
    load_manifest,
    reference_candidate,
    shipped_paths,
)
from playproof.corpus._channel import (
    ServedTask,
    TaskRequest,
    agent_shell_command,
    prepare_served_task,
)
from playproof.corpus._jail import JailSpec, reserve_lanes
from playproof.corpus._reward import RewardState, load_state, save_state
from playproof.corpus._runtime import grader_library_paths
from playproof.corpus._task import TaskSpec, init_task, load_task, task_run_tests
from playproof.corpus._watch import run_build
from playproof.corpus.chip8 import candidate as chip8_candidate
from playproof.corpus.chip8 import machine as chip8_machine
from playproof.corpus.task_client import MAX_REQUEST_BYTES, SOCKET_NAME
from playproof.errors import FormatError, NotSupportedError, RunError
from playproof.sign import SigningKey

as_root_with_bwrap = pytest.mark.skipif(
    os.geteuid() != 0 or not bubblewrap_usable(),
    reason="an agent of its own needs root and bubblewrap",
)
AGENT = 59417
"""The agent's uid (no passwd entry needed; outside the jail lanes' 61000 upward)."""
STRANGER = 59418
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")
needs_system_python = pytest.mark.skipif(
    SYSTEM_PYTHON is None, reason="the agent's shell needs a system python3 for the client"
)


@dataclass
class Served:
    task: Path
    served: ServedTask


def _interpreter(workspace: Path) -> None:
    for module in (chip8_candidate, chip8_machine, reference_candidate):
        source = Path(str(module.__file__))
        (workspace / source.name).write_bytes(source.read_bytes())


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    task = tmp_path / "task"
    spec = TaskSpec(corpus="chip8", candidate=["python3", "candidate.py"], runtime="python")
    init_task(task, spec)
    _interpreter(task / "workspace")
    untrusted = prepare_served_task(task, AGENT)
    assert untrusted is None
    server = ServedTask(task, AGENT)
    server.open()
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        yield Served(task=task, served=server)
    finally:
        stop.set()
        thread.join(timeout=30)
        server.close()


def _shell(
    task: Path, script: str, *args: str, uid: int = AGENT, binds: tuple[Path, ...] = ()
) -> subprocess.CompletedProcess[str]:
    argv = agent_shell_command(task, uid, ["/bin/sh", "-c", script, "sh", *args], binds=binds)
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


@as_root_with_bwrap
@needs_system_python
def test_run_tests_from_the_agents_shell_grades_and_signs_the_reward_state(
    served: Served,
) -> None:
    done = _shell(served.task, "run-tests --json")
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["ok"]
    assert reply["op"] == "run-tests"
    report = reply["report"]
    assert (report["status"], report["passed"], report["denominator"]) == ("graded", 8, 8)
    assert (report["reward"], report["cumulative"], report["trusted"]) == (8, 8, True)
    # The state is the grader's, signed by its key, readable only by the grader.
    private = served.task / ".playproof"
    assert private.stat().st_mode & 0o777 == 0o700
    key = SigningKey.load(private / "grader.pem").verifying_key
    manifest = load_manifest(shipped_paths("chip8")[0])
    state = load_state(private / "reward.json", manifest.digest, manifest.denominator, key)
    assert (state.cumulative, len(state.baseline)) == (8, 8)
    progress = json.loads(_shell(served.task, "run-tests --progress --json").stdout)
    assert progress["report"]["passed"] == 8
    assert "8 of 8 pass" in _shell(served.task, "run-tests").stdout
    # The per-case results are the agent's to read; the workspace is the agent's own.
    assert "1-chip8-logo\t1" in _shell(served.task, "cat ../last.tsv").stdout
    assert (served.task / "workspace").stat().st_uid == AGENT


ATTACKS = r"""
leak() { echo "LEAK $*"; }
for f in ../.playproof/grader.pem ../.playproof/reward.json "$1"; do
    cat "$f" 2>/dev/null | grep -q . && leak "read $f"
done
[ -n "$(ls -A ../.playproof 2>/dev/null)" ] && leak "listed .playproof"
[ -n "$(ls -A "$2" 2>/dev/null)" ] && leak "listed the package's corpus data $2"
marker=$(printf '%s' "$4" | rev)  # given reversed: the shell's own arguments never match
for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -q -F "$marker" &&
        leak "sees the grader as $pid"
    owner=$(stat -c %u /proc/$pid 2>/dev/null)
    [ "$owner" != "$(id -u)" ] && cat /proc/$pid/environ 2>/dev/null | grep -q . &&
        leak "read environ of $pid"
done
cat "/proc/$3/environ" 2>/dev/null | grep -q . && leak "read the grader's environ"
cat "/proc/$3/cmdline" 2>/dev/null | grep -q . && leak "read the grader's cmdline"
known='PATH|HOME|TMPDIR|LANG|OPENBLAS_NUM_THREADS|OMP_NUM_THREADS|PYTHONDONTWRITEBYTECODE'
env | grep -v -E "^($known|PLAYPROOF_TASK|PWD|SHLVL|_)=" | grep . && leak "environment"
python3 -c 'import playproof' 2>/dev/null && leak "imported playproof"
python3 -c 'import pyboy' 2>/dev/null && leak "imported pyboy"
touch ../task.json 2>/dev/null && leak "wrote task.json"
echo done
"""


@as_root_with_bwrap
@needs_system_python
def test_every_way_to_the_answers_fails_from_the_agents_user(served: Served) -> None:
    answers = shipped_paths("chip8")[1]
    grader = Path(f"/proc/{os.getpid()}/cmdline").read_bytes().split(b"\0")[1].decode()
    folder = str(answers.parent.parent)
    done = _shell(served.task, ATTACKS, str(answers), folder, str(os.getpid()), grader[::-1])
    assert done.stdout.strip().endswith("done"), done.stderr
    assert "LEAK" not in done.stdout, done.stdout


PACKAGE_SCAN = r"""
import os, sys
root, secrets = sys.argv[1], sys.argv[2:]
files = 0
for parent, dirs, names in os.walk(root):
    for name in names:
        path = os.path.join(parent, name)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        files += 1
        if name == "answers.json" and data:
            print("LEAK answers file", path)
        for secret in secrets:
            if secret.encode() in data:
                print("LEAK answer", secret[:12], "in", path)
print("scanned", files)
"""


@as_root_with_bwrap
@needs_system_python
def test_the_installed_package_the_agent_sees_holds_no_answers(served: Served) -> None:
    """Even with the grader's whole environment shown (the agent may use playproof)."""
    package = Path(str(sys.modules["playproof"].__file__)).parent
    interpreter = Path(sys.base_prefix)
    binds = (package.parent, Path(sys.prefix), interpreter)
    secrets = []
    for name in ("chip8", "dmg-acid2"):
        manifest_path, answers_path, _ = shipped_paths(name)
        answers = load_answers(answers_path, load_manifest(manifest_path))
        secrets += [a.sha256 for a in answers.answers.values() if hasattr(a, "sha256")]
    script = Path(served.task / "workspace" / "scan.py")
    script.write_text(PACKAGE_SCAN)
    os.chown(script, AGENT, AGENT)
    done = _shell(served.task, 'python3 scan.py "$@"', str(package), *secrets, binds=binds)
    assert "scanned" in done.stdout, done.stderr
    assert int(done.stdout.split("scanned")[-1]) > 100  # it did see the installed package
    assert "LEAK" not in done.stdout, done.stdout
    # PyBoy, the reference, is covered too: nothing to copy into the workspace.
    pyboy = [p for p in grader_library_paths() if p.name == "pyboy"]
    for folder in pyboy:
        listed = _shell(served.task, 'ls -A "$1" | wc -l', str(folder), binds=binds)
        assert listed.stdout.strip() == "0", listed.stdout


FORGE = r"""
import json, socket, sys
def send(data):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect("../grader.sock")
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        reply = b""
        try:
            while chunk := s.recv(65536):
                reply += chunk
        except ConnectionResetError:  # cut off mid-request: nothing more is read
            return {"ok": False, "error": "reset"}
    return json.loads(reply)
for data in [
    b'{"op": "answers"}\n',
    b'{"format": 1, "op": "run-tests", "task": "/elsewhere"}\n',
    b'{"format": 1, "op": "run-tests", "filter": 5}\n',
    b'{"format": 1, "op": "run-tests", "filter": "' + b"x" * 300 + b'"}\n',
    b"x" * 100000 + b"\n",
    b"\xff\xfe\n",
    b"[1, 2]\n",
]:
    print(json.dumps(send(data)))
"""


@as_root_with_bwrap
@needs_system_python
def test_forged_requests_on_the_socket_get_a_refusal_and_nothing_else(served: Served) -> None:
    script = served.task / "workspace" / "forge.py"
    script.write_text(FORGE)
    os.chown(script, AGENT, AGENT)
    done = _shell(served.task, "python3 forge.py")
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == 7, done.stderr
    assert all(not r["ok"] and "report" not in r for r in replies), replies
    assert not (served.task / "last.tsv").exists()  # nothing was graded
    # Another uid than the task's agent is refused by its peer credentials.
    stranger = _shell(served.task, "run-tests --progress", uid=STRANGER)
    assert stranger.returncode == 1
    assert "not this task's agent" in stranger.stdout


@as_root_with_bwrap
@needs_system_python
def test_the_agents_user_cannot_trace_or_read_the_grader_even_outside_its_shell(
    served: Served,
) -> None:
    probe = (
        "import ctypes, os, sys\n"
        "pid = int(sys.argv[1])\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.ptrace(16, pid, 0, 0) == 0: print('LEAK attached')\n"
        "for name in ('environ', 'mem', 'maps'):\n"
        "    try:\n"
        "        open(f'/proc/{pid}/{name}', 'rb').read(64) and print('LEAK', name)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('done')\n"
    )
    assert SYSTEM_PYTHON is not None
    done = subprocess.run(
        ["setpriv", f"--reuid={AGENT}", f"--regid={AGENT}", "--clear-groups", "--",
         SYSTEM_PYTHON, "-I", "-c", probe, str(os.getpid())],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout.strip() == "done", done.stdout + done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
def test_serving_is_refused_while_the_agent_could_read_the_answers(tmp_path: Path) -> None:
    # A world-readable folder chain, as a careless set-up would leave it.
    shared = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        shared.chmod(0o755)
        corpus = synthetic(shared / "corpus", {"calm": b"CALM" + bytes(300)})
        for path in [shared, *shared.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        task = synthetic_task(shared, corpus)
        with pytest.raises(RunError, match=r"could read .*answers"):
            prepare_served_task(task, AGENT)
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_as_an_ordinary_user_serving_fails_closed_or_grades_untrusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(NotSupportedError, match="needs root"):
        prepare_served_task(task, 1000)
    reason = prepare_served_task(task, 1000, same_user=True)
    assert reason is not None
    monkeypatch.undo()
    report = task_run_tests(task, untrusted=reason)
    assert (report.entry.passed, report.entry.reward, report.entry.trusted) == (1, 0, False)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=MAX_REQUEST_BYTES + 100))
def test_any_bytes_on_the_channel_are_a_request_or_a_refusal(data: bytes) -> None:
    server = ServedTask(Path("/nonexistent"), AGENT)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        theirs.sendall(data[: MAX_REQUEST_BYTES + 1])
        theirs.shutdown(socket.SHUT_WR)
        try:
            request: TaskRequest | str = server._read(ours)
        except ValueError as exc:
            request = str(exc)
        assert isinstance(request, str) or request.op in ("run-tests", "progress")


def test_the_client_is_the_standard_library_only() -> None:
    from playproof.corpus import task_client

    source = Path(str(task_client.__file__)).read_text()
    assert "playproof" not in "".join(
        line for line in source.splitlines() if line.startswith(("import", "from"))
    )
    assert SOCKET_NAME == "grader.sock"


@as_root_with_bwrap
def test_playproof_task_commands_use_the_channel_of_a_served_task(served: Served) -> None:
    from typer.testing import CliRunner

    import playproof.cli._corpus  # noqa: F401  (registers the commands)
    from playproof.cli._app import app

    runner = CliRunner()
    progress = runner.invoke(app, ["--json", "task", "progress", "--task", str(served.task)])
    assert progress.exit_code == 0, progress.output
    assert json.loads(progress.output)["report"]["denominator"] == 8
    graded = runner.invoke(app, ["task", "run-tests", "--task", str(served.task)])
    assert graded.exit_code == 0, graded.output
    assert "8 of 8 pass; reward +8" in graded.output


def _exchange(path: Path, data: bytes) -> bytes:
    """Send ``data`` on the task socket at ``path`` and read until the grader closes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
        channel.settimeout(30)
        channel.connect(str(path))
        channel.sendall(data)
        channel.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := channel.recv(65536):
            reply += chunk
    return reply


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 3000 + b"\n",
        b'{"format": 1, "op": "progress", "filter": {"deeper": ' + b"[" * 3000 + b"\n",
        b'{"format": 1, "op": "progress", "op": "run-tests"}\n',
        b'{"format": NaN, "op": "progress"}\n',
    ],
    ids=["deep-array", "deep-object", "repeated-key", "nan"],
)
def test_a_hostile_json_request_is_refused_and_the_grader_keeps_serving(
    tmp_path: Path, data: bytes
) -> None:
    server = ServedTask(tmp_path, os.geteuid())
    server.open()
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        refused = json.loads(_exchange(server.path, data))
        assert not refused["ok"]
        assert "report" not in refused
        assert refused["error"].startswith("not a request: "), refused
        # The grader still answers the next request (this folder holds no task: a refusal).
        after = json.loads(_exchange(server.path, b'{"format": 1, "op": "progress"}\n'))
        assert (after["op"], after["ok"]) == ("progress", False), after
    finally:
        stop.set()
        thread.join(timeout=30)
        server.close()


SWAPPER = r"""
import ctypes, os, sys, time
folder, target = sys.argv[1], sys.argv[2]
os.chdir(folder)
os.symlink(target, "link")
first = os.path.join("d", os.listdir("d")[0])
owner = os.lstat(first).st_uid
end = time.monotonic() + 60
while os.lstat(first).st_uid == owner and time.monotonic() < end:
    pass
# The grader is chowning d's files one by one: swap d and the link at once (RENAME_EXCHANGE).
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, b"link", -100, b"d", 2) == 0:
    print("swapped")
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="handing a folder to a jail uid needs root")
@needs_system_python
def test_handing_the_workspace_to_a_build_never_chowns_through_a_swapped_folder() -> None:
    # The agent's processes run on while the grader hands the workspace to the build's
    # uid; a folder it swaps for a symlink mid-walk must not lead the chown outside.
    assert SYSTEM_PYTHON is not None
    shared = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        shared.chmod(0o755)
        names = [f"f{n}" for n in range(4000)]
        outside = shared / "outside"  # stands for /etc: root's files
        outside.mkdir()
        workspace = shared / "workspace"
        (workspace / "d").mkdir(parents=True)
        for name in names:
            (outside / name).touch()
            (workspace / "d" / name).touch()
        for path in [workspace, *workspace.rglob("*")]:
            os.lchown(path, AGENT, AGENT)
        for path in (workspace, workspace / "d"):
            path.chmod(0o777)  # still the agent's to rename in once the walk owns it
        (shared / "swap.py").write_text(SWAPPER)
        swapper = subprocess.Popen(
            ["setpriv", f"--reuid={AGENT}", f"--regid={AGENT}", "--clear-groups", "--",
             SYSTEM_PYTHON, "-I", str(shared / "swap.py"), str(workspace), str(outside)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(0.5)  # the swapper has listed d and watches its first file
        spec = JailSpec(writable=(workspace,), workdir=workspace)
        with reserve_lanes(1) as (lane,):
            run_build(["true"], spec, lane, 30.0, 100)
        said, _ = swapper.communicate(timeout=60)
        assert said.strip() == "swapped"  # the race did happen
        moved = [p.name for p in outside.iterdir() if p.lstat().st_uid != 0]
        assert moved == [], f"{len(moved)} files outside the workspace were chowned"
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _long_paths(root: Path, levels: int = 20) -> None:
    """Folders of 200-character names ``levels`` deep, each holding a file of one: some
    file's path crosses PATH_MAX (4096), though the tree is well within the depth bound."""
    name = "n" * 200
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.close(os.open(name + ".txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def test_a_workspace_with_paths_past_path_max_gets_an_answer_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    _long_paths(task / "workspace")
    server = ServedTask(task, os.geteuid(), untrusted="a test serves as its own user")
    server.open()
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        graded = json.loads(_exchange(server.path, b'{"format": 1, "op": "run-tests"}\n'))
        assert graded["ok"], graded  # the tree is walked by descriptor: its digest is taken
        assert (graded["report"]["status"], graded["report"]["passed"]) == ("graded", 1)
        after = json.loads(_exchange(server.path, b'{"format": 1, "op": "progress"}\n'))
        assert after["op"] == "progress", after
    finally:
        stop.set()
        thread.join(timeout=30)
        server.close()


def test_a_workspace_file_named_in_no_utf_8_is_refused_by_name(tmp_path: Path) -> None:
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    with open(os.fsencode(task / "workspace") + b"/stray\xff\x1b[2J.txt", "wb") as stray:
        stray.write(b"x")
    server = ServedTask(task, os.geteuid(), untrusted="a test serves as its own user")
    server.open()
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        refused = json.loads(_exchange(server.path, b'{"format": 1, "op": "run-tests"}\n'))
    finally:
        stop.set()
        thread.join(timeout=30)
        server.close()
    assert not refused["ok"]
    # The file is named, its bytes escaped (no raw control character reaches a terminal).
    assert "stray\\xff\\x1b[2J.txt" in refused["error"], refused
    assert "not UTF-8" in refused["error"]


def test_a_request_that_fails_on_the_system_is_refused_and_the_grader_keeps_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk or a file removed mid-build (an OSError) fails that request only."""
    from playproof.corpus import _channel

    def full_disk(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_channel, "task_progress", full_disk)
    server = ServedTask(tmp_path, os.geteuid())
    server.open()
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop,), daemon=True)
    thread.start()
    try:
        for _ in range(2):  # the second request is answered too: the grader is still there
            answer = json.loads(_exchange(server.path, b'{"format": 1, "op": "progress"}\n'))
            assert (answer["op"], answer["ok"]) == ("progress", False), answer
            assert "No space left on device" in answer["error"]
    finally:
        stop.set()
        thread.join(timeout=30)
        server.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
def test_links_planted_in_an_agent_owned_task_folder_are_never_followed(tmp_path: Path) -> None:
    """A task folder the agent owned before serving: its planted links redirect nothing.

    The client's temporary name and the private folder's name are predictable;
    preparing as root must neither write the client through a link nor take
    ownership of (or chmod) what a link to ``.playproof`` points at.
    """
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched\n")
    victim.chmod(0o600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.chown(elsewhere, STRANGER, STRANGER)
    (task / ".run-tests.tmp").symlink_to(victim)
    shutil.rmtree(task / ".playproof", ignore_errors=True)
    (task / ".playproof").symlink_to(elsewhere)
    os.chown(task, AGENT, AGENT)
    with pytest.raises(RunError, match=r"\.playproof.*link"):
        prepare_served_task(task, AGENT)
    assert victim.read_bytes() == b"untouched\n"
    assert victim.stat().st_mode & 0o777 == 0o600
    assert (elsewhere.stat().st_uid, elsewhere.stat().st_mode & 0o777) == (STRANGER, 0o755)
    # With the private folder a real one, the planted temporary is replaced, not followed.
    (task / ".playproof").unlink()
    with contextlib.suppress(RunError):  # the synthetic answers' folder may be readable
        prepare_served_task(task, AGENT)
    assert victim.read_bytes() == b"untouched\n"
    assert victim.stat().st_mode & 0o777 == 0o600
    client = task / "run-tests"
    assert client.is_file()
    assert not client.is_symlink()
    assert client.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    assert client.stat().st_mode & 0o777 == 0o755
    assert task.stat().st_uid == 0


@pytest.mark.parametrize("workspace", [".playproof", ".playproof/inner", ".", "..", "/tmp/ws"])
def test_a_workspace_naming_the_grader_folder_or_leaving_the_task_is_refused(
    tmp_path: Path, workspace: str
) -> None:
    """``task.json``'s workspace is handed to the agent and to every build's jail uid:
    one naming ``.playproof`` (or the task folder, or a folder outside it) is refused."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus, workspace=workspace)
    with pytest.raises(FormatError, match="workspace"):
        load_task(task)


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
def test_serving_never_hands_the_grader_key_to_an_agent_named_workspace(tmp_path: Path) -> None:
    """A task folder the agent owned before serving, its ``task.json`` edited to make
    ``.playproof`` the workspace: the set-up must not give the grader key to the agent."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    private = task / ".playproof"
    private.mkdir(mode=0o700, exist_ok=True)
    key = private / "grader.pem"
    SigningKey.generate().save(key)
    spec = json.loads((task / "task.json").read_text("utf-8"))
    (task / "task.json").write_text(json.dumps({**spec, "workspace": ".playproof"}), "utf-8")
    os.chown(task, AGENT, AGENT)
    with pytest.raises((FormatError, RunError)):
        prepare_served_task(task, AGENT)
    assert key.stat().st_uid == 0
    assert private.stat().st_uid == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
def test_a_workspace_planted_as_a_link_to_the_grader_folder_is_refused(tmp_path: Path) -> None:
    """A task folder the agent owned before serving, its workspace swapped for a link to
    ``.playproof``: the set-up refuses it and the grader key stays the grader's."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    private = task / ".playproof"
    private.mkdir(mode=0o700, exist_ok=True)
    key = private / "grader.pem"
    SigningKey.generate().save(key)
    shutil.rmtree(task / "workspace")
    (task / "workspace").symlink_to(".playproof")
    os.chown(task, AGENT, AGENT)
    with pytest.raises(RunError, match=r"workspace.*link"):
        prepare_served_task(task, AGENT)
    assert key.stat().st_uid == 0
    assert private.stat().st_uid == 0


def test_results_files_planted_as_links_are_replaced_never_written_or_chmodded_through(
    tmp_path: Path,
) -> None:
    """A task folder the agent owned before serving, with ``last.tsv`` and the results'
    temporary name planted as links to files the agent may not read: grading as the
    grader writes and opens up neither file (a link to a 0600 answers file made 0644
    would show the answers through ``prev.tsv``)."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    secret, victim = tmp_path / "secret", tmp_path / "victim"
    for path in (secret, victim):
        path.write_bytes(b"untouched\n")
        path.chmod(0o600)
    (task / "last.tsv").symlink_to(secret)
    (task / ".last.tsv.tmp").symlink_to(victim)
    server = ServedTask(task, os.geteuid(), untrusted="a test serves as its own user")
    report = server._carry_out(TaskRequest(op="run-tests"))
    assert report.status == "graded"
    for path in (secret, victim):
        assert path.read_bytes() == b"untouched\n"
        assert path.stat().st_mode & 0o777 == 0o600
    last = task / "last.tsv"
    assert not last.is_symlink()
    assert last.read_text("utf-8").startswith("case\tpassed\treason\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
@pytest.mark.parametrize("planted", ["forged-state", "dangling-link"])
def test_a_grader_folder_holding_what_the_agent_planted_is_refused(
    tmp_path: Path, planted: str
) -> None:
    """A task folder the agent owned before serving, with a real ``.playproof`` holding
    the agent's own key and a reward state it signed (cumulative 999), or a link where
    the grader writes its toolchain fingerprint: serving refuses, never grades from it."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    private = task / ".playproof"
    shutil.rmtree(private, ignore_errors=True)
    private.mkdir(mode=0o755)
    victim = tmp_path / "victim"
    if planted == "forged-state":
        mine = SigningKey.generate()
        mine.save(private / "grader.pem")
        manifest = load_manifest(corpus.manifest_path)
        forged = RewardState(
            corpus_digest=manifest.digest, denominator=manifest.denominator, cumulative=999
        )
        save_state(private / "reward.json", forged, mine)
    else:
        (private / "toolchain.json").symlink_to(victim)
    for path in (private, *private.iterdir()):
        os.chown(path, AGENT, AGENT, follow_symlinks=False)
    os.chown(task, AGENT, AGENT)
    with pytest.raises(RunError, match=r"\.playproof"):
        prepare_served_task(task, AGENT)
    assert not victim.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
def test_a_build_command_leaves_the_workspace_the_agents(tmp_path: Path) -> None:
    """A build command runs as a jail uid, which is handed the workspace for the build;
    afterwards the workspace is the agent's again, what the build wrote included (else
    the agent could no longer edit its own workspace after its first ``run-tests``)."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus, build=["sh", "-c", "echo built > out.txt"])
    with contextlib.suppress(RunError):  # the synthetic answers' folder may be readable
        prepare_served_task(task, AGENT)
    workspace = task / "workspace"
    assert workspace.stat().st_uid == AGENT
    report = ServedTask(task, AGENT)._carry_out(TaskRequest(op="run-tests"))
    assert report.status == "graded", report
    assert (workspace / "out.txt").read_text("utf-8") == "built\n"
    owners = {p.lstat().st_uid for p in (workspace, *workspace.rglob("*"))}
    assert owners == {AGENT}


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
@pytest.mark.parametrize("whose", ["task.json", "controller key"])
def test_a_task_whose_configuration_the_agent_owns_is_refused(tmp_path: Path, whose: str) -> None:
    """A task folder the agent owned before serving: a ``task.json`` (or the controller key
    it names) the agent owns may name the agent's own corpus, answers and key, and a
    corpus the agent signed grades trusted. Serving refuses it rather than make it the
    grader's."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    spec = json.loads((task / "task.json").read_text("utf-8"))
    key = task / "controller.pub"
    shutil.copyfile(spec["controller_key"], key)
    (task / "task.json").write_text(json.dumps({**spec, "controller_key": key.name}), "utf-8")
    os.chown(task / ("task.json" if whose == "task.json" else key.name), AGENT, AGENT)
    os.chown(task, AGENT, AGENT)
    with pytest.raises(RunError, match="the agent's"):
        prepare_served_task(task, AGENT)


@pytest.mark.skipif(os.geteuid() != 0, reason="serving to another uid needs root")
@pytest.mark.parametrize("kind", ["link", "folder"])
def test_results_names_planted_as_a_link_or_folder_are_refused(tmp_path: Path, kind: str) -> None:
    """A ``prev.tsv`` the agent left as a folder (or a link) in a task folder it owned would
    make every later ``run-tests`` fail after its reward was saved: serving refuses it."""
    corpus = synthetic(tmp_path / "corpus", {"calm": b"CALM" + bytes(300)})
    task = synthetic_task(tmp_path, corpus)
    planted = task / "prev.tsv"
    if kind == "link":
        planted.symlink_to(tmp_path / "elsewhere")
    else:
        (planted / "inner").mkdir(parents=True)
    os.chown(task, AGENT, AGENT)
    with pytest.raises(RunError, match=r"prev\.tsv"):
        prepare_served_task(task, AGENT)
