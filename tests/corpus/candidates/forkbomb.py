"""Cheat: forks without end (the process limit must stop it), then hangs."""

import contextlib
import os
import sys

sys.stdin.buffer.readline()
sys.stdout.buffer.write(b"OK playproof-corpus/1 forkbomb\n")
sys.stdout.buffer.flush()
children = 0
while True:
    try:
        if os.fork() == 0:
            while True:
                with contextlib.suppress(OSError):
                    os.fork()
        children += 1
    except OSError:
        pass
