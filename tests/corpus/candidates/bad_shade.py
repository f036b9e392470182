"""Hostile: its screen holds a byte that is no DMG shade (0..3)."""

from _serve import serve


def handle(words: list[str]) -> bytes:
    if words[0] == "SERIAL":
        return b"DATA 0\n"
    if words[0] == "SCREEN":
        return b"DATA 23040\n" + bytes(23039) + b"\x07"
    return b"ERR no\n"


serve(handle)
