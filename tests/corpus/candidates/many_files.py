"""Hostile: fills its home with as many empty files as it can (FILES at most), then quits.

Removing them file by file after the case would cost the grader seconds;
the case's home must be freed at once however many there are.
"""

import os
import sys

os.chdir(os.environ.get("HOME", "."))
made = 0
try:
    while made < int(os.environ.get("FILES", "200000")):
        os.close(os.open(f"f{made}", os.O_WRONLY | os.O_CREAT, 0o600))
        made += 1
except OSError as exc:
    sys.stderr.write(f"stopped after {made} files: {exc}\n")
sys.stderr.write(f"made {made} files\n")
sys.stdin.buffer.readline()
sys.stdout.buffer.write(b"OK playproof-corpus/1 many\n")
sys.stdout.buffer.flush()
