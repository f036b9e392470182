"""Cheat on CHIP-8: never runs the ROM, answers SCREEN from screens saved beforehand.

``CHIP8_SCREENS`` is a folder of 2048-byte screens named ``<rom sha256>-<byte at 0x1FF>``;
with ``CHIP8_FIXED`` set, every SCREEN is that one file instead. With ``CHIP8_NEAREST``
set, a ROM whose digest is unknown (an altered copy) gets the screen of the known ROM
it differs from in the fewest bytes (the folder then also holds ``rom-<sha256>`` files).
"""

import hashlib
import os
from pathlib import Path

from _serve import IN, OUT, reply

folder = Path(os.environ["CHIP8_SCREENS"])
fixed = os.environ.get("CHIP8_FIXED")
nearest = bool(os.environ.get("CHIP8_NEAREST"))


def closest(rom: bytes) -> str:
    """The digest of the saved ROM closest to ``rom`` (same length, fewest bytes differ)."""
    best, fewest = "", len(rom) + 1
    for path in folder.glob("rom-*"):
        known = path.read_bytes()
        if len(known) == len(rom):
            differ = sum(a != b for a, b in zip(known, rom, strict=True))
            if differ < fewest:
                best, fewest = path.name[4:], differ
    return best


rom, rom_sha, selector = b"", "", 0
while True:
    line = IN.readline(300)
    if not line:
        break
    words = line.decode("ascii", "replace").split()
    if words[0] == "HELLO":
        reply(b"OK playproof-corpus/1 replay\n")
    elif words[0] == "LOAD":
        rom = IN.read(int(words[1]))
        rom_sha, selector = hashlib.sha256(rom).hexdigest(), 0
        reply(b"OK\n")
    elif words[0] == "POKE":
        selector = int(words[2]) if int(words[1]) == 0x1FF else selector
        reply(b"OK\n")
    elif words[0] == "SCREEN":
        name = fixed or f"{rom_sha}-{selector}"
        if nearest and not (folder / name).exists():
            name = f"{closest(rom)}-{selector}"
        screen = (folder / name).read_bytes()
        OUT.write(b"DATA %d\n" % len(screen) + screen)
        OUT.flush()
    elif words[0] == "QUIT":
        reply(b"OK\n")
        break
    else:
        reply(b"OK\n")
