"""Native games written for playproof (pure Python, in-process or in a worker)."""

from playproof.adapters.native.game2048 import DIRECTIONS, Game2048, make_game

__all__ = ["DIRECTIONS", "Game2048", "make_game"]
