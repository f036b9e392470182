"""Regenerate the reference input script of ``ale/breakout`` (deterministic).

A scripted controller that tracks the ball through three RAM bytes (ball x,
ball y, paddle x): fire when no ball is in play, otherwise steer the paddle
toward where the falling ball will cross the paddle row (straight-line
prediction with wall bounces). It is a helper, not a player an agent sees.

    .venv/bin/python tests/adapters/ale/breakout_reference.py > \
        src/playproof/targets/data/ale/breakout/reference.txt
"""

from __future__ import annotations

import sys

from playproof.adapters.ale import AleGame, make_game

RAM = {"ball_x": 99, "ball_y": 101, "paddle_x": 72}
"""Breakout RAM: ball position and paddle position (the controller reads only these)."""
MAX_INPUTS = 2500
PADDLE_ROW = 184
"""Ball y (RAM units) at which the ball meets the paddle."""
LEFT_WALL, RIGHT_WALL = 57, 200
"""Ball x range (RAM units) between the side walls."""
PADDLE_OFFSET = 9
"""RAM paddle x minus RAM ball x when the ball is over the paddle's centre."""
DEAD_ZONE = 8


def _predict(x: int, y: int, dx: int, dy: int) -> int:
    """Ball x when it reaches the paddle row, bouncing off the side walls."""
    if dy <= 0:
        return x
    steps = (PADDLE_ROW - y) / dy
    target = x + dx * steps
    span = RIGHT_WALL - LEFT_WALL
    offset = (target - LEFT_WALL) % (2 * span)
    return int(LEFT_WALL + (offset if offset <= span else 2 * span - offset))


def controller_inputs(limit: int = MAX_INPUTS) -> list[str]:
    """Play Breakout from seed 0 with the tracking controller; return the inputs."""
    game = make_game(rom="breakout", ram=RAM)
    assert isinstance(game, AleGame)
    game.reset(0)
    inputs: list[str] = []
    previous = game.evidence().engine
    while len(inputs) < limit and not game.over():
        engine = game.evidence().engine
        x, y, paddle = engine["ball_x"], engine["ball_y"], engine["paddle_x"]
        dx, dy = x - previous["ball_x"], y - previous["ball_y"]
        previous = engine
        if y == 0:
            word = "fire"
        else:
            goal = _predict(x, y, dx, dy) - PADDLE_OFFSET
            if paddle > goal + DEAD_ZONE:
                word = "left"
            elif paddle < goal - DEAD_ZONE:
                word = "right"
            else:
                word = "noop"
        game.step(word)
        inputs.append(word)
    game.close()
    return inputs


if __name__ == "__main__":
    words = controller_inputs()
    sys.stdout.write("# ale/breakout reference: tests/adapters/ale/breakout_reference.py\n")
    sys.stdout.write("\n".join(words) + "\n")
