"""Cheat: says hello, then never answers again."""

import sys
import time

sys.stdin.buffer.readline()
sys.stdout.buffer.write(b"OK playproof-corpus/1 hang\n")
sys.stdout.buffer.flush()
while True:
    time.sleep(60)
