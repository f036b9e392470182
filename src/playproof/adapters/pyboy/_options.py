"""Options of the PyBoy adapter: which ROM, how inputs map to frames, what is evidence.

Options are JSON (they travel to worker children and into ``target.json``) and
enter the build digest, except ``rom_path`` (the ROM's SHA-256 stands for it
so the digest does not depend on where a machine keeps its files).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "HRAM",
    "MAX_BOOT_FRAMES",
    "MAX_CHANNELS",
    "MAX_FRAMES_PER_INPUT",
    "MAX_IMAGE_SCALE",
    "WRAM",
    "Channel",
    "PyBoyOptions",
]

MAX_CHANNELS = 32
"""Named memory channels one game may declare."""
MAX_FRAMES_PER_INPUT = 600
MAX_BOOT_FRAMES = 36_000
"""Frames the adapter runs at most before the power-on snapshot (10 minutes of game time)."""
MAX_IMAGE_SCALE = 8
"""160x144 times 8 is 1280x1152, inside the 2048-pixel observation bound."""
WRAM = range(0xC000, 0xE000)
HRAM = range(0xFF80, 0xFFFF)

ChannelName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")]


class Channel(BaseModel):
    """One named memory variable: an unsigned little-endian integer of 1 or 2 bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    address: int
    size: Literal[1, 2] = 1

    @model_validator(mode="after")
    def _in_ram(self) -> Channel:
        last = self.address + self.size - 1
        if not any(self.address in area and last in area for area in (WRAM, HRAM)):
            raise ValueError(
                f"channel address {self.address:#06x} (size {self.size}) is outside "
                "WRAM 0xC000-0xDFFF and HRAM 0xFF80-0xFFFE"
            )
        return self


class PyBoyOptions(BaseModel):
    """Everything that defines a PyBoy game session (see docs/adapters-pyboy.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    game_id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")] = "pyboy"
    rom: Literal["pp-collect"] | None = None
    """A ROM shipped with playproof."""
    rom_path: str | None = None
    """A ROM file on this machine (its SHA-256, not its path, enters the build digest)."""
    rom_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    """When set, the ROM bytes must have this SHA-256."""
    frames_per_input: Annotated[int, Field(ge=2, le=MAX_FRAMES_PER_INPUT)] = 8
    press_frames: Annotated[int, Field(ge=1, le=MAX_FRAMES_PER_INPUT - 1)] = 4
    """Frames a button is held; it is released for the rest of the input's frames."""
    channels: dict[ChannelName, Channel] = Field(default_factory=dict)
    public: tuple[ChannelName, ...] = ()
    """Channels the player sees on screen (score, lives): the only numbers in the text."""
    over_channel: ChannelName | None = None
    """Game over while this channel is non-zero; without one, ``over()`` is None."""
    seed_channel: ChannelName | None = None
    """A 2-byte channel the seed is written to after reset; without one the seed is unused."""
    ready_channel: ChannelName | None = None
    """Boot until this channel is non-zero (within ``boot_frames``), then snapshot power-on."""
    boot_frames: Annotated[int, Field(ge=0, le=MAX_BOOT_FRAMES)] = 0
    text: Literal["shade", "tiles"] = "shade"
    """Text grid from screen shades (any ROM) or from background tile ids through ``charset``."""
    charset: Annotated[str, Field(max_length=256, pattern=r"^[\x20-\x7e]*$")] = ""
    image_scale: Annotated[int, Field(ge=0, le=MAX_IMAGE_SCALE)] = 0
    """0: text only; n: also a PNG of the screen scaled n times."""
    save_hash: bool = False
    """Publish the SHA-256 of the emulator save state (costs a full state save per input)."""

    @model_validator(mode="after")
    def _consistent(self) -> PyBoyOptions:
        problems: list[str] = []
        if (self.rom is None) == (self.rom_path is None):
            problems.append("give exactly one of rom (a bundled ROM) and rom_path")
        if len(self.channels) > MAX_CHANNELS:
            problems.append(f"{len(self.channels)} channels, over {MAX_CHANNELS}")
        if self.press_frames >= self.frames_per_input:
            problems.append("press_frames must be below frames_per_input so the button is released")
        named = [*self.public, self.over_channel, self.seed_channel, self.ready_channel]
        problems += [
            f"unknown channel {name!r}" for name in named if name and name not in self.channels
        ]
        if len(set(self.public)) != len(self.public):
            problems.append("public lists a channel twice")
        seed = self.channels.get(self.seed_channel or "")
        if seed is not None and seed.size != 2:
            problems.append("seed_channel must be a 2-byte channel")
        if self.text == "tiles" and not self.charset:
            problems.append('text "tiles" needs a charset (one character per tile id)')
        if problems:
            raise ValueError("; ".join(problems))
        return self
