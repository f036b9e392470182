"""Cheat on Mooneye: never runs the ROM; reads the success signal's immediates out of the
ROM bytes (``LD B,n; LD C,n; LD D,n; LD E,n; LD H,n; LD L,n``) and reports them at a
breakpoint it claims at once. Passes every ROM whose test would pass, altered or not."""

import re

from _serve import serve

SIGNAL = re.compile(rb"\x06(.)\x0e(.)\x16(.)\x1e(.)\x26(.)\x2e(.)", re.S)
state = {"regs": b"\x03\x05\x08\x0d\x15\x22"}


def loaded(rom: bytes) -> None:
    found = SIGNAL.search(rom, 0x150)
    state["regs"] = b"".join(found.groups()) if found else b"\x42" * 6


def handle(words: list[str]) -> bytes:
    if words[0] == "RUNBP":
        return b"OK BREAK\n"
    if words[0] == "REGS":
        names = ("B", "C", "D", "E", "H", "L")
        fields = " ".join(f"{n}={v:02x}" for n, v in zip(names, state["regs"], strict=True))
        return f"OK A=00 F=00 {fields} SP=fffe PC=0100\n".encode()
    if words[0] == "SERIAL":
        return b"DATA 0\n"
    return b"ERR no\n"


serve(handle, on_rom=loaded)
