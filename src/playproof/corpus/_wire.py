"""Constants of the candidate line protocol (docs/corpus-protocol.md); stdlib only.

The reference candidate imports this module directly, so it must stay free of
anything but the standard library: a candidate's start-up time is part of every
case's cost.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BUTTONS",
    "CHIP8_KEYS",
    "CHIP8_MAX_PROGRAM_BYTES",
    "CHIP8_SCREEN_BYTES",
    "CHIP8_SCREEN_HEIGHT",
    "CHIP8_SCREEN_WIDTH",
    "PLATFORMS",
    "CYCLES_PER_FRAME",
    "MAX_DATA_BYTES",
    "MAX_LINE_BYTES",
    "MAX_ROM_BYTES",
    "PROTOCOL_NAME",
    "PROTOCOL_VERSION",
    "SCREEN_BYTES",
    "SCREEN_HEIGHT",
    "SCREEN_WIDTH",
    "RGB_SCREEN_BYTES",
    "SHADE_RGB",
    "screen_rgb",
]

PROTOCOL_NAME: Final = "playproof-corpus"
PROTOCOL_VERSION: Final = 1

MAX_LINE_BYTES: Final = 256
"""A request or reply line, including its LF, is at most this long."""
MAX_DATA_BYTES: Final = 65536
"""A ``DATA`` payload (serial bytes, memory, screen) is at most this long."""
MAX_ROM_BYTES: Final = 8 * 1024 * 1024
"""A ROM sent by ``LOAD`` is at most this long (the largest Game Boy cartridge)."""

SCREEN_WIDTH: Final = 160
SCREEN_HEIGHT: Final = 144
SCREEN_BYTES: Final = SCREEN_WIDTH * SCREEN_HEIGHT
"""``SCREEN`` returns one shade byte (0 lightest .. 3 darkest) per pixel, row-major."""

SHADE_RGB: Final = (0xFF, 0xAA, 0x55, 0x00)
"""The grey level (R = G = B) of each DMG shade 0..3 in a hashed screen."""
RGB_SCREEN_BYTES: Final = SCREEN_BYTES * 3

CYCLES_PER_FRAME: Final = 70224
"""T-cycles in one DMG frame (4.194304 MHz / 59.7275 Hz)."""

BUTTONS: Final = ("a", "b", "start", "select", "up", "down", "left", "right")

PLATFORMS: Final = ("dmg", "chip8")
"""Machines a case can run on; a ``chip8`` case starts with ``PLATFORM chip8 <ipf>``."""
CHIP8_SCREEN_WIDTH: Final = 64
CHIP8_SCREEN_HEIGHT: Final = 32
CHIP8_SCREEN_BYTES: Final = CHIP8_SCREEN_WIDTH * CHIP8_SCREEN_HEIGHT
"""A CHIP-8 ``SCREEN`` is one byte per pixel, row-major: 1 lit, 0 dark; the grader hashes
these 2048 bytes as they are."""
CHIP8_MAX_PROGRAM_BYTES: Final = 4096 - 0x200
"""A CHIP-8 program is loaded at 0x200 and fills at most the rest of the 4 KiB memory."""
CHIP8_KEYS: Final = "0123456789abcdef"
"""CHIP-8 keypad keys in ``PRESS``/``RELEASE``: one hexadecimal digit."""


def screen_rgb(shades: bytes) -> bytes:
    """The frame as the ``framebuffer`` criterion hashes it: R, G, B per pixel, row-major.

    Each shade byte (0..3) becomes three equal bytes from :data:`SHADE_RGB`;
    a byte above 3 raises ValueError.
    """
    table = bytes(b for level in SHADE_RGB for b in (level, level, level))
    out = bytearray(len(shades) * 3)
    for index, shade in enumerate(shades):
        if shade > 3:
            raise ValueError(f"pixel {index} has shade {shade}, expected 0..3")
        out[3 * index : 3 * index + 3] = table[3 * shade : 3 * shade + 3]
    return bytes(out)
