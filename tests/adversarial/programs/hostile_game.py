"""2048 that turns hostile partway through a replay (a factory for the real worker child).

``make(mode, after)`` gives a seeded 2048 game that plays ``after`` inputs
honestly, then on the next one:

- ``hang``: stops answering (sleeps);
- ``die``: ends its process at once with status 9, mid-answer.
"""

from __future__ import annotations

import os
import time

from playproof.adapters.native.game2048 import Game2048

HANG_S = 3600.0


class HostileGame(Game2048):
    """2048 that hangs or dies after ``after`` inputs of an episode."""

    def __init__(self, mode: str, after: int) -> None:
        super().__init__()
        self._mode = mode
        self._after = after
        self._taken = 0

    def reset(self, seed: int) -> None:
        self._taken = 0
        super().reset(seed)

    def step(self, word: str) -> None:
        self._taken += 1
        if self._taken > self._after:
            if self._mode == "hang":
                time.sleep(HANG_S)
            if self._mode == "die":
                os._exit(9)
        super().step(word)


def make(mode: str, after: int) -> HostileGame:
    """The factory the worker child calls with the test's options."""
    return HostileGame(mode, after)
