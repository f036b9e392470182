"""The PyBoy (Game Boy) adapter: any ROM by path or the bundled pp-collect game.

>>> game = make_game(rom="pp-collect")
>>> game.descriptor.vocabulary[:3]
('noop', 'a', 'b')
>>> game.close()
"""

from __future__ import annotations

from typing import Any

from playproof.adapters.options import validate_options
from playproof.adapters.pyboy._game import ADAPTER_VERSION, VOCABULARY, PyBoyGame
from playproof.adapters.pyboy._options import Channel, PyBoyOptions
from playproof.adapters.pyboy._roms import checked_rom, corpus_rom

__all__ = [
    "ADAPTER_VERSION",
    "VOCABULARY",
    "Channel",
    "PyBoyGame",
    "PyBoyOptions",
    "checked_rom",
    "corpus_rom",
    "make_game",
]


def make_game(**options: Any) -> PyBoyGame:
    """Build a PyBoy session from JSON options (the worker factory ``...pyboy:make_game``)."""
    parsed = validate_options(PyBoyOptions, options, "PyBoy")
    return PyBoyGame(parsed)
