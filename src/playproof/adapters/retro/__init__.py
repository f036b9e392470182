"""Genesis (and other stable-retro) games, one emulator per process (install ``playproof[retro]``).

stable-retro allows one emulator per process, so run sessions in a worker
(``WorkerGame("playproof.adapters.retro:make_game", {...})``). Vocabulary:
``noop``, single buttons, diagonals and direction+button combinations joined
with ``+`` (``up+left+b``); unknown words hold no buttons (time passes).
Evidence ``engine``: the integration variables from the game's ``data.json``
(``score``, ``lives`` ...) and ``frame`` (emulator frames since reset,
evidence only); ``frame``: ``lit`` (non-black samples on an 8-pixel grid);
``frame_hash`` over the RGB screen. No save hash: the save state's bytes
differ between processes (they embed host addresses) although restoring it
works in any process.
"""

from __future__ import annotations

from typing import Any

from playproof.adapters.retro._game import ADAPTER_VERSION, RetroGame
from playproof.adapters.retro._options import RetroOptions

__all__ = ["ADAPTER_VERSION", "RetroGame", "RetroOptions", "make_game"]


def make_game(**options: Any) -> RetroGame:
    """Build a stable-retro session from JSON options (see :class:`RetroOptions`)."""
    return RetroGame(RetroOptions.parse(options))
