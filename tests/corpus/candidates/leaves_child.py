"""Hostile: passes like the synthetic candidate, except on LOAD of a ROM starting ORPHAN:
it forks a child that keeps its stdin and stdout open and sleeps on, and exits 3 itself
without replying."""

import os
import sys
import time

IN = sys.stdin.buffer
OUT = sys.stdout.buffer
told = False
while line := IN.readline(300):
    words = line.decode("ascii", "replace").split()
    if not words:
        continue
    if words[0] == "HELLO":
        OUT.write(b"OK playproof-corpus/1 leaves-child\n")
    elif words[0] == "LOAD":
        rom, told = IN.read(int(words[1])), False
        if rom.startswith(b"ORPHAN"):
            OUT.flush()
            if os.fork() == 0:
                time.sleep(300)  # the grader's kill ends it
                os._exit(0)
            os._exit(3)
        OUT.write(b"OK\n")
    elif words[0] == "SERIAL":
        text = b"" if told else b"Passed\n"
        told = True
        OUT.write(b"DATA %d\n" % len(text) + text)
    elif words[0] in ("FRAMES", "QUIT"):
        OUT.write(b"OK\n")
        if words[0] == "QUIT":
            OUT.flush()
            break
    else:
        OUT.write(b"ERR not served\n")
    OUT.flush()
