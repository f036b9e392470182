"""Loopback stand-ins for Steam's Web API and Xbox's achievements REST API.

A real TCP server on 127.0.0.1 (a free port) reads each HTTP request and
answers in the providers' documented shapes from a mutable state: which
achievements are unlocked, the stats, the game's name, the user, the title.
A test flips that state while the agent plays (the "game" unlocking an
achievement) or makes one request hostile (a raw behaviour that writes
whatever bytes it likes: huge, slow, endless, malformed).
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

Behaviour = Callable[[socket.socket, threading.Event], None]
SERVE_S = 20.0
"""Longest a behaviour keeps writing after the client left (a safety net for the thread)."""

STEAM_USER = "76561197960287930"
XBOX_USER = "2533274790395904"
STEAM_APP = "440"
XBOX_TITLE = "1717113201"
SCID = "b5dd9daf-0000-0000-0000-000000000000"


def head(status: str = "200 OK", *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", "content-type: application/json", *headers, "", ""]
    return "\r\n".join(lines).encode("ascii")


def complete(body: bytes, status: str = "200 OK") -> Behaviour:
    def send(sock: socket.socket, stop: threading.Event) -> None:
        sock.sendall(head(status, f"content-length: {len(body)}", "connection: close") + body)

    return send


def stream(start: bytes, piece: bytes, pause: float = 0.0) -> Behaviour:
    """Send ``start`` then ``piece`` again and again until the client hangs up."""

    def send(sock: socket.socket, stop: threading.Event) -> None:
        sock.sendall(start)
        while not stop.wait(pause):
            sock.sendall(piece)

    return send


@dataclass
class ProviderState:
    """What the fake provider reports; tests change it between (or during) readings."""

    user: str = STEAM_USER
    game_name: str = "Team Fortress 2"
    achievements: dict[str, bool] = field(default_factory=dict)
    stats: dict[str, int | float] = field(default_factory=dict)
    title_id: str = XBOX_TITLE
    scid: str = SCID
    version: str = "1.0.0.0"
    page_size: int = 2
    endless_pages: bool = False
    total_records: int | None = None


@dataclass
class Seen:
    """One request the fake received: its path and query, and its headers."""

    target: str
    headers: dict[str, str]


class FakeProvider(socketserver.ThreadingTCPServer):
    """Answers Steam or Xbox requests from ``state``; ``hostile[n]`` replaces the n-th reply."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, provider: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.provider = provider
        self.state = ProviderState(user=STEAM_USER if provider == "steam" else XBOX_USER)
        self.hostile: dict[int, Behaviour] = {}
        self.before_answer: Callable[[int, FakeProvider], None] | None = None
        """Called with each request's index before it is answered (under the lock)."""
        self.seen: list[Seen] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def answer(self, target: str) -> Behaviour:
        parts = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if self.provider == "steam":
            return complete(json.dumps(self._steam(parts.path, query)).encode())
        return complete(json.dumps(self._xbox(query)).encode())

    def _steam(self, path: str, query: dict[str, str]) -> dict[str, Any]:
        state = self.state
        if "GetPlayerAchievements" in path:
            return {
                "playerstats": {
                    "steamID": state.user,
                    "gameName": state.game_name,
                    "achievements": [
                        {"apiname": name, "achieved": int(done), "unlocktime": 1700000000 * done}
                        for name, done in state.achievements.items()
                    ],
                    "success": True,
                }
            }
        if "GetUserStatsForGame" in path:
            return {
                "playerstats": {
                    "steamID": state.user,
                    "gameName": state.game_name,
                    "stats": [{"name": k, "value": v} for k, v in state.stats.items()],
                    "achievements": [
                        {"name": k, "achieved": 1} for k, done in state.achievements.items() if done
                    ],
                }
            }
        return {"error": "unknown method"}

    def _xbox(self, query: dict[str, str]) -> dict[str, Any]:
        state = self.state
        items = list(state.achievements.items())
        start = int(query.get("continuationToken", "0"))
        page = items[start : start + state.page_size]
        following = start + state.page_size
        token = str(following) if following < len(items) or state.endless_pages else None
        return {
            "achievements": [
                {
                    "id": ident,
                    "serviceConfigId": state.scid,
                    "name": f"Achievement {ident}",
                    "titleAssociations": [
                        {"name": "Sample", "id": int(state.title_id), "version": state.version}
                    ],
                    "progressState": "Achieved" if done else "NotStarted",
                    "progression": {"requirements": [], "timeUnlocked": "2026-01-01T00:00:00Z"},
                    "mediaAssets": [],
                    "platform": "Durango",
                    "isSecret": False,
                    "isRevoked": False,
                }
                for ident, done in page
            ],
            "pagingInfo": {
                "continuationToken": token,
                "totalRecords": state.total_records
                if state.total_records is not None
                else len(items),
            },
        }


class _Handler(socketserver.BaseRequestHandler):
    server: FakeProvider

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(SERVE_S)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return
            data += chunk
            if len(data) > 1 << 20:
                return
        request_head = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        target = request_head[0].split(" ")[1]
        headers = {
            k.strip().lower(): v.strip()
            for k, _, v in (line.partition(":") for line in request_head[1:])
        }
        with self.server.lock:
            index = len(self.server.seen)
            self.server.seen.append(Seen(target, headers))
            if self.server.before_answer is not None:
                self.server.before_answer(index, self.server)
            behaviour = self.server.hostile.get(index) or self.server.answer(target)
        with contextlib.suppress(OSError):
            behaviour(sock, self.server.stop)


@contextlib.contextmanager
def fake_provider(provider: str) -> Iterator[FakeProvider]:
    """A running fake provider for the test's duration."""
    server = FakeProvider(provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
