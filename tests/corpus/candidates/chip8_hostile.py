"""A CHIP-8 candidate that misbehaves on SCREEN as ``CHIP8_MODE`` says (stdlib only)."""

import os

from _serve import serve

MODE = os.environ.get("CHIP8_MODE", "")


def handle(words: list[str]) -> bytes:
    if words[0] != "SCREEN":
        return b"OK\n"
    if MODE == "not-a-bit":
        screen = bytes(2047) + b"\x02"
    elif MODE == "short":
        screen = bytes(100)
    elif MODE == "oversized":
        screen = bytes(4096)
    else:
        screen = bytes(2048)
    return b"DATA %d\n" % len(screen) + screen


serve(handle)
