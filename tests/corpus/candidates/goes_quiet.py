"""Hostile: passes like the synthetic candidate, except on LOAD of a ROM starting CLOSE
(closes its stdout without replying and sleeps on) or EXIT (exits 3 without replying)."""

import os
import sys
import time

IN = sys.stdin.buffer
OUT = sys.stdout.buffer
rom = b""
told = False
while line := IN.readline(300):
    words = line.decode("ascii", "replace").split()
    if not words:
        continue
    if words[0] == "HELLO":
        OUT.write(b"OK playproof-corpus/1 goes-quiet\n")
    elif words[0] == "LOAD":
        rom, told = IN.read(int(words[1])), False
        if rom.startswith(b"CLOSE"):
            OUT.flush()
            os.close(1)
            time.sleep(300)
        if rom.startswith(b"EXIT"):
            OUT.flush()
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
