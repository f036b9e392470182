"""Game Boy variants shared by the corpora: ``dmg-tile`` (tile data a ``frames`` case shows
gets some bits flipped) and the branch machinery behind ``dmg-branch`` (a conditional
jump, call or return after a flag-setting instruction, inverted and tried in a child)."""

from __future__ import annotations

import random
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from playproof.corpus._manifest import CorpusCase
from playproof.corpus._patching import HEADER, MAX_ATTEMPTS, NoVariant, Patches, flip
from playproof.corpus._trials import TrialWorker

CONDITIONAL = frozenset({0x20, 0x28, 0x30, 0x38, 0xC0, 0xC2, 0xC4, 0xC8, 0xCA, 0xCC})
CONDITIONAL |= frozenset({0xD0, 0xD2, 0xD4, 0xD8, 0xDA, 0xDC})
"""``JR cc``, ``RET cc``, ``JP cc`` and ``CALL cc``: the conditional control transfers."""
CONDITION_BIT = 0x08
"""XORed into a conditional opcode, swaps NZ and Z, or NC and C (``JR NZ`` 0x20, ``JR Z`` 0x28)."""
FLAGS_ONE_BYTE = frozenset(range(0xA0, 0xC0))
"""``AND``, ``XOR``, ``OR`` and ``CP`` with a register: set the flags a branch then reads."""
FLAGS_IMMEDIATE = frozenset({0xC6, 0xCE, 0xD6, 0xDE, 0xE6, 0xEE, 0xF6, 0xFE})
"""``ADD``, ``ADC``, ``SUB``, ``SBC``, ``AND``, ``XOR``, ``OR`` and ``CP`` with an immediate."""
PREFIX_CB = 0xCB
"""``BIT``, rotations and shifts (two bytes): set Z or C."""
MAX_BRANCH_ATTEMPTS = 48
"""Branches tried per ``dmg-branch`` variant: about one in ten candidates makes a test fail
cleanly (some tests fewer: 5 of 42 in ``mem_timing-2`` 03), and a try costs one reference
run (0.1 s for most Blargg tests, 0.05 s Mooneye); most cases stop after a few tries."""


_IN_PROCESS = threading.Lock()
"""One in-process PyBoy at a time (cases are searched on several threads)."""


def dmg_frame(rom: bytes, frames: int) -> tuple[bytes, bytes]:
    """(screen shades, VRAM tile data) of the reference after ``frames`` drawn frames."""
    with _IN_PROCESS:
        return _frame(rom, frames)


def _frame(rom: bytes, frames: int) -> tuple[bytes, bytes]:
    from playproof.corpus import reference_candidate

    with warnings.catch_warnings():
        # pysdl2 announces where it found SDL; the null window never uses it.
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        machine = reference_candidate.Machine(rom)
    try:
        machine.run_frames(frames)
        tiles = bytes(machine.pyboy.memory[0x8000:0x9800])
        return machine.screen(), tiles
    finally:
        machine.pyboy.stop(save=False)


def dmg_tile(case: CorpusCase, rom: bytes, rng: random.Random) -> tuple[bytes, Patches]:
    screen, vram = dmg_frame(rom, case.budget_frames)
    starts: set[int] = set()
    for at in range(0, len(vram), 16):
        tile = vram[at : at + 16]
        if len(set(tile)) > 1 and (found := rom.find(tile, HEADER.stop)) >= 0:
            starts.add(found)
    choices = sorted(starts)
    for _ in range(MAX_ATTEMPTS if choices else 0):
        altered, patch = flip(rom, rng.choice(choices) + rng.randrange(16), rng)
        if dmg_frame(altered, case.budget_frames)[0] != screen:
            return altered, patch
    raise NoVariant


def branch_sites(rom: bytes) -> list[int]:
    """Offsets of conditional jumps, calls and returns right after a flag-setting instruction
    (outside the header). Found without symbols; most are never run, which trying tells."""
    return [
        at
        for at in range(HEADER.stop + 2, len(rom))
        if rom[at] in CONDITIONAL
        and (
            rom[at - 1] in FLAGS_ONE_BYTE
            or rom[at - 2] in FLAGS_IMMEDIATE
            or rom[at - 2] == PREFIX_CB
        )
    ]


def inverted(rom: bytes, at: int) -> tuple[bytes, Patches]:
    value = rom[at] ^ CONDITION_BIT
    return rom[:at] + bytes([value]) + rom[at + 1 :], ((at, value),)


def first_branch(
    rom: bytes,
    sites: list[int],
    rng: random.Random,
    trials: TrialWorker,
    request: tuple[str, object, int],
    accept: Callable[[Any], bool],
    hinted: Sequence[int] = (),
) -> tuple[bytes, Patches]:
    """The first of ``sites``, in the seed's order, whose inverted branch the reference's
    reply (a try in ``trials``: kind, argument, frames) makes ``accept`` true.

    The ``hinted`` sites among ``sites`` (see :mod:`playproof.corpus._branch_hints`) are
    tried first, in the seed's order; the others only when no hinted one qualifies.
    """
    hints = set(hinted) & set(sites)
    preferred, others = sorted(hints), [at for at in sites if at not in hints]
    for group in (preferred, others):
        rng.shuffle(group)
        for at in group[:MAX_BRANCH_ATTEMPTS]:
            altered, patch = inverted(rom, at)
            # None: the patched ROM broke or hung the reference; try the next branch.
            if _accepted(trials, altered, request, accept):
                return altered, patch
    raise NoVariant


def qualifying_branches(
    rom: bytes,
    sites: Sequence[int],
    trials: TrialWorker,
    request: tuple[str, object, int],
    accept: Callable[[Any], bool],
) -> list[int]:
    """Every one of ``sites`` whose inverted branch ``accept`` takes (one try each): what a
    hints file lists for a ROM."""
    return [at for at in sites if _accepted(trials, inverted(rom, at)[0], request, accept)]


def _accepted(
    trials: TrialWorker,
    altered: bytes,
    request: tuple[str, object, int],
    accept: Callable[[Any], bool],
) -> bool:
    kind, argument, frames = request
    reply = trials.run(kind, altered, argument, frames)
    return reply is not None and accept(reply)
