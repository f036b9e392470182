"""Nothing an agent or a worker child starts outlives it, even after a double fork and setsid.

The hostile programs (``programs/escaper.py``, ``programs/escaping_game.py``)
leave a detached sleeper behind on every decision or step: fork, ``setsid``,
fork again, so a process-group kill misses it. Each sleeper carries a per-test
token on its command line, which is how the test finds it on the host (a
contained sleeper's own pid is the number in its PID namespace, recorded in a
file). After the driver or worker is closed, every sleeper must be gone. Where
namespaces are refused (as the last tests pretend), a sleeper that keeps the
agent's pipes open must not stretch a decision or a close past its bounds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from leftovers import ask_decisions

from playproof import _containment
from playproof._containment import ContainmentWarning, Launcher, containment
from playproof.core.agent import DecisionContext, Driver
from playproof.core.observation import Observation
from playproof.drivers.cli import CliDriver
from playproof.drivers.session import SessionDriver
from playproof.errors import DriverError
from playproof.workers import WorkerGame

PROGRAMS = Path(__file__).parent / "programs"
ESCAPER = PROGRAMS / "escaper.py"
TOY_GAMES = Path(__file__).parents[1] / "workers"
VOCABULARY = ("up", "down")
GONE_WAIT_S = 10.0
"""How long a killed process gets to disappear (a namespace is torn down a hop at a time)."""

needs_namespaces = pytest.mark.skipif(
    not containment().contained,
    reason=f"no PID namespaces here ({containment().reason}): a setsid escape is not contained",
)


def _stat(pid: int) -> tuple[str, int] | None:
    """State letter and parent pid of ``pid``, or None when it has no /proc entry."""
    try:
        text = Path(f"/proc/{pid}/stat").read_bytes().decode("ascii", "replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def gone(pid: int) -> bool:
    """True once ``pid`` cannot run again: no /proc entry, or a zombie this test does not own.

    A zombie of ours would stay until we reap it, so it only counts when some
    other parent (init, a namespace's init) is responsible for it.
    """
    stat = _stat(pid)
    if stat is None:
        return True
    state, parent = stat
    return state in ("Z", "X") and parent != os.getpid()


def still_running(pids: Sequence[int], timeout: float = GONE_WAIT_S) -> list[int]:
    """The ``pids`` that are not gone after polling up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if not gone(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def sleepers(token: str) -> list[int]:
    """Host pids of live processes whose command line carries ``token``."""
    needle = token.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return [pid for pid in found if not gone(pid)]


def descendants(root: int) -> list[int]:
    """Live processes below ``root`` on the host, found through their parent pids."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[1]
    found: list[int] = []
    frontier = [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent == frontier[-1]]
        frontier.pop()
        found += children
        frontier += children
    return found


def own_pid(pid: int) -> int:
    """``pid`` as the process sees itself (the innermost number of its NSpid line)."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return pid


class Escapes:
    """One test's token, record file and environment for the escaping programs."""

    def __init__(self, folder: Path) -> None:
        self.token = f"escaper-{uuid.uuid4().hex}"
        self.record = folder / "sleepers.txt"
        self.env = {
            **os.environ,
            "ESCAPER_TOKEN": self.token,
            "ESCAPER_RECORD": str(self.record),
            "PYTHONPATH": os.pathsep.join([str(PROGRAMS), str(TOY_GAMES)]),
        }

    def recorded(self) -> list[int]:
        """The sleepers' pids as they recorded them."""
        if not self.record.exists():
            return []
        return [int(line) for line in self.record.read_text().split()]

    def live(self) -> list[int]:
        """Host pids of this test's sleepers that still run."""
        return sleepers(self.token)


@pytest.fixture
def escapes(tmp_path: Path) -> Iterator[Escapes]:
    """The test's escape bookkeeping; any sleeper left when it fails is killed afterwards."""
    escape = Escapes(tmp_path)
    yield escape
    for pid in escape.live():
        os.kill(pid, signal.SIGKILL)


def play(driver: Driver, decisions: int) -> None:
    """Ask ``driver`` for ``decisions`` decisions, then close it."""
    ask_decisions(driver, decisions, VOCABULARY)


def test_the_scan_finds_a_sleeper_that_escaped(escapes: Escapes) -> None:
    """Control: started without playproof, the sleeper survives and the scan sees it."""
    program = "import escaper; escaper.leave_sleeper()"
    subprocess.run([sys.executable, "-c", program], env=escapes.env, check=True)
    (pid,) = escapes.recorded()
    assert escapes.live() == [pid]
    os.kill(pid, signal.SIGKILL)
    assert still_running([pid]) == []


@needs_namespaces
def test_one_shot_agents_leave_no_sleeper_behind(escapes: Escapes) -> None:
    agent = CliDriver([sys.executable, str(ESCAPER), "oneshot"], env=escapes.env)
    play(agent, decisions=4)
    assert len(escapes.recorded()) == 4  # every decision left one
    assert still_running(escapes.live()) == []
    assert agent.provenance()["containment"] == "pid-namespace"


@needs_namespaces
def test_a_session_agent_leaves_no_sleeper_behind(escapes: Escapes) -> None:
    agent = SessionDriver([sys.executable, str(ESCAPER), "session"], env=escapes.env)

    async def decide_then_look_then_close() -> tuple[list[int], list[int]]:
        for turn in (1, 2, 3):
            context = DecisionContext(
                turn=turn,
                max_turns=3,
                seed=1,
                spent_usd=0.0,
                remaining_usd=None,
                vocabulary=VOCABULARY,
            )
            await agent.act(Observation(text="board"), [], context)
        live = escapes.live()
        seen_as = [own_pid(pid) for pid in live]
        await agent.aclose()
        return live, seen_as

    live, seen_as = asyncio.run(decide_then_look_then_close())
    # While the session ran, the three sleepers it left were alive and are the ones recorded.
    assert sorted(seen_as) == sorted(escapes.recorded())
    assert len(live) == 3
    assert still_running(live) == []
    assert agent.provenance()["containment"] == "pid-namespace"


@needs_namespaces
def test_a_worker_game_leaves_no_sleeper_behind(escapes: Escapes) -> None:
    worker = WorkerGame("escaping_game:make_game", env=escapes.env)
    try:
        worker.reset(0)
        worker.step("escape")
        worker.step("escape")
        live = escapes.live()
        assert sorted(own_pid(pid) for pid in live) == sorted(escapes.recorded())
        assert len(live) == 2
    finally:
        worker.close()
    assert still_running(live) == []


def test_the_agent_is_not_the_namespace_init(tmp_path: Path) -> None:
    """The agent keeps ordinary signal behaviour: a SIGTERM it sends itself ends it.

    (Process 1 of a namespace ignores signals it has no handler for, so an agent
    run as the init would survive this and answer nothing.)
    """
    program = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    agent = CliDriver([sys.executable, "-c", program])
    with pytest.raises(DriverError, match="SIGTERM"):
        play(agent, decisions=1)


def test_without_namespaces_one_warning_says_so_and_provenance_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fallback = Launcher("process-group", reason="namespaces refused for this test")
    monkeypatch.setattr(_containment, "probe", lambda: fallback)
    monkeypatch.setattr(_containment, "_chosen", [])
    with pytest.warns(ContainmentWarning, match="process group only"):
        assert containment() is fallback
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        assert containment() is fallback
    assert later == []  # said once per process, not on every start
    program = "import json, sys; json.load(sys.stdin); print(json.dumps({'input': 'up'}))"
    agent = CliDriver([sys.executable, "-c", program], name="plain")
    play(agent, decisions=1)
    assert agent.provenance()["containment"] == "process-group"


BUSY_PARENT = """
import sys, threading, time
from playproof.workers import WorkerGame
worker = WorkerGame("toygames:make_toy", {"misbehave": True}, call_timeout=3600)
worker.reset(0)
threading.Thread(target=worker.step, args=("hang",), daemon=True).start()
print(worker.pid, flush=True)
time.sleep(3600)
"""


@needs_namespaces
def test_a_busy_worker_dies_with_its_parent(escapes: Escapes) -> None:
    """The game is not reading its stdin, so only the parent-death signal can end it."""
    parent = subprocess.Popen(
        [sys.executable, "-c", BUSY_PARENT], stdout=subprocess.PIPE, env=escapes.env, text=True
    )
    try:
        assert parent.stdout is not None
        outer = int(parent.stdout.readline())
        tree = [outer, *descendants(outer)]
        assert len(tree) >= 3  # the launcher, the namespace's init, the game
        assert still_running(tree, timeout=0.0) == tree
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    assert still_running(tree) == []


@pytest.fixture
def process_group_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents start as where PID namespaces are refused: a setsid escape outlives them."""
    fallback = Launcher("process-group", reason="namespaces refused for this test")
    monkeypatch.setattr(_containment, "_chosen", [fallback])


HOLDING_TIMEOUT_S = 1.0
"""The drivers' decision timeout in the tests below."""
CLEAN_UP_S = 2.5
"""What ending an agent may add to it; a sleeper holding its pipes sleeps 600 s."""


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("process_group_only")
def test_a_sleeper_holding_the_pipes_does_not_stretch_a_one_shot_timeout(
    escapes: Escapes,
) -> None:
    # Without PID namespaces, what the agent left outside its group keeps its stdout open,
    # so no reply is complete: the decision fails at its timeout, and the clean-up after it
    # does not wait for pipes that will not close.
    env = {**escapes.env, "ESCAPER_KEEP_STDIO": "1"}
    agent = CliDriver(
        [sys.executable, str(ESCAPER), "oneshot"], env=env, timeout_s=HOLDING_TIMEOUT_S
    )
    started = time.monotonic()
    with pytest.raises(DriverError, match="did not answer within"):
        play(agent, decisions=1)
    assert time.monotonic() - started < HOLDING_TIMEOUT_S + CLEAN_UP_S
    assert len(escapes.live()) == 1  # not contained here: the fixture ends it


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("process_group_only")
def test_closing_a_session_does_not_wait_on_a_sleeper_holding_its_pipes(
    escapes: Escapes,
) -> None:
    env = {**escapes.env, "ESCAPER_KEEP_STDIO": "1"}
    agent = SessionDriver(
        [sys.executable, str(ESCAPER), "session"],
        env=env,
        decision_timeout_s=HOLDING_TIMEOUT_S,
    )

    async def decide_then_close() -> float:
        context = DecisionContext(1, 3, 1, 0.0, None, VOCABULARY)
        await agent.act(Observation(text="board"), [], context)
        started = time.monotonic()
        await agent.aclose()
        return time.monotonic() - started

    assert asyncio.run(decide_then_close()) < CLEAN_UP_S
    assert len(escapes.live()) == 1
