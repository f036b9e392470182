"""The reference candidate: the corpus line protocol (docs/corpus-protocol.md) on top of PyBoy.

It generates the expected answers of shipped corpora and is the candidate of
the end-to-end tests. Run it as ``python -m playproof.corpus.reference_candidate``
or, faster to start, as a script path (it imports only the standard library and
PyBoy, so it never pays for importing playproof itself).

Its request loop (:func:`serve_lines`) and the replies every candidate shares
also serve the CHIP-8 reference candidate, which imports this file beside its own.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, Final

# Copies of playproof.corpus._wire (a test keeps them equal): importing the
# package would add a third of a second to every case.
PROTOCOL_NAME: Final = "playproof-corpus"
PROTOCOL_VERSION: Final = 1
MAX_LINE_BYTES: Final = 256
MAX_DATA_BYTES: Final = 65536
MAX_ROM_BYTES: Final = 8 * 1024 * 1024
SCREEN_BYTES: Final = 160 * 144
CYCLES_PER_FRAME: Final = 70224
BUTTONS: Final = ("a", "b", "start", "select", "up", "down", "left", "right")

CANDIDATE_NAME: Final = "pyboy-reference"
SERIAL_CHUNK_FRAMES: Final = 30
"""PyBoy keeps only the last 1024 serial bytes; drain it at least this often."""
PALETTE: Final = (0xFFFFFF, 0xAAAAAA, 0x555555, 0x000000)
"""The DMG palette the emulator renders with; a pixel's index here is its shade."""
OPTIONAL_MODULES: Final = ("sdl2", "PIL", "OpenGL", "glfw")
"""Imports PyBoy tries and does without (windows, image export); none serves the protocol."""
LD_B_B: Final = 0x40
JR_SELF: Final = (0x18, 0xFE)

Reply = bytes


class ProtocolFault(Exception):
    """A request this candidate cannot honour; answered with ``ERR``."""


class Machine:
    """One emulated DMG and the serial bytes it has sent since the last ``SERIAL``."""

    def __init__(self, rom: bytes) -> None:
        from pyboy import PyBoy

        self.pyboy: Any = PyBoy(
            io.BytesIO(rom),
            window="null",
            sound_emulated=True,
            cgb=False,
            color_palette=PALETTE,
            no_input=False,
            log_level="ERROR",
        )
        self.pyboy.set_emulation_speed(0)
        self.serial = bytearray()

    def run_frames(self, frames: int, draw: bool = True) -> None:
        """Emulate ``frames`` frames, draining the serial buffer as it goes.

        With ``draw`` every frame is drawn, one ``tick`` each, so ``SCREEN``
        shows the frame this call completed: PyBoy draws only the last frame of
        a longer ``tick``, and a frame drawn after undrawn ones can come out
        wrong (dmg-acid2 differs in 130 pixels). ``RUNBP`` reads no screen and
        draws nothing.
        """
        while frames > 0:
            step = min(frames, SERIAL_CHUNK_FRAMES)
            if draw:
                for _ in range(step):
                    self.pyboy.tick(1, True, False)
            else:
                self.pyboy.tick(step, False, False)
            self._drain()
            frames -= step

    def _drain(self) -> None:
        text: str = self.pyboy._serial()
        if text:
            self.serial.extend(text.encode("latin-1", errors="replace"))
            # Keep the pending buffer bounded even when nobody reads it.
            del self.serial[:-MAX_DATA_BYTES]

    def at_breakpoint(self) -> bool:
        """True when the CPU spins on ``JR -2`` right after an ``LD B,B`` (Mooneye's exit)."""
        pc = int(self.pyboy.register_file.PC)
        memory = self.pyboy.memory
        here = (int(memory[pc]), int(memory[(pc + 1) & 0xFFFF]))
        return here == JR_SELF and int(memory[(pc - 1) & 0xFFFF]) == LD_B_B

    def screen(self) -> bytes:
        """The frame the last ``FRAMES`` completed, as one shade byte per pixel."""
        rgba = self.pyboy.screen.ndarray
        rgb = (
            (rgba[:, :, 0].astype("uint32") << 16)
            | (rgba[:, :, 1].astype("uint32") << 8)
            | rgba[:, :, 2]
        )
        shades = bytearray(SCREEN_BYTES)
        flat = rgb.reshape(-1).tolist()
        lookup = {color: index for index, color in enumerate(PALETTE)}
        for i, color in enumerate(flat):
            shades[i] = lookup.get(int(color), 0)
        return bytes(shades)


def parse_int(text: str, low: int, high: int) -> int:
    """A request's number (decimal or ``0x``-style) in ``low..high``, else ProtocolFault."""
    try:
        value = int(text, 0)
    except ValueError:
        raise ProtocolFault(f"not a number: {text[:32]}") from None
    if not low <= value <= high:
        raise ProtocolFault(f"{value} is outside {low}..{high}")
    return value


def data_reply(payload: bytes) -> Reply:
    """A ``DATA`` reply: its header line, then the payload."""
    return b"DATA %d\n" % len(payload) + payload


def hello_reply(candidate: str) -> Reply:
    """The reply to ``HELLO``: the protocol name and version, then the candidate's name."""
    return b"OK %s/%d %s\n" % (PROTOCOL_NAME.encode(), PROTOCOL_VERSION, candidate.encode())


