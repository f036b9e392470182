"""Mooneye variants: ``mooneye-signal`` (the success signal's six immediates become other
numbers), ``mooneye-check`` (a value checked through ``regs_assert`` changes, located with
the ``.sym`` file) and Mooneye's ``dmg-branch`` (its signal changed too, so only the fail
signal, 0x42 in all six registers, is right)."""

from __future__ import annotations

import random
import re
import warnings
from typing import Any

from playproof.corpus._branch_hints import hinted_sites
from playproof.corpus._manifest import CorpusCase
from playproof.corpus._patching import (
    HEADER,
    NoVariant,
    Patches,
    flip,
    trial_frames,
)
from playproof.corpus._trials import TrialWorker, remembered
from playproof.corpus._variants_dmg import (
    branch_sites,
    first_branch,
    inverted,
    qualifying_branches,
)

MOONEYE_SIGNAL = bytes.fromhex("06030e0516081e0d26152e22")
"""``LD B,3; LD C,5; LD D,8; LD E,13; LD H,21; LD L,34``: Mooneye's success exit."""
MOONEYE_FAIL = 0x42
SERIAL_ECHO = ("B", "C", "D", "E", "H", "L")
"""The registers a Mooneye exit routine also sends over the serial port, in this order."""
MAX_QUIET_TRIES = 8
"""Inverted branches tried for a quiet one per ``mooneye-signal`` variant (most are never run,
so the first try usually qualifies)."""
REGS_ASSERT = re.compile(r"^[0-9a-f]{2}:ff([0-9a-f]{2}) hram\.regs_assert\.reg_[a-z]$", re.M)
LD_A_N, LDH_N_A = 0x3E, 0xE0


def mooneye_signal(rom: bytes, rng: random.Random) -> tuple[bytes, Patches]:
    at = rom.find(MOONEYE_SIGNAL, HEADER.stop)
    if at < 0 or rom.find(MOONEYE_SIGNAL, at + 1) >= 0:
        raise NoVariant
    out = bytearray(rom)
    while True:
        values = [rng.randrange(256) for _ in range(6)]
        if values != list(MOONEYE_SIGNAL[1::2]) and values != [MOONEYE_FAIL] * 6:
            break
    patches = tuple((at + 2 * index + 1, value) for index, value in enumerate(values))
    for offset, value in patches:
        out[offset] = value
    return bytes(out), patches


def assert_sites(rom: bytes, symbols: str) -> list[int]:
    """Offsets of ``n`` in ``LD A,n; LDH (regs_assert.*),A``: the values a test expects."""
    targets = {int(low, 16) for low in REGS_ASSERT.findall(symbols)}
    return [
        at + 1
        for at in range(HEADER.stop, len(rom) - 3)
        if rom[at] == LD_A_N and rom[at + 2] == LDH_N_A and rom[at + 3] in targets
    ]


def mooneye_check(rom: bytes, symbols: str | None, rng: random.Random) -> tuple[bytes, Patches]:
    sites = assert_sites(rom, symbols) if symbols else []
    if not sites:
        raise NoVariant
    # The success signal changes too, so neither the Fibonacci numbers nor the
    # immediates a reader finds in the ROM are the answer: only the fail signal is.
    signalled, signal = mooneye_signal(rom, rng)
    checked, check = flip(signalled, rng.choice(sites), rng)
    return checked, (*signal, *check)


def mooneye_registers(rom: bytes, frames: int) -> tuple[tuple[int, ...] | None, int]:
    """B, C, D, E, H, L at the reference's ``LD B,B`` breakpoint (None: none within
    ``frames``), checked after every frame as the reference candidate answers ``RUNBP``;
    and the frames run."""
    from playproof.corpus import reference_candidate

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        machine = reference_candidate.Machine(rom)
    try:
        for done in range(1, frames + 1):
            machine.run_frames(1, draw=False)
            if machine.at_breakpoint():
                regs = machine.pyboy.register_file
                hl = int(regs.HL) & 0xFFFF
                found = (int(regs.B), int(regs.C), int(regs.D), int(regs.E), hl >> 8, hl & 0xFF)
                return found, done
        return None, frames
    finally:
        machine.pyboy.stop(save=False)


