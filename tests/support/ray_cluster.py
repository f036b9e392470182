"""A real two-node Ray cluster on 127.0.0.1 for tests, and a game whose process dies once.

:class:`LocalRayCluster` starts a head (one CPU) and a second node process
(one CPU, optionally with environment variables of its own) with ``ray
start``, every file under a folder the test gives, usage statistics off, and
stops exactly the processes it started (those whose
command line names that folder, and their children): never a machine-wide
``ray stop``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from playproof.core.contract import Contract
from playproof.core.game import ReplayResult
from playproof.core.replay import replay

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
SUPPORT = Path(__file__).resolve().parent
DRIVER_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def _naming(folder: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if folder in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class LocalRayCluster:
    """``with LocalRayCluster(folder) as address:`` a head and a second node, then stopped."""

    def __init__(self, folder: Path, second_node_env: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.second_node_env = second_node_env or {}
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            # Only this machine's loopback reaches the cluster; no token to hand around.
            "RAY_AUTH_MODE": "disabled",
            "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
        }
        self.ray = str(Path(sys.executable).with_name("ray"))

    def _start(self, *args: str, env: dict[str, str] | None = None) -> None:
        done = subprocess.run(
            [self.ray, "start", "--num-cpus=1", "--disable-usage-stats",
             "--node-ip-address=127.0.0.1", f"--temp-dir={self.folder}", *args],
            env={**self.env, **(env or {})}, cwd=self.folder, capture_output=True, text=True,
            timeout=START_TIMEOUT_S, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"ray start {' '.join(args)} failed: {done.stderr[-2000:]}")

    def __enter__(self) -> str:
        self._saved = {name: os.environ.get(name) for name in DRIVER_ENV}
        os.environ.update(DRIVER_ENV)  # this process is the cluster's driver
        try:
            self._start(
                "--head",
                f"--port={self.port}",
                "--include-dashboard=false",
            )
            self._start(f"--address={self.address}", env=self.second_node_env)
        except BaseException:
            self.stop()
            raise
        return self.address

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def pids(self) -> list[int]:
        """Every process of this cluster: those naming its folder, and their descendants."""
        tree = _children()
        seen: list[int] = []
        todo = _naming(str(self.folder))
        while todo:
            pid = todo.pop()
            if pid not in seen:
                seen.append(pid)
                todo.extend(tree.get(pid, []))
        return seen

    def stop(self) -> None:
        """End this cluster's processes (TERM, then KILL after a grace period)."""
        for name, value in getattr(self, "_saved", {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in [*pids, *self.pids()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class FlakyGame:
    """A real game whose process kills itself at its first episode, once per marker file."""

    def __init__(self, game: Any, marker: str) -> None:
        self._game = game
        self._marker = marker

    def __getattr__(self, name: str) -> Any:
        return getattr(self._game, name)

    def _maybe_die(self) -> None:
        try:
            os.close(os.open(self._marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)

    def reset(self, seed: int) -> Any:
        self._maybe_die()
        return self._game.reset(seed)

    def replay(
        self, seed: int, inputs: list[str], contract: Contract, *, trace: bool = False
    ) -> ReplayResult:
        self._maybe_die()
        return replay(self._game, seed, inputs, contract, trace=trace)


def make_flaky_2048(marker: str) -> FlakyGame:
    """The 2048 game, wrapped to die once (the marker file says it already has)."""
    from playproof.adapters.native.game2048 import make_game

    return FlakyGame(make_game(), marker)
