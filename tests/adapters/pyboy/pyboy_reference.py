"""The scripted controller that made pp-collect's reference script, and the target writer.

The controller reads the player and coin positions from RAM and walks
straight to the coin (columns first), one press per move. Regenerating must
give the checked-in files byte for byte (a test checks it). Run
``python tests/adapters/pyboy/pyboy_reference.py`` to rewrite the target folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playproof.adapters.pyboy import PyBoyGame, make_game
from playproof.adapters.pyboy.rom.pp_collect import options
from playproof.targets.packaged import DATA

TARGET_DIR = DATA / "pyboy" / "pp-collect"
REFERENCE_SEED = 0
LADDER = (1, 3, 5, 10, 20)
"""Score milestones; the reference stops once it has the last one."""
MAX_REFERENCE_INPUTS = 2000


def reference_inputs(
    game: PyBoyGame, seed: int = REFERENCE_SEED, goal: int = LADDER[-1]
) -> list[str]:
    """Play from ``seed`` by reading RAM until the score reaches ``goal``."""
    game.reset(seed)
    inputs = ["start"]
    game.step("start")
    while len(inputs) < MAX_REFERENCE_INPUTS:
        ram = game.evidence().engine
        if ram["score"] >= goal or ram["over"]:
            break
        if ram["px"] != ram["cx"]:
            word = "right" if ram["cx"] > ram["px"] else "left"
        elif ram["py"] != ram["cy"]:
            word = "down" if ram["cy"] > ram["py"] else "up"
        else:
            word = "noop"  # the coin moves on the next frame
        inputs.append(word)
        game.step(word)
    return inputs


def contract_json() -> dict[str, Any]:
    """The score ladder contract."""
    milestones: list[dict[str, Any]] = []
    previous: str | None = None
    for value in LADDER:
        mid = f"score-{value}"
        milestones.append(
            {
                "id": mid,
                "requires": [previous] if previous else [],
                "check": {"kind": "state", "key": "score", "op": ">=", "value": value},
                "description": f"collect {value} coin{'s' * (value > 1)}",
            }
        )
        previous = mid
    return {"schema": "playproof/contract/v1", "game": "pp-collect", "milestones": milestones}


SEPARATION_NOTE = (
    "Measured by tests/adapters/pyboy/test_pp_collect_target.py (not yet by the calibration "
    "module): no constant-word policy, no round-robin over the vocabulary and no seeded random "
    "walk reaches score-3; constant policies never start a game with a move, and a random walk "
    "rarely reaches a coin before its timer runs out. score-1 is reachable by luck."
)


def target_json(game: PyBoyGame) -> dict[str, Any]:
    """target.json for the packaged target."""
    return {
        "name": "pyboy/pp-collect",
        "description": (
            "pp-collect, a tiny Game Boy game written for playproof (ROM assembled in-repo): "
            "press START, walk to each coin before the timer runs out; 3 lives."
        ),
        "factory": "playproof.adapters.pyboy:make_game",
        "options": options(),
        "build_digest": game.descriptor.build.digest,
        "reference_seed": REFERENCE_SEED,
        "isolation": "worker",
        "extra": "pyboy",
        "separates": True,
        "separation_note": SEPARATION_NOTE,
    }


def render() -> dict[str, str]:
    """The three target files as text."""
    game = make_game(**options())
    try:
        inputs = reference_inputs(game)
        spec = target_json(game)
    finally:
        game.close()
    return {
        "target.json": json.dumps(spec, indent=2) + "\n",
        "contract.json": json.dumps(contract_json(), indent=2) + "\n",
        "reference.txt": "# pp-collect reference, made by tests/adapters/pyboy/pyboy_reference.py\n"
        + "\n".join(inputs)
        + "\n",
    }


def main() -> None:
    """Rewrite the target folder."""
    TARGET_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (TARGET_DIR / name).write_text(text, encoding="utf-8")
        print(f"wrote {Path(TARGET_DIR / name)}")


if __name__ == "__main__":
    main()
