"""2048 that ends its own process on the word ``crash`` (a game that crashes natively).

For pool tests: a pool process that replays it dies mid-episode, as a process
running an emulator that segfaults would.
"""

from __future__ import annotations

import os

from playproof.adapters.native.game2048 import Game2048


class CrashingGame(Game2048):
    """Seeded 2048 that exits with status 7 when asked to play ``crash``."""

    def step(self, word: str) -> None:
        if word == "crash":
            os._exit(7)
        super().step(word)


def make_game() -> CrashingGame:
    """The factory a pool process calls."""
    return CrashingGame()
