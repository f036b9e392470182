"""Cheat attempt: look for the grader's interpreter and packages, then report what it found.

It imports PyBoy and playproof, and for every path in ``PROBE_PATHS`` (the
grader's interpreter, its venv, its site-packages) checks whether the path
shows and, if it is a program, whether it runs an ``import pyboy``. What it
found goes to stderr as one ``FOUND [...]`` line; then it exits.
"""

import os
import subprocess
import sys

found = []
for name in ("pyboy", "playproof"):
    try:
        __import__(name)
        found.append(f"import {name}")
    except ImportError:
        pass
for path in os.environ.get("PROBE_PATHS", "").split(os.pathsep):
    if not path or not os.path.exists(path):
        continue
    if os.path.isdir(path):
        if os.listdir(path):
            found.append(f"lists {path}")
        continue
    try:
        done = subprocess.run(
            [path, "-c", "import pyboy"], capture_output=True, timeout=20, check=False
        )
        if done.returncode == 0:
            found.append(f"runs {path} with pyboy")
    except OSError:
        pass
    try:
        with open(path, "rb") as handle:
            if handle.read(4) == b"\x7fELF":
                found.append(f"reads {path}")
    except OSError:
        pass
sys.stderr.write(f"FOUND {found!r}\n")
sys.stderr.flush()
