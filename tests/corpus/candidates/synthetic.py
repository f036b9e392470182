"""Passes the synthetic corpora of the adversarial tests; floods serial on ROMs starting FLOOD.

Self-contained (no sibling imports), so it also runs when started through a symlink.
"""

import sys

IN = sys.stdin.buffer
OUT = sys.stdout.buffer
FLOOD = b"x" * 65536
rom = b""
told = False
while True:
    line = IN.readline(300)
    if not line:
        break
    words = line.decode("ascii", "replace").split()
    if not words:
        continue
    if words[0] == "HELLO":
        OUT.write(b"OK playproof-corpus/1 synthetic\n")
    elif words[0] == "LOAD":
        rom, told = IN.read(int(words[1])), False
        OUT.write(b"OK\n")
    elif words[0] == "SERIAL":
        text = FLOOD if rom.startswith(b"FLOOD") else b"" if told else b"Passed\n"
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
