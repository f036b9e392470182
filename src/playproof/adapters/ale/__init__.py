"""Atari 2600 games through ``ale_py.ALEInterface`` (install ``playproof[ale]``).

>>> game = make_game(rom="breakout", ram={"paddle_x": 72})
>>> game.descriptor.vocabulary
('noop', 'fire', 'right', 'left')
>>> game.reset(0); game.step("fire"); sorted(game.evidence().engine)
['frame', 'lives', 'paddle_x', 'score']
"""

from __future__ import annotations

from typing import Any

from playproof.adapters.ale._game import ADAPTER_VERSION, AleGame
from playproof.adapters.ale._options import MAX_RAM_CHANNELS, AleOptions

__all__ = ["ADAPTER_VERSION", "MAX_RAM_CHANNELS", "AleGame", "AleOptions", "make_game"]


def make_game(**options: Any) -> AleGame:
    """Build an ALE session from JSON options (see :class:`AleOptions`)."""
    return AleGame(AleOptions.parse(options))
