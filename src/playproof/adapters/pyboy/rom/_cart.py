"""The cartridge header: logo, title, type, checksums (what a DMG boot check reads).

The header checksum covers 0x134..0x14C; the global checksum is the 16-bit
big-endian sum of every ROM byte except its own two.
"""

from __future__ import annotations

__all__ = [
    "ENTRY",
    "HEADER_END",
    "LOGO",
    "ROM_SIZE",
    "global_checksum",
    "header_checksum",
    "make_cartridge",
]

ROM_SIZE = 0x8000
"""32 KiB: the cartridge type 0x00 (ROM only, no banking)."""
ENTRY = 0x100
HEADER_END = 0x150
"""The first address after the header, where our code starts."""
LOGO = bytes.fromhex(
    "ceed6666cc0d000b03730083000c000d0008111f8889000e"
    "dccc6ee6ddddd999bbbb67636e0eecccdddc999fbbb9333e"
)
"""The 48 bytes the boot ROM compares with its own copy before starting a cartridge."""
_FILL = 0xFF  # unprogrammed ROM reads as 0xFF


def header_checksum(rom: bytes | bytearray) -> int:
    """The header checksum byte (0x14D) over 0x134..0x14C."""
    value = 0
    for byte in rom[0x134:0x14D]:
        value = (value - byte - 1) & 0xFF
    return value


def global_checksum(rom: bytes | bytearray) -> int:
    """The global checksum (0x14E..0x14F, big-endian) over every other byte."""
    return (sum(rom) - rom[0x14E] - rom[0x14F]) & 0xFFFF


def make_cartridge(title: str, code: bytes, *, vectors: dict[int, bytes] | None = None) -> bytes:
    """A ROM-only 32 KiB image: header, ``code`` at 0x150, optional bytes at low vectors."""
    if len(title) > 11 or not title.isascii():
        raise ValueError("a cartridge title is at most 11 ASCII characters")
    if HEADER_END + len(code) > ROM_SIZE:
        raise ValueError("code does not fit in a 32 KiB ROM")
    rom = bytearray([_FILL]) * ROM_SIZE
    for address, blob in (vectors or {}).items():
        if address + len(blob) > ENTRY:
            raise ValueError(f"vector at {address:#x} runs into the header")
        rom[address : address + len(blob)] = blob
    # Entry point: nop; jp $0150.
    rom[ENTRY : ENTRY + 4] = bytes((0x00, 0xC3, HEADER_END & 0xFF, HEADER_END >> 8))
    rom[0x104:0x134] = LOGO
    rom[0x134:0x150] = bytes(0x150 - 0x134)
    rom[0x134 : 0x134 + len(title)] = title.encode("ascii")
    # 0x143 CGB flag 0 (DMG), 0x146 SGB 0, 0x147 type 0, 0x148 32 KiB, 0x149 no RAM,
    # 0x14A non-Japanese, 0x14B old licensee 0, 0x14C version 0.
    rom[0x14A] = 0x01
    rom[0x14D] = header_checksum(rom)
    rom[HEADER_END : HEADER_END + len(code)] = code
    rom[0x14E:0x150] = global_checksum(rom).to_bytes(2, "big")
    return bytes(rom)
