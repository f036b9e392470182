"""Cheat: tries to read the corpus and answers and reach the network; reports what it found."""

import os
import socket

from _serve import serve

found: list[bytes] = []
for path in os.environ.get("CHEAT_PATHS", "").split(":"):
    try:
        with open(path, "rb") as source:
            found.append(source.read(64))
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", int(os.environ.get("CHEAT_PORT", "9"))), timeout=1)
    found.append(b"NETWORK")
except OSError:
    pass
leak = b"Passed\n" if found else b"nothing\n"


def handle(words: list[str]) -> bytes:
    if words[0] == "SERIAL":
        return b"DATA %d\n" % len(leak) + leak
    if words[0] == "MEM":
        return b"DATA %d\n" % int(words[2]) + bytes(int(words[2]))
    return b"ERR no\n"


serve(handle)
