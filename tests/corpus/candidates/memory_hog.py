"""Hostile: on every ROM, forks HOG_CHILDREN processes that each fill HOG_MIB MiB.

Each child stays far under the per-process address-space limit; together
they pass the case's total memory limit. The parent stays small, counts how
many children held their memory (stderr), and then answers like
``always_passed``, so only the total limit can fail the case.
"""

import os
import sys
import time

from _serve import serve

CHILDREN = int(os.environ.get("HOG_CHILDREN", "4"))
MIB = int(os.environ.get("HOG_MIB", "96"))


def hog() -> None:
    held = 0
    readers = []
    for _ in range(CHILDREN):
        read, write = os.pipe()
        if os.fork() == 0:
            os.close(read)
            block = b"\x01" * (MIB * 1024 * 1024)  # written, so every page is touched
            os.write(write, b"held")
            while block:
                time.sleep(60)  # hold it until the grader kills the case
        os.close(write)
        readers.append(read)
    for read in readers:
        held += os.read(read, 4) == b"held"
        os.close(read)
    sys.stderr.write(f"{held} of {CHILDREN} children hold {MIB} MiB each\n")
    sys.stderr.flush()


def handle(words: list[str]) -> bytes:
    if words[0] == "SERIAL":
        return b"DATA 7\nPassed\n"
    if words[0] == "MEM":
        block = bytes([0, 0xDE, 0xB0, 0x61]) + b"Passed\n" + bytes(int(words[2]) - 11)
        return b"DATA %d\n" % len(block) + block
    return b"ERR no\n"


serve(handle, on_load=hog)
