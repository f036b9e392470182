"""What every variant kind shares: patches as (offset, byte) pairs, the Game Boy cartridge
header no patch may touch, a random bit flip, and how long a patched ROM's try may run."""

from __future__ import annotations

import random

MAX_ATTEMPTS = 8
"""Patches tried per variant before a case is left without one (the picture never changed)."""
HEADER = range(0x100, 0x150)
"""The cartridge header: never patched."""
Patches = tuple[tuple[int, int], ...]
"""(file offset, new byte) pairs."""
TRIAL_SLACK_FRAMES = 30
"""Frames a patched ROM's try may run past twice the original's (see ``trial_frames``)."""


class NoVariant(Exception):
    """No patch of this kind fits this ROM."""


def flip(rom: bytes, offset: int, rng: random.Random) -> tuple[bytes, Patches]:
    """``rom`` with some bits (one or more, chosen by ``rng``) of its byte at ``offset`` flipped."""
    mask = rng.randrange(1, 256)
    value = rom[offset] ^ mask
    return rom[:offset] + bytes([value]) + rom[offset + 1 :], ((offset, value),)


def trial_frames(frames: int, budget: int) -> int:
    """Frames a try of a patched ROM may run: a test that fails a check reports about when
    the original reported, so a try that runs on much longer is given up (kept variants
    finish within this, so their answers are the same under the full budget)."""
    return min(budget, 2 * frames + TRIAL_SLACK_FRAMES)
