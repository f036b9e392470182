"""RetroArch's network command interface: UDP text commands on a loopback port.

Each request is one datagram; commands that answer (``GET_STATUS``,
``READ_CORE_MEMORY``, ``WRITE_CORE_MEMORY``, ``VERSION``) answer with one
datagram of text that starts with the command's name. Every reply is read
with a size bound and a timeout, and parsed strictly: anything else is a
:class:`~playproof.errors.TargetError` that says what came back.

``FRAMEADVANCE``, ``LOAD_STATE``, ``SAVE_STATE``, ``PAUSE_TOGGLE``,
``SCREENSHOT`` and ``QUIT`` never answer. RetroArch reads its command socket
once per main-loop pass, and commands that arrive within one pass act
together (two ``FRAMEADVANCE`` become one advance), so callers confirm each
effect by reading memory instead of trusting a send.

The network gamepad is a second socket (one per player): each datagram sets
one button of the emulated joypad, held until the next datagram for it.
"""

from __future__ import annotations

import functools
import re
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from playproof.errors import TargetError

__all__ = [
    "JOYPAD_IDS",
    "MAX_READ_BYTES",
    "MAX_REPLY_BYTES",
    "REPLY_TIMEOUT",
    "CommandClient",
    "Status",
    "free_udp_port",
    "parse_memory_reply",
    "parse_status_reply",
]

MAX_REPLY_BYTES = 16_384
"""The largest reply datagram read; RetroArch's own replies stay under 4 KiB."""
MAX_READ_BYTES = 1024
"""Bytes asked for in one ``READ_CORE_MEMORY`` (its reply is three characters a byte)."""
REPLY_TIMEOUT = 2.0
"""Seconds one reply may take before the request counts as unanswered."""
_HOST = "127.0.0.1"

JOYPAD_IDS = {
    "b": 0,
    "y": 1,
    "select": 2,
    "start": 3,
    "up": 4,
    "down": 5,
    "left": 6,
    "right": 7,
    "a": 8,
    "x": 9,
    "l": 10,
    "r": 11,
}
"""libretro joypad button ids (``RETRO_DEVICE_ID_JOYPAD_*``)."""
_DEVICE_JOYPAD = 1
_GAMEPAD_MESSAGE = struct.Struct("<iiiiHxx")
"""RetroArch's ``struct remote_message``: port, device, index, id, state (20 bytes)."""

_HEX_BYTE = re.compile(r"^[0-9A-Fa-f]{2}$")
_STATUS = re.compile(r"^GET_STATUS (PLAYING|PAUSED|CONTENTLESS)(?: (.{0,512}))?$")


@dataclass(frozen=True, slots=True)
class Status:
    """``GET_STATUS``: ``PLAYING``, ``PAUSED`` or ``CONTENTLESS`` and the content line."""

    state: str
    content: str


def parse_status_reply(text: str) -> Status:
    """Parse a ``GET_STATUS`` reply; TargetError for anything else."""
    match = _STATUS.match(text.strip())
    if match is None:
        raise TargetError(f"RetroArch answered GET_STATUS with {text[:80]!r}")
    return Status(match.group(1), match.group(2) or "")


def parse_memory_reply(text: str, address: int, length: int) -> bytes:
    """The bytes of a ``READ_CORE_MEMORY`` reply for ``address``/``length``.

    ``READ_CORE_MEMORY <hex address> <hex byte>...``; an error reply
    (``... -1 reason``) names an address the core exposes no memory for.
    """
    parts = text.split()
    if len(parts) < 3 or parts[0] != "READ_CORE_MEMORY":
        raise TargetError(f"RetroArch answered READ_CORE_MEMORY with {text[:80]!r}")
    try:
        answered = int(parts[1], 16)
    except ValueError:
        raise TargetError(f"RetroArch's memory reply has no address: {text[:80]!r}") from None
    if answered != address:
        raise TargetError(f"RetroArch answered for address {answered:#x}, not {address:#x}")
    if parts[2] == "-1":
        reason = " ".join(parts[3:])[:120] or "no reason given"
        raise TargetError(
            f"the core exposes no memory at {address:#x} ({reason}); "
            "pick channels in memory this core maps (work RAM works on every core)"
        )
    values = parts[2:]
    if len(values) != length or not all(_HEX_BYTE.match(v) for v in values):
        raise TargetError(
            f"RetroArch's memory reply for {address:#x} holds {len(values)} items, "
            f"not {length} hex bytes"
        )
    return bytes(int(v, 16) for v in values)


