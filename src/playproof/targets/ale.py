"""Entry points for the packaged Atari (ALE) targets (install ``playproof[ale]``)."""

from __future__ import annotations

from playproof.targets._registry import Target
from playproof.targets.packaged import packaged

__all__ = ["breakout"]


def breakout() -> Target:
    """``ale/breakout``: Atari 2600 Breakout, a score ladder from a RAM ball-tracking reference."""
    return packaged("ale", "breakout")
