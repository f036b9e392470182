"""Hostile replies on RetroArch's command port: every one is a typed error, never a hang."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from playproof.adapters.retroarch import make_game
from playproof.adapters.retroarch._commands import MAX_REPLY_BYTES, CommandClient
from playproof.errors import TargetError


@pytest.fixture
def hostile() -> Iterator[tuple[socket.socket, CommandClient]]:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = CommandClient(port, port, timeout=0.3)
    yield server, client
    client.close()
    server.close()


def _answer_once(server: socket.socket, reply: bytes) -> threading.Thread:
    def run() -> None:
        server.settimeout(2)
        _, sender = server.recvfrom(4096)
        server.sendto(reply, sender)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"READ_CORE_MEMORY c000 " + b"00 " * 20_000, "over"),  # one datagram over the bound
        # A reply for another address answers some earlier request: it is skipped,
        # and with no reply for this one the request times out.
        (b"READ_CORE_MEMORY d000 00 00", "did not answer"),
        (b"READ_CORE_MEMORY c000 zz 00", "hex bytes"),
        (b"READ_CORE_MEMORY c000 00", "hex bytes"),  # short
        (b"READ_CORE_MEMORY c000 -1 no descriptor", "no memory"),
        (b"READ_CORE_MEMORY", "answered"),
    ],
)
def test_hostile_memory_replies(
    hostile: tuple[socket.socket, CommandClient], reply: bytes, message: str
) -> None:
    server, client = hostile
    assert len(reply) > MAX_REPLY_BYTES or message != "over"
    thread = _answer_once(server, reply)
    with pytest.raises(TargetError, match=message):
        client.read_memory(0xC000, 2)
    thread.join()


def test_silence_is_a_timeout_not_a_hang(hostile: tuple[socket.socket, CommandClient]) -> None:
    _, client = hostile
    with pytest.raises(TargetError, match="did not answer GET_STATUS"):
        client.status()


def test_replies_from_elsewhere_are_ignored(hostile: tuple[socket.socket, CommandClient]) -> None:
    _, client = hostile
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as intruder:
        intruder.sendto(b"GET_STATUS PAUSED forged", client._socket.getsockname())
        with pytest.raises(TargetError, match="did not answer"):
            client.status()


def test_bad_options_list_every_problem() -> None:
    with pytest.raises(TargetError) as info:
        make_game(frame_channel="frames", channels={"x": {"address": 1}}, press_frames=9)
    text = str(info.value)
    assert "unknown channel 'frames'" in text
    assert "exactly one of rom" in text
    assert "press_frames" in text