def _for_another_address(address: int, text: str) -> bool:
    """True when a memory reply names an address other than ``address`` (a stale reply)."""
    parts = text.split()
    try:
        return len(parts) > 1 and int(parts[1], 16) != address
    except ValueError:
        return False  # unreadable: parse_memory_reply names the problem


def free_udp_port() -> int:
    """A loopback UDP port free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((_HOST, 0))
        port: int = probe.getsockname()[1]
        return port


class CommandClient:
    """A UDP client for one RetroArch's command port and player 1's network gamepad."""

    def __init__(self, command_port: int, gamepad_port: int, *, timeout: float = REPLY_TIMEOUT):
        self.command_port = command_port
        self.gamepad_port = gamepad_port
        self.timeout = timeout
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind((_HOST, 0))
        self._socket.settimeout(timeout)

    def close(self) -> None:
        """Close the socket (idempotent)."""
        self._socket.close()

    def send(self, command: str) -> None:
        """Send a command that has no reply."""
        self._socket.sendto(command.encode("ascii"), (_HOST, self.command_port))

    def _drain(self) -> None:
        """Drop replies left over from requests that timed out (they would answer the next one)."""
        self._socket.setblocking(False)
        try:
            while True:
                self._socket.recv(MAX_REPLY_BYTES + 1)
        except (BlockingIOError, InterruptedError):
            pass
        finally:
            self._socket.settimeout(self.timeout)

    def request(
        self,
        command: str,
        *,
        timeout: float | None = None,
        stale: Callable[[str], bool] | None = None,
    ) -> str:
        """Send ``command`` and return its reply text (bounded in size and time).

        A reply for which ``stale`` is true answers an earlier request (a late or
        repeated datagram) and is skipped, like any datagram not from RetroArch.
        """
        self._drain()
        self.send(command)
        head = command.split(" ", 1)[0]
        seconds = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TargetError(
                    f"RetroArch did not answer {head} within {seconds:g} s; "
                    "is network_cmd_enable on and the content loaded?"
                )
            self._socket.settimeout(left)
            try:
                data, sender = self._socket.recvfrom(MAX_REPLY_BYTES + 1)
            except TimeoutError:
                continue
            except ConnectionRefusedError:
                raise TargetError(
                    f"nothing listens on RetroArch's command port {self.command_port}"
                ) from None
            if sender != (_HOST, self.command_port):
                continue  # not from RetroArch's address and port: ignore it
            if len(data) > MAX_REPLY_BYTES:
                raise TargetError(f"RetroArch's reply to {head} is over {MAX_REPLY_BYTES} bytes")
            text = data.decode("ascii", errors="replace")
            if text.startswith(head) and not (stale is not None and stale(text)):
                return text

    def status(self, *, timeout: float | None = None) -> Status:
        """``GET_STATUS``."""
        return parse_status_reply(self.request("GET_STATUS", timeout=timeout))

    def read_memory(self, address: int, length: int) -> bytes:
        """``length`` bytes of core memory at ``address``, in requests of at most MAX_READ_BYTES."""
        out = bytearray()
        while length > 0:
            chunk = min(length, MAX_READ_BYTES)
            reply = self.request(
                f"READ_CORE_MEMORY {address:x} {chunk}",
                stale=functools.partial(_for_another_address, address),
            )
            out += parse_memory_reply(reply, address, chunk)
            address, length = address + chunk, length - chunk
        return bytes(out)

    def write_memory(self, address: int, data: bytes) -> None:
        """``WRITE_CORE_MEMORY``; TargetError unless every byte was written."""
        payload = " ".join(f"{b:02x}" for b in data)
        reply = self.request(f"WRITE_CORE_MEMORY {address:x} {payload}").split()
        if len(reply) != 3 or reply[1].lower() != f"{address:x}" or reply[2] != str(len(data)):
            raise TargetError(f"RetroArch did not write {len(data)} bytes at {address:#x}")

    def button(self, word: str, pressed: bool) -> None:
        """Press or release one joypad button of player 1."""
        message = _GAMEPAD_MESSAGE.pack(0, _DEVICE_JOYPAD, 0, JOYPAD_IDS[word], int(pressed))
        self._socket.sendto(message, (_HOST, self.gamepad_port))
