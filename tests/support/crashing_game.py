"""2048 that ends its own process on the word ``crash`` (a game that crashes natively),
and never returns from the word ``hang`` (a game that hangs).

For pool tests: a pool process that replays it dies mid-episode, as a process
running an emulator that segfaults would, or stays stuck in it.
"""

from __future__ import annotations

import os
import time

from playproof.adapters.native.game2048 import Game2048


class CrashingGame(Game2048):
    """Seeded 2048 that exits with status 7 when asked to play ``crash``, and hangs on ``hang``."""

    def step(self, word: str) -> None:
        if word == "crash":
            os._exit(7)
        while word == "hang":
            time.sleep(1)
        super().step(word)


def make_game() -> CrashingGame:
    """The factory a pool process calls."""
    return CrashingGame()


def make_game_that_hangs() -> CrashingGame:
    """A factory that never returns (a game that hangs while it is built)."""
    while True:
        time.sleep(1)
