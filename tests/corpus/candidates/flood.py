"""Cheat: floods stdout without ever answering properly."""

import sys

sys.stdin.buffer.readline()
chunk = b"x" * 65536
while True:
    sys.stdout.buffer.write(chunk)
