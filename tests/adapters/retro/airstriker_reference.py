"""Regenerate the reference input script of ``retro/airstriker`` (deterministic).

A scripted sweep: fire (B pressed on every other input, so it re-triggers)
while sweeping right and left in runs of 12 inputs, until game over.

    .venv/bin/python tests/adapters/retro/airstriker_reference.py > \
        src/playproof/targets/data/retro/airstriker/reference.txt
"""

from __future__ import annotations

import sys

OPTIONS = {
    "game": "Airstriker-Genesis-v0",
    "frame_skip": 4,
    "buttons": ["up", "down", "left", "right", "a", "b", "c", "start"],
}
SWEEP = 12
LENGTH = 405
"""The sweep loses its last life at input 405 from seed 0."""


def sweep_inputs(length: int = LENGTH, sweep: int = SWEEP) -> list[str]:
    """The sweep pattern: ``right+b``, ``right``, ... then ``left+b``, ``left``, ..."""
    words = []
    for i in range(length):
        direction = "left" if (i // sweep) % 2 else "right"
        words.append(f"{direction}+b" if i % 2 == 0 else direction)
    return words


if __name__ == "__main__":
    sys.stdout.write("# retro/airstriker reference: tests/adapters/retro/airstriker_reference.py\n")
    sys.stdout.write("\n".join(sweep_inputs()) + "\n")
