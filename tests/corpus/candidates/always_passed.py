"""Cheat: every serial read says Passed, every status block says status 0 with signature."""

from _serve import serve


def handle(words: list[str]) -> bytes:
    if words[0] == "SERIAL":
        return b"DATA 7\nPassed\n"
    if words[0] == "MEM":
        block = bytes([0, 0xDE, 0xB0, 0x61]) + b"Passed\n" + bytes(int(words[2]) - 11)
        return b"DATA %d\n" % len(block) + block
    return b"ERR no\n"


serve(handle)
