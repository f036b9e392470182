"""The RetroArch command client: reply parsers and the UDP round trip (no RetroArch needed)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.adapters.retroarch._commands import (
    MAX_READ_BYTES,
    CommandClient,
    parse_memory_reply,
    parse_status_reply,
)
from playproof.errors import TargetError


def _reply(address: int, data: bytes) -> str:
    return f"READ_CORE_MEMORY {address:x} " + " ".join(f"{b:02X}" for b in data) + "\n"


@given(st.integers(0, 0xFFFF_FFFF), st.binary(min_size=1, max_size=64))
def test_memory_reply_round_trips(address: int, data: bytes) -> None:
    assert parse_memory_reply(_reply(address, data), address, len(data)) == data


@given(st.text(max_size=200))
def test_memory_reply_parser_raises_only_target_error(text: str) -> None:
    with contextlib.suppress(TargetError):
        parse_memory_reply(text, 0xC000, 2)


def test_unmapped_memory_names_the_address() -> None:
    with pytest.raises(TargetError, match="no memory at 0xff80"):
        parse_memory_reply("READ_CORE_MEMORY ff80 -1 no descriptor for address", 0xFF80, 4)


def test_status_reply() -> None:
    status = parse_status_reply("GET_STATUS PAUSED game_boy,content,crc32=61758d79\n")
    assert (status.state, status.content) == ("PAUSED", "game_boy,content,crc32=61758d79")
    with pytest.raises(TargetError):
        parse_status_reply("GET_STATUS SLEEPING")


class FakeRetroArch:
    """A loopback UDP server answering each datagram with ``answer(text)`` (None: silence)."""

    def __init__(self, answer: Callable[[str], list[bytes]]) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.05)
        self.port: int = self.socket.getsockname()[1]
        self.answer = answer
        self.received: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, sender = self.socket.recvfrom(65536)
            except TimeoutError:
                continue
            text = data.decode()
            self.received.append(text)
            for reply in self.answer(text):
                self.socket.sendto(reply, sender)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[str], list[bytes]]], CommandClient]]:
    servers: list[FakeRetroArch] = []
    clients: list[CommandClient] = []

    def start(answer: Callable[[str], list[bytes]]) -> CommandClient:
        server = FakeRetroArch(answer)
        servers.append(server)
        client = CommandClient(server.port, server.port, timeout=0.5)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.close()
    for server in servers:
        server.close()


def _memory(text: str) -> list[bytes]:
    parts = text.split()
    if parts[0] != "READ_CORE_MEMORY":
        return []
    address, length = int(parts[1], 16), int(parts[2])
    return [_reply(address, bytes((address + i) & 0xFF for i in range(length))).encode()]


def test_long_reads_are_split_into_bounded_requests(serve: Callable[..., CommandClient]) -> None:
    client = serve(_memory)
    data = client.read_memory(0xC000, MAX_READ_BYTES * 2 + 5)
    assert data == bytes((0xC000 + i) & 0xFF for i in range(MAX_READ_BYTES * 2 + 5))


def test_a_stale_reply_does_not_answer_the_next_request(
    serve: Callable[..., CommandClient],
) -> None:
    # Every request is answered twice: the second copy must not be taken for the next reply.
    def twice(text: str) -> list[bytes]:
        return _memory(text) * 2

    client = serve(twice)
    assert client.read_memory(0xC000, 1) == b"\x00"
    assert client.read_memory(0xC001, 1) == b"\x01"


def test_write_memory_checks_the_count(serve: Callable[..., CommandClient]) -> None:
    client = serve(lambda text: [b"WRITE_CORE_MEMORY c014 1"])
    with pytest.raises(TargetError, match="did not write 2 bytes"):
        client.write_memory(0xC014, b"\x01\x00")


def test_a_late_reply_for_another_address_is_skipped(
    serve: Callable[..., CommandClient],
) -> None:
    # The reply to the first request arrives only after the second was sent (a
    # slow or repeated datagram): it must be skipped, not taken as the answer.
    held: list[bytes] = []

    def late(text: str) -> list[bytes]:
        replies = held[:] + _memory(text)
        held[:] = _memory(text)
        return replies

    client = serve(late)
    assert client.read_memory(0xC000, 1) == b"\x00"
    assert client.read_memory(0xC001, 1) == b"\x01"
