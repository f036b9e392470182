"""Cheat on CHIP-8: never runs the ROM, answers SCREEN from screens saved beforehand.

``CHIP8_SCREENS`` is a folder of 2048-byte screens named ``<rom sha256>-<byte at 0x1FF>``;
with ``CHIP8_FIXED`` set, every SCREEN is that one file instead.
"""

import hashlib
import os
from pathlib import Path

from _serve import IN, OUT, reply

folder = Path(os.environ["CHIP8_SCREENS"])
fixed = os.environ.get("CHIP8_FIXED")
rom_sha, selector = "", 0
while True:
    line = IN.readline(300)
    if not line:
        break
    words = line.decode("ascii", "replace").split()
    if words[0] == "HELLO":
        reply(b"OK playproof-corpus/1 replay\n")
    elif words[0] == "LOAD":
        rom_sha, selector = hashlib.sha256(IN.read(int(words[1]))).hexdigest(), 0
        reply(b"OK\n")
    elif words[0] == "POKE":
        selector = int(words[2]) if int(words[1]) == 0x1FF else selector
        reply(b"OK\n")
    elif words[0] == "SCREEN":
        name = fixed or f"{rom_sha}-{selector}"
        screen = (folder / name).read_bytes()
        OUT.write(b"DATA %d\n" % len(screen) + screen)
        OUT.flush()
    elif words[0] == "QUIT":
        reply(b"OK\n")
        break
    else:
        reply(b"OK\n")