def _mooneye_original(case: CorpusCase, rom: bytes, trials: TrialWorker) -> tuple[bool, int]:
    """Whether the reference ends the original with the success signal (3, 5, 8, 13, 21,
    34), and the frames it takes to its breakpoint (the budget: none, or it cannot run the
    ROM); one run in the trial child, remembered per process.

    Where it does not pass (PyBoy fails the ``boot_*`` tests: it runs its own boot ROM), a
    variant's answer would be the reference's failure, and an emulator better than the
    reference, which passes the original, would fail the variant: such cases get only a
    changed check (``mooneye-check``), which every emulator fails.
    """
    frames = case.budget_frames
    reply = remembered(trials, "mooneye", rom, frames, frames)
    if reply is None:
        return False, frames
    return list(reply[0] or []) == list(MOONEYE_SIGNAL[1::2]), int(reply[1])


def signal_variant(
    case: CorpusCase, rom: bytes, rng: random.Random, trials: TrialWorker
) -> tuple[bytes, Patches]:
    """``mooneye-signal``, for a case the reference passes (see :func:`_mooneye_original`):
    the success signal moved and, where one is found, a quiet inverted branch too.

    A quiet branch is one whose inversion leaves the reference's run as it was: the test
    still ends with the (moved) success signal, at the same frame. With it, this variant
    changes a branch as the failing ``dmg-branch`` variants do, so a candidate that diffs
    the ROM against the public original cannot read the outcome off the kind of change: a
    signal and a branch changed is a pass here and a fail there, which only running the ROM
    tells. Without one (none among :data:`MAX_QUIET_TRIES` tries) only the signal moves.
    """
    passes, frames = _mooneye_original(case, rom, trials)
    if not passes:
        raise NoVariant
    signalled, signal = mooneye_signal(rom, rng)
    moved = {offset for offset, _ in signal}
    loud = set(hinted_sites(rom))  # these make the test fail
    sites = [at for at in branch_sites(rom) if at not in moved and at not in loud]
    rng.shuffle(sites)
    expected = [value for _, value in signal]
    budget = trial_frames(frames, case.budget_frames)
    for at in sites[:MAX_QUIET_TRIES]:
        altered, patch = inverted(signalled, at)
        reply = trials.run("mooneye", altered, budget, budget)
        if reply is not None and list(reply[0] or []) == expected and int(reply[1]) == frames:
            return altered, (*signal, *patch)
    return signalled, signal


def _branch_search(
    case: CorpusCase, rom: bytes, rng: random.Random, trials: TrialWorker
) -> tuple[bytes, Patches, list[int], tuple[str, object, int]]:
    """The ROM with its success signal moved, the patches that moved it, the branches to try
    (none inside the signal) and the try (kind, argument, frames)."""
    # As with a changed check, the success signal changes too: only the fail signal is right.
    passes, frames = _mooneye_original(case, rom, trials)
    if not passes:
        raise NoVariant  # its answer would be the reference's failure
    signalled, signal = mooneye_signal(rom, rng)
    moved = {offset for offset, _ in signal}
    budget = trial_frames(frames, case.budget_frames)
    sites = [at for at in branch_sites(rom) if at not in moved]
    return signalled, signal, sites, ("mooneye", budget, budget)


def _fails(reply: Any) -> bool:
    return bool(reply[0] == [MOONEYE_FAIL] * 6)


def mooneye_branch(
    case: CorpusCase, rom: bytes, rng: random.Random, trials: TrialWorker
) -> tuple[bytes, Patches]:
    signalled, signal, sites, request = _branch_search(case, rom, rng, trials)
    altered, patch = first_branch(signalled, sites, rng, trials, request, _fails, hinted_sites(rom))
    return altered, (*signal, *patch)


def mooneye_branch_hints(case: CorpusCase, rom: bytes, trials: TrialWorker) -> list[int]:
    """Every inverted branch that makes the reference end with the fail signal (tried with
    the success signal moved by a fixed draw, as a grading moves it by its seed's)."""
    try:
        signalled, _, sites, request = _branch_search(case, rom, random.Random(0), trials)
    except NoVariant:
        return []  # the reference fails it: no branch variant
    return qualifying_branches(signalled, sites, trials, request, _fails)
