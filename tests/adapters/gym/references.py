"""Regenerate the reference input scripts of ``gym/cartpole`` and ``gym/frozenlake``.

CartPole: a linear controller on the observation (pole angle, its velocity,
cart position and velocity) that balances for the whole 500-step episode.
FrozenLake (4x4, not slippery): the shortest safe path to the goal.

    .venv/bin/python tests/adapters/gym/references.py cartpole > \
        src/playproof/targets/data/gym/cartpole/reference.txt
"""

from __future__ import annotations

import sys

from playproof.adapters.gym import make_game

CARTPOLE = {"env_id": "CartPole-v1"}
FROZENLAKE = {"env_id": "FrozenLake-v1", "kwargs": {"is_slippery": False, "map_name": "4x4"}}
FROZENLAKE_PATH = ("right", "right", "down", "down", "down", "right")
# Weights of (cart x, cart velocity, pole angle, pole angular velocity); positive pushes right.
_WEIGHTS = (0.1, 0.5, 10.0, 1.0)


def cartpole_inputs(seed: int = 0) -> list[str]:
    """Balance CartPole from ``seed`` until the episode ends; return the inputs."""
    game = make_game(**CARTPOLE)
    game.reset(seed)
    inputs: list[str] = []
    while not game.over():
        engine = game.evidence().engine
        push = sum(w * engine[f"obs_{i}"] for i, w in enumerate(_WEIGHTS))
        word = "right" if push > 0 else "left"
        game.step(word)
        inputs.append(word)
    game.close()
    return inputs


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "cartpole"
    words = cartpole_inputs() if which == "cartpole" else list(FROZENLAKE_PATH)
    sys.stdout.write(f"# gym/{which} reference: tests/adapters/gym/references.py {which}\n")
    sys.stdout.write("\n".join(words) + "\n")