class Session:
    """Answers requests one at a time; holds the current machine."""

    def __init__(self, stdin: BinaryIO) -> None:
        self.stdin = stdin
        self.machine: Machine | None = None

    def _need(self) -> Machine:
        if self.machine is None:
            raise ProtocolFault("no ROM loaded")
        return self.machine

    def handle(self, words: list[str]) -> Reply:
        """The reply to one request line split into words."""
        verb, args = words[0], words[1:]
        if verb == "HELLO":
            return hello_reply(CANDIDATE_NAME)
        if verb == "LOAD" and len(args) == 1:
            size = parse_int(args[0], 1, MAX_ROM_BYTES)
            rom = self.stdin.read(size)
            if len(rom) != size:
                raise ProtocolFault("ROM truncated")
            if self.machine is not None:
                self.machine.pyboy.stop(save=False)
            self.machine = Machine(rom)
            return b"OK\n"
        if verb == "FRAMES" and len(args) == 1:
            self._need().run_frames(parse_int(args[0], 0, 10_000_000))
            return b"OK\n"
        if verb == "CYCLES" and len(args) == 1:
            cycles = parse_int(args[0], 0, 10_000_000 * CYCLES_PER_FRAME)
            # PyBoy steps whole frames; round up so at least the cycles asked for run.
            self._need().run_frames(-(-cycles // CYCLES_PER_FRAME))
            return b"OK\n"
        if verb == "RUNBP" and len(args) == 1:
            return self._run_to_breakpoint(parse_int(args[0], 0, 10_000_000 * CYCLES_PER_FRAME))
        if verb == "SERIAL" and not args:
            machine = self._need()
            machine._drain()
            payload = bytes(machine.serial)
            machine.serial.clear()
            return data_reply(payload)
        if verb == "REGS" and not args:
            regs = self._need().pyboy.register_file
            names = ("A", "F", "B", "C", "D", "E")
            parts = [f"{n}={int(getattr(regs, n)) & 0xFF:02x}" for n in names]
            # PyBoy keeps H and L as one HL register.
            hl = int(regs.HL) & 0xFFFF
            parts += [f"H={hl >> 8:02x}", f"L={hl & 0xFF:02x}"]
            parts += [f"SP={int(regs.SP) & 0xFFFF:04x}", f"PC={int(regs.PC) & 0xFFFF:04x}"]
            return ("OK " + " ".join(parts) + "\n").encode()
        if verb == "MEM" and len(args) == 2:
            address = parse_int(args[0], 0, 0xFFFF)
            length = parse_int(args[1], 0, min(MAX_DATA_BYTES, 0x10000 - address))
            memory = self._need().pyboy.memory
            # PyBoy refuses an empty slice.
            return data_reply(bytes(memory[address : address + length]) if length else b"")
        if verb == "SCREEN" and not args:
            return data_reply(self._need().screen())
        if verb in ("PRESS", "RELEASE") and len(args) == 1:
            button = args[0].lower()
            if button not in BUTTONS:
                raise ProtocolFault(f"unknown button {button[:16]}")
            machine = self._need()
            if verb == "PRESS":
                machine.pyboy.button_press(button)
            else:
                machine.pyboy.button_release(button)
            return b"OK\n"
        raise ProtocolFault(f"unknown request {verb[:32]} with {len(args)} argument(s)")

    def _run_to_breakpoint(self, max_cycles: int) -> Reply:
        machine = self._need()
        frames = -(-max_cycles // CYCLES_PER_FRAME)
        for _ in range(frames):
            machine.run_frames(1, draw=False)
            if machine.at_breakpoint():
                return b"OK BREAK\n"
        return b"OK LIMIT\n"


def serve_lines(
    stdin: BinaryIO,
    stdout: BinaryIO,
    handle: Callable[[list[str]], Reply],
    faults: tuple[type[Exception], ...] = (ProtocolFault,),
) -> int:
    """Answer request lines with ``handle`` until ``QUIT`` or end of input; the exit status.

    A line over :data:`MAX_LINE_BYTES` ends the loop with status 2; an exception
    of ``faults`` raised by ``handle`` becomes an ``ERR`` reply and the loop goes on.
    """
    while True:
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            return 0
        if not line.endswith(b"\n") or len(line) > MAX_LINE_BYTES:
            stdout.write(b"ERR request line too long\n")
            stdout.flush()
            return 2
        words = line.decode("ascii", errors="replace").split()
        if not words:
            reply = b"ERR empty request\n"
        elif words == ["QUIT"]:
            stdout.write(b"OK\n")
            stdout.flush()
            return 0
        else:
            try:
                reply = handle(words)
            except faults as fault:
                reply = f"ERR {str(fault)[:200]}\n".encode("ascii", errors="replace")
        stdout.write(reply)
        stdout.flush()


def serve(stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer requests until ``QUIT`` or end of input; the exit status."""
    return serve_lines(stdin, stdout, Session(stdin).handle)


def skip_optional_imports() -> None:
    """Make PyBoy's optional imports fail fast, so a fresh candidate starts ~0.3 s sooner.

    PyBoy guards each with ``except ImportError``; a ``None`` entry in
    ``sys.modules`` raises exactly that. SDL2 alone costs about 0.3 s to load
    and the null window never calls it. Only the candidate process does this:
    importing this module elsewhere leaves ``sys.modules`` alone.
    """
    for name in OPTIONAL_MODULES:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]


def main() -> None:
    """Serve the protocol on stdin/stdout."""
    skip_optional_imports()
    # Import now, before the first request: the runner starts the next case's
    # candidate while the current case runs, so this cost overlaps real work.
    import pyboy  # noqa: F401

    raise SystemExit(serve(sys.stdin.buffer, sys.stdout.buffer))


if __name__ == "__main__":
    main()
