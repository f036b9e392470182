"""Regenerate the reference input script of ``native/2048`` (deterministic).

A greedy corner player: try moves in a fixed preference order and take the
first whose one-step result keeps the largest tile in the corner and scores
most. It reads the game state through checkpoints only, like any explorer.

    python tools/make_2048_reference.py > src/playproof/targets/data/native/2048/reference.txt
"""

from __future__ import annotations

import sys

from playproof.adapters.native import Game2048

PREFERENCE = ("down", "left", "right", "up")


def best_move(game: Game2048) -> str | None:
    start = game.checkpoint()
    best: tuple[int, int, int] | None = None
    choice = None
    for rank, move in enumerate(PREFERENCE):
        game.restore(start)
        before = game.evidence().engine
        game.step(move)
        after = game.evidence().engine
        if after["moves"] == before["moves"]:
            continue
        key = (after["empty_cells"] + (after["score"] - before["score"]) // 8, -rank, 0)
        if best is None or key > best:
            best, choice = key, move
    game.restore(start)
    return choice


def main(seed: int = 0, limit: int = 3000) -> list[str]:
    game = Game2048()
    game.reset(seed)
    inputs: list[str] = []
    while not game.over() and len(inputs) < limit:
        move = best_move(game)
        if move is None:
            break
        game.step(move)
        inputs.append(move)
    return inputs


if __name__ == "__main__":
    moves = main()
    sys.stdout.write("# native/2048 reference, seed 0, made by tools/make_2048_reference.py\n")
    sys.stdout.write("\n".join(moves) + "\n")
