"""Options of the ALE adapter (JSON, validated at the boundary)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from playproof.adapters.options import AdapterOptions
from playproof.adapters.screen import MAX_IMAGE_SCALE

__all__ = ["MAX_FRAME_SKIP", "MAX_RAM_CHANNELS", "RAM_SIZE", "RESERVED_KEYS", "AleOptions"]

MAX_RAM_CHANNELS = 32
"""At most this many named RAM bytes are published as evidence (never the whole RAM)."""
RAM_SIZE = 128
MAX_FRAME_SKIP = 64
RESERVED_KEYS = frozenset({"score", "lives", "frame"})
"""Engine evidence keys the adapter always writes; RAM channels may not reuse them."""

ChannelName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
RamIndex = Annotated[int, Field(ge=0, lt=RAM_SIZE)]


class AleOptions(AdapterOptions):
    """How to build an ALE session: ROM name, frame skip, named RAM channels, images."""

    LABEL = "ALE"

    rom: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")]
    """A ROM bundled with ale-py, by its snake_case id (``breakout``)."""
    frame_skip: Annotated[int, Field(ge=1, le=MAX_FRAME_SKIP)] = 4
    """Emulator frames per input; the harness repeats the action, sticky actions are off."""
    ram: Annotated[dict[ChannelName, RamIndex], Field(max_length=MAX_RAM_CHANNELS)] = Field(
        default_factory=dict
    )
    """Named RAM bytes published as engine evidence (name -> index 0..127)."""
    mode: int | None = None
    difficulty: int | None = None
    image_scale: Annotated[int, Field(ge=0, le=MAX_IMAGE_SCALE)] = 0
    """0 = text only; n > 0 adds the real screen as a PNG upscaled n times."""

    @field_validator("ram")
    @classmethod
    def _not_reserved(cls, value: dict[str, int]) -> dict[str, int]:
        clash = sorted(RESERVED_KEYS & value.keys())
        if clash:
            raise ValueError(f"RAM channel names {clash} are reserved for built-in evidence")
        return value
