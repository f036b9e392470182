"""Hostile: leaves a chain of folders thousands deep in its home, then says hello and quits.

Python's own tree walks and removals recurse once per level; the grader's
cleanup of this home must not.
"""

import os
import sys

os.chdir(os.environ.get("HOME", "."))
for _ in range(int(os.environ.get("DEPTH", "3000"))):
    os.mkdir("d")
    os.chdir("d")
sys.stdin.buffer.readline()
sys.stdout.buffer.write(b"OK playproof-corpus/1 deep\n")
sys.stdout.buffer.flush()
