"""The CHIP-8 reference candidate: the corpus line protocol on top of ``machine.Chip8``.

Run it as a script (``python -I candidate.py``): it then imports ``machine``
from its own folder, the request loop from ``reference_candidate`` in the folder
above, and nothing of playproof, so a fresh process is ready in the time Python
takes to start. It speaks protocol version 1 with the CHIP-8
requests of PROTOCOL.md: ``PLATFORM chip8 <ipf>``, ``LOAD``, ``POKE``,
``FRAMES``, ``SCREEN``, ``REGS``, ``MEM``, ``PRESS``/``RELEASE`` and ``QUIT``.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO, Final

if __package__:
    from playproof.corpus.chip8.machine import (
        MAX_PROGRAM_BYTES,
        MEMORY_BYTES,
        Chip8,
        Chip8Fault,
    )
    from playproof.corpus.reference_candidate import (
        MAX_DATA_BYTES,
        ProtocolFault,
        data_reply,
        hello_reply,
        parse_int,
        serve_lines,
    )
else:  # run as a script: the interpreter sits next to this file, the request loop above it
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [_HERE, os.path.dirname(_HERE)]
    from machine import (  # type: ignore[no-redef,import-not-found]
        MAX_PROGRAM_BYTES,
        MEMORY_BYTES,
        Chip8,
        Chip8Fault,
    )
    from reference_candidate import (  # type: ignore[no-redef,import-not-found]
        MAX_DATA_BYTES,
        ProtocolFault,
        data_reply,
        hello_reply,
        parse_int,
        serve_lines,
    )

__all__ = [
    "CANDIDATE_NAME",
    "CHIP8_KEYS",
    "MAX_PROGRAM_BYTES",
    "ProtocolFault",
    "Session",
    "main",
    "serve",
]

# A copy of playproof.corpus._wire (a test keeps them equal).
CHIP8_KEYS: Final = "0123456789abcdef"

CANDIDATE_NAME: Final = "chip8-reference"
DEFAULT_IPF: Final = 15
"""Instructions per frame until a ``PLATFORM chip8 <ipf>`` says otherwise."""
MAX_IPF: Final = 1000
MAX_FRAMES: Final = 1_000_000


def _key(text: str) -> int:
    key = text.lower()
    if len(key) != 1 or key not in CHIP8_KEYS:
        raise ProtocolFault(f"unknown CHIP-8 key {text[:16]} (one hex digit 0-f)")
    return CHIP8_KEYS.index(key)


class Session:
    """Answers requests one at a time; holds the current machine and its speed."""

    def __init__(self, stdin: BinaryIO) -> None:
        self.stdin = stdin
        self.machine: Chip8 | None = None
        self.ipf = DEFAULT_IPF

    def _need(self) -> Chip8:
        if self.machine is None:
            raise ProtocolFault("no ROM loaded")
        return self.machine

    def handle(self, words: list[str]) -> bytes:
        """The reply to one request line split into words."""
        verb, args = words[0], words[1:]
        if verb == "HELLO":
            return hello_reply(CANDIDATE_NAME)
        if verb == "PLATFORM" and args and args[0] == "chip8" and len(args) <= 2:
            self.ipf = parse_int(args[1], 1, MAX_IPF) if len(args) == 2 else DEFAULT_IPF
            return b"OK\n"
        if verb == "PLATFORM":
            raise ProtocolFault(f"only CHIP-8 here, not {' '.join(args)[:32]}")
        if verb == "LOAD" and len(args) == 1:
            size = parse_int(args[0], 1, MAX_PROGRAM_BYTES)
            rom = self.stdin.read(size)
            if len(rom) != size:
                raise ProtocolFault("ROM truncated")
            self.machine = Chip8(rom)
            return b"OK\n"
        if verb == "POKE" and len(args) == 2:
            address = parse_int(args[0], 0, MEMORY_BYTES - 1)
            self._need().memory[address] = parse_int(args[1], 0, 255)
            return b"OK\n"
        if verb == "FRAMES" and len(args) == 1:
            self._need().run_frames(parse_int(args[0], 0, MAX_FRAMES), self.ipf)
            return b"OK\n"
        if verb == "SCREEN" and not args:
            return data_reply(bytes(self._need().display))
        if verb == "REGS" and not args:
            machine = self._need()
            parts = [f"V{n:X}={value:02x}" for n, value in enumerate(machine.v)]
            parts += [f"I={machine.i:04x}", f"PC={machine.pc:04x}"]
            parts += [f"DT={machine.delay:02x}", f"ST={machine.sound:02x}"]
            return ("OK " + " ".join(parts) + "\n").encode()
        if verb == "MEM" and len(args) == 2:
            address = parse_int(args[0], 0, MEMORY_BYTES - 1)
            length = parse_int(args[1], 0, min(MAX_DATA_BYTES, MEMORY_BYTES - address))
            return data_reply(bytes(self._need().memory[address : address + length]))
        if verb in ("PRESS", "RELEASE") and len(args) == 1:
            machine = self._need()
            key = _key(args[0])
            if verb == "PRESS":
                machine.press(key)
            else:
                machine.release(key)
            return b"OK\n"
        raise ProtocolFault(f"unknown request {verb[:32]} with {len(args)} argument(s)")


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer requests until ``QUIT`` or end of input; the exit status."""
    return serve_lines(stdin, stdout, Session(stdin).handle, (ProtocolFault, Chip8Fault))


def main() -> None:
    """Serve the protocol on stdin/stdout."""
    raise SystemExit(serve(sys.stdin.buffer, sys.stdout.buffer))


if __name__ == "__main__":
    main()
