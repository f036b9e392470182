"""A tiny protocol server shared by the cheating candidates (stdlib only)."""

import sys
from collections.abc import Callable

IN = sys.stdin.buffer
OUT = sys.stdout.buffer


def reply(data: bytes) -> None:
    OUT.write(data)
    OUT.flush()


def serve(
    handle: Callable[[list[str]], bytes],
    on_load: Callable[[], None] | None = None,
    on_rom: Callable[[bytes], None] | None = None,
) -> None:
    """Answer HELLO/LOAD/FRAMES/QUIT itself; everything else goes to ``handle(words)``.

    ``on_load`` is told about every ROM loaded (for candidates that keep state);
    ``on_rom`` gets its bytes.
    """
    while True:
        line = IN.readline(300)
        if not line:
            return
        words = line.decode("ascii", "replace").split()
        if not words:
            continue
        if words[0] == "HELLO":
            reply(b"OK playproof-corpus/1 cheat\n")
        elif words[0] == "LOAD":
            rom = IN.read(int(words[1]))
            if on_load is not None:
                on_load()
            if on_rom is not None:
                on_rom(rom)
            reply(b"OK\n")
        elif words[0] == "FRAMES":
            reply(b"OK\n")
        elif words[0] == "QUIT":
            reply(b"OK\n")
            return
        else:
            reply(handle(words))
