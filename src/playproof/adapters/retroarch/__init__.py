"""The RetroArch adapter: any libretro core, driven as a black box over UDP commands."""

from __future__ import annotations

from typing import Any

from playproof.adapters.options import validate_options
from playproof.adapters.retroarch._game import ADAPTER_VERSION, VOCABULARY, RetroArchGame
from playproof.adapters.retroarch._options import Channel, RetroArchOptions

__all__ = [
    "ADAPTER_VERSION",
    "VOCABULARY",
    "Channel",
    "RetroArchGame",
    "RetroArchOptions",
    "make_game",
]


def make_game(**options: Any) -> RetroArchGame:
    """Build a RetroArch session from JSON options (worker factory ``...retroarch:make_game``)."""
    parsed = validate_options(RetroArchOptions, options, "RetroArch")
    return RetroArchGame(parsed)
