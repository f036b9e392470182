"""The ``chip8-sprite`` variant: one byte of sprite data a CHIP-8 test draws gets some bits
flipped, so the final screen is another picture (found by tracing the reference)."""

from __future__ import annotations

import random

from playproof.corpus._manifest import CorpusCase
from playproof.corpus._patching import MAX_ATTEMPTS, NoVariant, Patches, flip
from playproof.errors import FormatError


def chip8_screen(rom: bytes, case: CorpusCase, trace: set[int] | None = None) -> bytes:
    """The reference interpreter's final screen on ``rom``, driven as the runner drives it.

    With ``trace``, the program-area offsets of bytes drawn as sprites since the
    last screen clear, and never executed, are added to it.
    """
    from playproof.corpus.chip8.machine import PROGRAM_START, Chip8

    setup = case.chip8
    if setup is None:
        raise FormatError(f"case {case.id!r} has no CHIP-8 setup")
    drawn: set[int] = set()
    executed: set[int] = set()

    class Traced(Chip8):
        def step(self) -> bool:
            if trace is not None:
                executed.update((self.pc, self.pc + 1))
                if self.memory[self.pc] == 0x00 and self.memory[(self.pc + 1) & 0xFFF] == 0xE0:
                    drawn.clear()  # 00E0 clears the screen: only later sprites stay visible
            return super().step()

        def draw(self, x: int, y: int, rows: int) -> None:
            if trace is not None:
                drawn.update((self.i + row) & 0xFFF for row in range(rows))
            super().draw(x, y, rows)

    machine = Traced(rom)
    for poke in setup.poke:
        machine.memory[poke.address] = poke.value
    done = 0
    for event in setup.keys:
        machine.run_frames(event.frame - done, setup.instructions_per_frame)
        done = event.frame
        (machine.press if event.down else machine.release)(event.key)
    machine.run_frames(case.budget_frames - done, setup.instructions_per_frame)
    if trace is not None:
        for address in drawn - executed:
            offset = address - PROGRAM_START
            if 0 <= offset < len(rom) and machine.memory[address] == rom[offset]:
                trace.add(offset)
    return bytes(machine.display)


def chip8_sprite(case: CorpusCase, rom: bytes, rng: random.Random) -> tuple[bytes, Patches]:
    sprites: set[int] = set()
    original = chip8_screen(rom, case, sprites)
    choices = sorted(sprites)
    for _ in range(MAX_ATTEMPTS if choices else 0):
        altered, patch = flip(rom, rng.choice(choices), rng)
        if chip8_screen(altered, case) != original:
            return altered, patch
    raise NoVariant
