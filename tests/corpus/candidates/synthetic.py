"""Passes the synthetic corpora of the adversarial tests, and misbehaves on ROMs so named.

On a ROM starting FLOOD it floods serial. On LOAD of a ROM starting CLOSE it
closes its stdout without replying and sleeps on; EXIT exits 3 without
replying; ORPHAN forks a child that keeps stdin and stdout open and sleeps on,
and exits 3 itself without replying; SEGV dies of SIGSEGV.

Self-contained (no sibling imports), so it also runs when started through a symlink.
"""

import os
import signal
import sys
import time

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
        if rom.startswith((b"CLOSE", b"EXIT", b"ORPHAN", b"SEGV")):
            OUT.flush()
            if rom.startswith(b"SEGV"):
                os.kill(os.getpid(), signal.SIGSEGV)
            if rom.startswith(b"CLOSE"):
                os.close(1)
                time.sleep(300)  # the grader's kill ends it
            if rom.startswith(b"ORPHAN") and os.fork() == 0:
                time.sleep(300)  # the grader's kill ends it
                os._exit(0)
            os._exit(3)
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
