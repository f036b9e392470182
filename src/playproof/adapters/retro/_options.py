"""Options of the stable-retro adapter (JSON, validated at the boundary)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from playproof.adapters.options import AdapterOptions
from playproof.adapters.screen import MAX_IMAGE_SCALE

__all__ = ["MAX_FRAME_SKIP", "RetroOptions"]

MAX_FRAME_SKIP = 64

ButtonName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,15}$")]


class RetroOptions(AdapterOptions):
    """How to build a stable-retro session: game, save state, frame skip, pad buttons, images."""

    LABEL = "stable-retro"

    game: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")] = "Airstriker-Genesis-v0"
    """A stable-retro game id whose ROM is installed (Airstriker ships with the library)."""
    state: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,128}$")] | None = None
    """The integration's save state to start from (None = the game's default state)."""
    frame_skip: Annotated[int, Field(ge=1, le=MAX_FRAME_SKIP)] = 4
    buttons: Annotated[tuple[ButtonName, ...], Field(min_length=1, max_length=16)] | None = None
    """Pad buttons the vocabulary uses (lower-case; None = every button of the console)."""
    image_scale: Annotated[int, Field(ge=0, le=MAX_IMAGE_SCALE)] = 0
    """0 = text only; n > 0 adds the real screen as a PNG upscaled n times."""
