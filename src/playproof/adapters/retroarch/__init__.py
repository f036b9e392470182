"""The RetroArch adapter: any libretro core, driven as a black box over UDP commands."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from playproof.adapters.retroarch._game import ADAPTER_VERSION, VOCABULARY, RetroArchGame
from playproof.adapters.retroarch._options import Channel, RetroArchOptions
from playproof.errors import TargetError

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
    try:
        parsed = RetroArchOptions.model_validate(options)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'options'}: {err['msg']}"
            for err in exc.errors()
        )
        raise TargetError(f"invalid RetroArch options: {problems}") from None
    return RetroArchGame(parsed)
