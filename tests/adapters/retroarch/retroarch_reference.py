"""Make the reference script of ``retroarch/pp-collect``: walk straight to each coin.

Run: ``python tests/adapters/retroarch/retroarch_reference.py > FOLDER/reference.txt``
(it plays live on RetroArch, reading the player and coin positions after each input).
"""

from __future__ import annotations

from playproof.targets._registry import load_target_dir
from playproof.targets.packaged import DATA

COINS = 3
MAX_INPUTS = 200


def main() -> None:
    target = load_target_dir(DATA / "retroarch" / "pp-collect")
    from playproof.adapters.retroarch import make_game

    session = make_game(**target.spec.options)
    try:
        session.reset(target.spec.reference_seed)
        words: list[str] = []
        while len(words) < MAX_INPUTS:
            state = session.evidence().engine
            if state["score"] >= COINS:
                break
            dx, dy = state["cx"] - state["px"], state["cy"] - state["py"]
            word = ("right" if dx > 0 else "left") if dx else ("down" if dy > 0 else "up")
            session.step(word)
            words.append(word)
    finally:
        session.close()
    print(
        "# retroarch/pp-collect reference, made by tests/adapters/retroarch/retroarch_reference.py"
    )
    print("\n".join(words))


if __name__ == "__main__":
    main()
