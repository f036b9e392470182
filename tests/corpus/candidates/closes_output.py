"""Hostile: on LOAD, a ROM starting CLOSE closes stdout and sleeps on; SEGV dies of SIGSEGV."""

import os
import signal
import sys
import time

IN = sys.stdin.buffer
while line := IN.readline(300):
    words = line.split()
    if words[:1] == [b"HELLO"]:
        os.write(1, b"OK playproof-corpus/1 closes-output\n")
    elif words[:1] == [b"LOAD"]:
        rom = IN.read(int(words[1]))
        if rom.startswith(b"CLOSE"):
            os.close(1)
            time.sleep(60)
        os.kill(os.getpid(), signal.SIGSEGV)
