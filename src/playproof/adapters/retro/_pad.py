"""The retro vocabulary: single buttons and ``+``-joined combinations, as button masks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from playproof.errors import TargetError

__all__ = ["pad_words"]

_DIRECTIONS = ("up", "down", "left", "right")
_DIAGONALS = (("up", "left"), ("up", "right"), ("down", "left"), ("down", "right"))
_SYSTEM = frozenset({"start", "select", "mode"})


def pad_words(
    console: Sequence[str | None], chosen: Sequence[str] | None
) -> dict[str, npt.NDArray[np.uint8]]:
    """Map each vocabulary word to its button mask over the console's buttons.

    Words: ``noop``; every chosen button; the four diagonals; every direction
    or diagonal joined with every action button (``left+b``, ``up+left+b``).
    """
    index = {name.lower(): i for i, name in enumerate(console) if name}
    buttons = tuple(chosen) if chosen is not None else tuple(index)
    unknown = [b for b in buttons if b not in index]
    if unknown:
        raise TargetError(f"buttons {unknown} are not on this pad (it has {sorted(index)})")
    if len(set(buttons)) != len(buttons):
        raise TargetError(f"buttons repeat: {list(buttons)}")

    def mask(*names: str) -> npt.NDArray[np.uint8]:
        bits = np.zeros(len(console), dtype=np.uint8)
        for name in names:
            bits[index[name]] = 1
        return bits

    words: dict[str, npt.NDArray[np.uint8]] = {"noop": mask()}
    for button in buttons:
        words[button] = mask(button)
    directions = [d for d in _DIRECTIONS if d in buttons]
    moves: list[tuple[str, ...]] = [(d,) for d in directions]
    for pair in _DIAGONALS:
        if all(d in buttons for d in pair):
            words["+".join(pair)] = mask(*pair)
            moves.append(pair)
    actions = [b for b in buttons if b not in _DIRECTIONS and b not in _SYSTEM]
    for move in moves:
        for action in actions:
            words["+".join((*move, action))] = mask(*move, action)
    return words
