"""Cheat: never runs the ROM; every breakpoint run 'breaks' with Mooneye's pass registers."""

from _serve import serve


def handle(words: list[str]) -> bytes:
    if words[0] == "RUNBP":
        return b"OK BREAK\n"
    if words[0] == "REGS":
        return b"OK A=00 F=00 B=03 C=05 D=08 E=0d H=15 L=22 SP=fffe PC=0100\n"
    if words[0] == "SERIAL":
        return b"DATA 0\n"
    return b"ERR no\n"


serve(handle)
