"""`playproof serve` turns connections past --max-connections away at once (503).

A real server process on loopback; connections kept alive by raw sockets fill
it, the next request is answered 503 without waiting, and once they close the
server answers again.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .conftest import free_port

START_S = 60.0
"""A bound on waiting for the server to come up (not a timed assertion)."""


def _answer(url: str) -> int | None:
    try:
        return httpx.get(f"{url}/api/v1/log/head", timeout=5.0).status_code
    except httpx.HTTPError:
        return None


def _kept_alive(port: int) -> socket.socket:
    """A connection that made one request, got its answer and stays open (keep-alive)."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    connection.sendall(b"GET /api/v1/log/key HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert connection.recv(64).startswith(b"HTTP/1.1 200")
    return connection


def test_connections_past_the_bound_are_answered_503(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable,
        "-c",
        "from playproof.cli import main; main()",
        "serve",
        "--port",
        str(port),
        "--max-connections",
        "3",
        "--log-key",
        str(tmp_path / "log.key"),
    ]
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_S
        while _answer(url) != 200:
            assert server.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "playproof serve did not come up"
            time.sleep(0.2)
        held = [_kept_alive(port) for _ in range(2)]  # answered, so surely counted
        try:
            assert _answer(url) == 503  # the third connection
        finally:
            for connection in held:
                connection.close()
        deadline = time.monotonic() + START_S
        while _answer(url) != 200:
            assert time.monotonic() < deadline, "the server did not answer again"
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
