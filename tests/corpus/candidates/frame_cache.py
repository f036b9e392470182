"""Cheat on a Game Boy frames case: never runs the ROM, answers SCREEN from a frame cache.

``FRAME_CACHE`` is a folder of 23040-byte screens (one shade byte per pixel) named by
the SHA-256 of the ROM they belong to. A ROM whose digest is not cached (an altered
copy) gets the cached frame of the same-length ROM it differs from least.
"""

import hashlib
import os
from pathlib import Path

from _serve import serve

folder = Path(os.environ["FRAME_CACHE"])
state = {"rom": b""}


def closest(rom: bytes) -> Path:
    known = [p for p in folder.glob("rom-*") if p.stat().st_size == len(rom)]
    best = min(known, key=lambda p: sum(a != b for a, b in zip(p.read_bytes(), rom, strict=True)))
    return folder / best.name[4:]


def handle(words: list[str]) -> bytes:
    if words[0] == "SERIAL":
        return b"DATA 0\n"
    if words[0] == "SCREEN":
        cached = folder / hashlib.sha256(state["rom"]).hexdigest()
        screen = (cached if cached.exists() else closest(state["rom"])).read_bytes()
        return b"DATA %d\n" % len(screen) + screen
    return b"ERR no\n"


def loaded(rom: bytes) -> None:
    state["rom"] = rom


serve(handle, on_rom=loaded)
