"""A CHIP-8 interpreter with the COSMAC VIP's behaviour; standard library only.

The reference candidate of the ``chip8`` corpus runs it. The machine follows
the original interpreter's quirks:

- ``8xy1``/``8xy2``/``8xy3`` reset VF to 0 after the operation;
- ``Fx55``/``Fx65`` leave I pointing past the last register saved or loaded;
- ``Dxyn`` waits for the vertical blank: after a draw, the frame's remaining
  instructions are skipped (at most one sprite per frame);
- sprites are clipped at the right and bottom edges; only the start
  position wraps (``x % 64``, ``y % 32``);
- ``8xy6``/``8xyE`` shift VY and store the result in VX;
- ``Bnnn`` jumps to ``nnn + V0``.

A frame is ``instructions_per_frame`` instructions (or fewer, after a draw)
followed by one tick of the delay and sound timers, 60 frames per second.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DISPLAY_HEIGHT",
    "DISPLAY_WIDTH",
    "FONT",
    "FONT_ADDRESS",
    "MAX_PROGRAM_BYTES",
    "MEMORY_BYTES",
    "PROGRAM_START",
    "STACK_DEPTH",
    "Chip8",
    "Chip8Fault",
]

MEMORY_BYTES: Final = 4096
PROGRAM_START: Final = 0x200
MAX_PROGRAM_BYTES: Final = MEMORY_BYTES - PROGRAM_START
"""The largest program: it is loaded at 0x200 and fills the rest of memory."""
DISPLAY_WIDTH: Final = 64
DISPLAY_HEIGHT: Final = 32
STACK_DEPTH: Final = 16
"""Return addresses kept by ``2nnn``; one more call is a fault."""
FONT_ADDRESS: Final = 0x50
"""Where the 16 hexadecimal digit sprites (5 bytes each) live."""
FONT: Final = bytes(
    [
        0xF0, 0x90, 0x90, 0x90, 0xF0,  # 0
        0x20, 0x60, 0x20, 0x20, 0x70,  # 1
        0xF0, 0x10, 0xF0, 0x80, 0xF0,  # 2
        0xF0, 0x10, 0xF0, 0x10, 0xF0,  # 3
        0x90, 0x90, 0xF0, 0x10, 0x10,  # 4
        0xF0, 0x80, 0xF0, 0x10, 0xF0,  # 5
        0xF0, 0x80, 0xF0, 0x90, 0xF0,  # 6
        0xF0, 0x10, 0x20, 0x40, 0x40,  # 7
        0xF0, 0x90, 0xF0, 0x90, 0xF0,  # 8
        0xF0, 0x90, 0xF0, 0x10, 0xF0,  # 9
        0xF0, 0x90, 0xF0, 0x90, 0x90,  # A
        0xE0, 0x90, 0xE0, 0x90, 0xE0,  # B
        0xF0, 0x80, 0x80, 0x80, 0xF0,  # C
        0xE0, 0x90, 0x90, 0x90, 0xE0,  # D
        0xF0, 0x80, 0xF0, 0x80, 0xF0,  # E
        0xF0, 0x80, 0xF0, 0x80, 0x80,  # F
    ]
)  # fmt: skip
RANDOM_SEED: Final = 0x2A
"""``Cxnn`` draws from a fixed-seed generator, so every run of a ROM is the same."""


class Chip8Fault(Exception):
    """The program did something the machine cannot do (an unknown opcode, a stack overflow)."""


class Chip8:
    """One CHIP-8 machine: 4 KiB of memory, V0-VF, I, PC, a stack, timers, a 64x32 display."""

    def __init__(self, program: bytes) -> None:
        if not 1 <= len(program) <= MAX_PROGRAM_BYTES:
            raise Chip8Fault(f"a program is 1..{MAX_PROGRAM_BYTES} bytes, not {len(program)}")
        self.memory = bytearray(MEMORY_BYTES)
        self.memory[FONT_ADDRESS : FONT_ADDRESS + len(FONT)] = FONT
        self.memory[PROGRAM_START : PROGRAM_START + len(program)] = program
        self.v = [0] * 16
        self.i = 0
        self.pc = PROGRAM_START
        self.stack: list[int] = []
        self.delay = 0
        self.sound = 0
        self.display = bytearray(DISPLAY_WIDTH * DISPLAY_HEIGHT)
        """One byte per pixel, row-major: 1 lit, 0 dark."""
        self.keys = [False] * 16
        self.frames = 0
        self.instructions = 0
        self._waiting: int | None = None
        """``Fx0A`` in progress: the register to fill, or None."""
        self._held_at_wait: set[int] = set()
        self._pressed_in_wait: int | None = None
        self._seed = RANDOM_SEED

    # -- input -----------------------------------------------------------------

    def press(self, key: int) -> None:
        """Key ``key`` (0..15) goes down."""
        self.keys[key] = True

    def release(self, key: int) -> None:
        """Key ``key`` (0..15) comes up."""
        self.keys[key] = False

    # -- running ---------------------------------------------------------------

    def run_frames(self, frames: int, instructions_per_frame: int) -> None:
        """Run ``frames`` frames of at most ``instructions_per_frame`` instructions each."""
        for _ in range(frames):
            self.run_frame(instructions_per_frame)

    def run_frame(self, instructions_per_frame: int) -> None:
        """Run one frame: the instructions until the budget or a draw, then the timer tick."""
        for _ in range(instructions_per_frame):
            self.instructions += 1
            if self.step():
                break
        if self.delay:
            self.delay -= 1
        if self.sound:
            self.sound -= 1
        self.frames += 1

    def _random(self) -> int:
        # A 16-bit xorshift: deterministic and cheap.
        x = self._seed
        x ^= (x << 7) & 0xFFFF
        x ^= x >> 9
        x ^= (x << 8) & 0xFFFF
        self._seed = x
        return x & 0xFF

    def _get_key(self, x: int) -> bool:
        """``Fx0A``: True once a key went down and came up again while waiting."""
        if self._waiting is None:
            self._waiting = x
            self._held_at_wait = {k for k in range(16) if self.keys[k]}
            self._pressed_in_wait = None
        if self._pressed_in_wait is None:
            self._held_at_wait &= {k for k in range(16) if self.keys[k]}
            for key in range(16):
                if self.keys[key] and key not in self._held_at_wait:
                    self._pressed_in_wait = key
                    break
            return False
        if self.keys[self._pressed_in_wait]:
            return False
        self.v[x] = self._pressed_in_wait
        self._waiting = None
        self._pressed_in_wait = None
        return True

    def step(self) -> bool:
        """Execute one instruction; True when it was a draw (the frame ends there)."""
        memory, v = self.memory, self.v
        pc = self.pc
        op = (memory[pc & 0xFFF] << 8) | memory[(pc + 1) & 0xFFF]
        self.pc = (pc + 2) & 0xFFF
        kind = op >> 12
        x = (op >> 8) & 0xF
        y = (op >> 4) & 0xF
        nn = op & 0xFF
        nnn = op & 0xFFF
        if kind == 0x0:
            if op == 0x00E0:
                self.display[:] = bytes(len(self.display))
            elif op == 0x00EE:
                if not self.stack:
                    raise Chip8Fault(f"00EE with an empty stack at {pc:#05x}")
                self.pc = self.stack.pop()
            else:
                raise Chip8Fault(f"machine-code call {op:04X} at {pc:#05x} is not supported")
        elif kind == 0x1:
            self.pc = nnn
        elif kind == 0x2:
            if len(self.stack) >= STACK_DEPTH:
                raise Chip8Fault(f"stack overflow (over {STACK_DEPTH} calls) at {pc:#05x}")
            self.stack.append(self.pc)
            self.pc = nnn
        elif kind == 0x3:
            if v[x] == nn:
                self.pc = (self.pc + 2) & 0xFFF
        elif kind == 0x4:
            if v[x] != nn:
                self.pc = (self.pc + 2) & 0xFFF
        elif kind == 0x5:
            if op & 0xF:
                raise Chip8Fault(f"unknown opcode {op:04X} at {pc:#05x}")
            if v[x] == v[y]:
                self.pc = (self.pc + 2) & 0xFFF
        elif kind == 0x6:
            v[x] = nn
        elif kind == 0x7:
            v[x] = (v[x] + nn) & 0xFF
        elif kind == 0x8:
            self._alu(op, x, y, pc)
        elif kind == 0x9:
            if op & 0xF:
                raise Chip8Fault(f"unknown opcode {op:04X} at {pc:#05x}")
            if v[x] != v[y]:
                self.pc = (self.pc + 2) & 0xFFF
        elif kind == 0xA:
            self.i = nnn
        elif kind == 0xB:
            self.pc = (nnn + v[0]) & 0xFFF
        elif kind == 0xC:
            v[x] = self._random() & nn
        elif kind == 0xD:
            self.draw(v[x], v[y], op & 0xF)
            return True
        elif kind == 0xE:
            if nn == 0x9E:
                if self.keys[v[x] & 0xF]:
                    self.pc = (self.pc + 2) & 0xFFF
            elif nn == 0xA1:
                if not self.keys[v[x] & 0xF]:
                    self.pc = (self.pc + 2) & 0xFFF
            else:
                raise Chip8Fault(f"unknown opcode {op:04X} at {pc:#05x}")
        else:
            self._misc(op, x, nn, pc)
        return False

    def _alu(self, op: int, x: int, y: int, pc: int) -> None:
        v = self.v
        kind = op & 0xF
        vx, vy = v[x], v[y]
        if kind == 0x0:
            v[x] = vy
        elif kind == 0x1:
            v[x] = vx | vy
            v[0xF] = 0
        elif kind == 0x2:
            v[x] = vx & vy
            v[0xF] = 0
        elif kind == 0x3:
            v[x] = vx ^ vy
            v[0xF] = 0
        elif kind == 0x4:
            total = vx + vy
            v[x] = total & 0xFF
            v[0xF] = 1 if total > 0xFF else 0
        elif kind == 0x5:
            v[x] = (vx - vy) & 0xFF
            v[0xF] = 1 if vx >= vy else 0
        elif kind == 0x6:
            v[x] = vy >> 1
            v[0xF] = vy & 1
        elif kind == 0x7:
            v[x] = (vy - vx) & 0xFF
            v[0xF] = 1 if vy >= vx else 0
        elif kind == 0xE:
            v[x] = (vy << 1) & 0xFF
            v[0xF] = vy >> 7
        else:
            raise Chip8Fault(f"unknown opcode {op:04X} at {pc:#05x}")

    def _misc(self, op: int, x: int, nn: int, pc: int) -> None:
        v, memory = self.v, self.memory
        if nn == 0x07:
            v[x] = self.delay
        elif nn == 0x0A:
            if not self._get_key(x):
                self.pc = pc  # run this instruction again until a key is pressed and released
        elif nn == 0x15:
            self.delay = v[x]
        elif nn == 0x18:
            self.sound = v[x]
        elif nn == 0x1E:
            self.i = (self.i + v[x]) & 0xFFFF
        elif nn == 0x29:
            self.i = FONT_ADDRESS + 5 * (v[x] & 0xF)
        elif nn == 0x33:
            value = v[x]
            memory[self.i & 0xFFF] = value // 100
            memory[(self.i + 1) & 0xFFF] = value // 10 % 10
            memory[(self.i + 2) & 0xFFF] = value % 10
        elif nn == 0x55:
            for r in range(x + 1):
                memory[(self.i + r) & 0xFFF] = v[r]
            self.i = (self.i + x + 1) & 0xFFFF
        elif nn == 0x65:
            for r in range(x + 1):
                v[r] = memory[(self.i + r) & 0xFFF]
            self.i = (self.i + x + 1) & 0xFFFF
        else:
            raise Chip8Fault(f"unknown opcode {op:04X} at {pc:#05x}")

    def draw(self, x: int, y: int, rows: int) -> None:
        """XOR an 8-pixel-wide sprite of ``rows`` rows from I at (x % 64, y % 32), clipped.

        VF becomes 1 when a lit pixel goes dark, else 0.
        """
        x %= DISPLAY_WIDTH
        y %= DISPLAY_HEIGHT
        display, memory = self.display, self.memory
        collided = 0
        for row in range(rows):
            line = y + row
            if line >= DISPLAY_HEIGHT:
                break
            bits = memory[(self.i + row) & 0xFFF]
            base = line * DISPLAY_WIDTH
            for column in range(8):
                if not bits & (0x80 >> column):
                    continue
                at = x + column
                if at >= DISPLAY_WIDTH:
                    break
                if display[base + at]:
                    collided = 1
                display[base + at] ^= 1
        self.v[0xF] = collided
