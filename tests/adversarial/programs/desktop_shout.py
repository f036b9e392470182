"""A program that answers every input with about 120 KB of text (for the transcript's size bound).

Each line read prints ``said N``, then 60,000 copies of a two-byte character,
then the prompt ``> ``.
"""

import sys

LOUD = 60_000

sys.stdout.write("> ")
sys.stdout.flush()
for n, _line in enumerate(sys.stdin, start=1):
    sys.stdout.write(f"said {n}\n" + "\u00e9" * LOUD + "\n> ")
    sys.stdout.flush()
