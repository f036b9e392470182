"""Cheat: replays a transcript recorded from another ROM (given in the environment)."""

import os

from _serve import serve

TRANSCRIPT = os.environ.get("CHEAT_TRANSCRIPT", "").encode("latin-1")
sent: list[bool] = []


def handle(words: list[str]) -> bytes:
    if words[0] == "SERIAL":
        data = b"" if sent else TRANSCRIPT
        sent.append(True)
        return b"DATA %d\n" % len(data) + data
    if words[0] == "MEM":
        return b"DATA %d\n" % int(words[2]) + bytes(int(words[2]))
    return b"ERR no\n"


serve(handle)
