"""What a boot state says about the emulated machine, apart from the host it was made on.

RetroArch 1.14 writes a state as ``RASTATE`` and a version byte, then blocks
(four-byte id, four-byte little-endian size, data padded to 8 bytes) up to an
``END `` block; the ``MEM `` block is the core's own serialization.

Measured: mGBA makes byte-identical states in two launches. gambatte does not,
for two reasons that do not touch the emulated game: its state is a list of
named fields (name, NUL, 24-bit big-endian size, data) after a 5-byte header,
and ``rtcbase``/``rtchalt`` hold the host's clock at launch; on a cartridge
without a memory mapper, ``rambank``, ``rambmod`` and ``rombank`` are never
set and hold whatever the memory held. :func:`state_fingerprint` blanks those
fields, and only those, before hashing; any other difference between two
launches stays a difference. A cartridge with a real-time clock on gambatte
is refused: the core runs that clock from the host's, so no replay repeats.

>>> state_fingerprint(b"not a state", b"") == state_fingerprint(b"not a state", b"")
True
"""

from __future__ import annotations

import hashlib

from playproof.errors import TargetError

__all__ = ["state_fingerprint"]

_MAGIC = b"RASTATE"
_MEM = b"MEM "
_END = b"END "
_GAMBATTE_HEADER = 5
_HOST_CLOCK = frozenset({b"rtcbase", b"rtchalt"})
"""gambatte fields holding the host's clock."""
_UNSET_MAPPER = frozenset({b"rambank", b"rambmod", b"rombank"})
"""gambatte fields a cartridge without a mapper never sets."""
_CART_TYPE = 0x147
_ROM_ONLY = 0x00
_CLOCK_CARTS = frozenset({0x0F, 0x10})
"""Cartridge types with a real-time clock (MBC3 + timer)."""


def _mem_block(state: bytes) -> tuple[int, int] | None:
    """Start and end of the ``MEM`` block's data, or None when ``state`` is not RASTATE."""
    if not state.startswith(_MAGIC):
        return None
    offset = len(_MAGIC) + 1
    while offset + 8 <= len(state):
        block, size = (
            state[offset : offset + 4],
            int.from_bytes(state[offset + 4 : offset + 8], "little"),
        )
        start, end = offset + 8, offset + 8 + size
        if end > len(state):
            return None
        if block == _MEM:
            return start, end
        if block == _END:
            return None
        offset = start + ((size + 7) & ~7)
    return None


def _gambatte_fields(mem: bytes) -> list[tuple[bytes, int, int]] | None:
    """(name, data start, data end) of each named field, or None unless all of ``mem`` parses."""
    fields: list[tuple[bytes, int, int]] = []
    offset = _GAMBATTE_HEADER
    while offset < len(mem):
        nul = mem.find(b"\0", offset, offset + 33)
        if nul <= offset:
            return None
        name = mem[offset:nul]
        if not all(0x20 < c < 0x7F for c in name) or nul + 4 > len(mem):
            return None
        start = nul + 4
        end = start + int.from_bytes(mem[nul + 1 : start], "big")
        if end > len(mem):
            return None
        fields.append((name, start, end))
        offset = end
    return fields if fields and offset == len(mem) else None


def state_fingerprint(state: bytes, rom: bytes) -> str:
    """SHA-256 of ``state`` with the host-only fields blanked (see the module docstring)."""
    found = _mem_block(state)
    fields = _gambatte_fields(state[found[0] : found[1]]) if found is not None else None
    if found is None or fields is None:
        return hashlib.sha256(state).hexdigest()
    cart = rom[_CART_TYPE] if len(rom) > _CART_TYPE else None
    names = {name for name, _, _ in fields}
    if cart in _CLOCK_CARTS and names & _HOST_CLOCK:
        raise TargetError(
            "this cartridge has a real-time clock, which the core runs from the host's "
            "clock: no replay of it repeats; it cannot be a verifiable target"
        )
    blank = _HOST_CLOCK | (_UNSET_MAPPER if cart == _ROM_ONLY else frozenset())
    normal = bytearray(state)
    base = found[0]
    for name, start, end in fields:
        if name in blank:
            normal[base + start : base + end] = bytes(end - start)
    return hashlib.sha256(bytes(normal)).hexdigest()
