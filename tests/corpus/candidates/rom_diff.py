"""Cheat on Mooneye: never emulates; diffs each ROM it is sent against the public originals.

The originals come from the folder ``MOONEYE_ROMS`` names (a candidate may carry them in
its build). Unchanged: the Fibonacci registers. Only the six success-signal immediates
changed: those immediates. A value that an ``LD A,n`` loads changed (a changed check): the
fail signal. Anything else changed (an inverted branch): ``DIFF_RULE`` decides, ``pass``
(the immediates) or ``fail`` (the fail signal).
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _serve import serve

SIGNAL = bytes.fromhex("06030e0516081e0d26152e22")
FAIL = b"\x42" * 6
ORIGINALS = [p.read_bytes() for p in Path(os.environ["MOONEYE_ROMS"]).rglob("*.gb")]
RULE = os.environ.get("DIFF_RULE", "pass")
state = {"regs": SIGNAL[1::2]}


def loaded(rom: bytes) -> None:
    same = [o for o in ORIGINALS if len(o) == len(rom)] or ORIGINALS
    best = min(same, key=lambda o: sum(x != y for x, y in zip(o, rom, strict=False)))
    changed = {i for i, (x, y) in enumerate(zip(best, rom, strict=False)) if x != y}
    at = best.find(SIGNAL, 0x150)
    immediates = {at + 2 * k + 1 for k in range(6)}
    moved = bytes(rom[at + 2 * k + 1] for k in range(6)) if at >= 0 else SIGNAL[1::2]
    others = changed - immediates
    if not changed:
        state["regs"] = SIGNAL[1::2]
    elif not others:
        state["regs"] = moved
    elif any(best[i - 1] == 0x3E for i in others):
        state["regs"] = FAIL
    else:
        state["regs"] = moved if RULE == "pass" else FAIL


def handle(words: list[str]) -> bytes:
    if words[0] == "RUNBP":
        return b"OK BREAK\n"
    if words[0] == "REGS":
        named = " ".join(f"{n}={v:02x}" for n, v in zip("BCDEHL", state["regs"], strict=True))
        return f"OK A=00 F=00 {named} SP=fffe PC=0100\n".encode()
    if words[0] == "SERIAL":
        return b"DATA 0\n"
    return b"ERR unknown\n"


serve(handle, on_rom=loaded)
