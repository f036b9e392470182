"""Options of the RetroArch adapter: which core and content, how inputs map to frames.

Options are JSON (they travel to worker children and into ``target.json``).
Paths never enter the build digest: the SHA-256 of the core library, the
content and the boot state stand for them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "MAX_BOOT_FRAMES",
    "MAX_CHANNELS",
    "MAX_FRAMES_PER_INPUT",
    "WATCH_BYTES",
    "Channel",
    "RetroArchOptions",
]

MAX_CHANNELS = 32
MAX_FRAMES_PER_INPUT = 120
"""Each frame is one confirmed advance over UDP (about 20 ms): keep inputs short."""
MAX_BOOT_SECONDS = 60.0
MAX_BOOT_FRAMES = 1200
"""Counted frames from power-on to a boot state (20 s of game time; each is one advance)."""
WATCH_BYTES = 1024
"""Bytes of ``watch_address`` read after each advance when there is no ``frame_channel``."""


def _file_path(text: str) -> str:
    if "\0" in text:
        raise ValueError("a path cannot hold a NUL character")
    return text


def _config_path(text: str) -> str:
    """A path written into RetroArch's config as ``key = "value"`` on one line."""
    if any(char in text for char in '\0\r\n"'):
        raise ValueError(
            "a path written into RetroArch's config cannot hold NUL, '\"' or a line break"
        )
    return text


FilePath = Annotated[str, AfterValidator(_file_path)]
ConfigPath = Annotated[str, AfterValidator(_config_path)]
ChannelName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Channel(BaseModel):
    """One named memory variable: an unsigned little-endian integer of 1 or 2 bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    address: Annotated[int, Field(ge=0, le=0xFFFF_FFFF)]
    size: Annotated[int, Field(ge=1, le=2)] = 1


class RetroArchOptions(BaseModel):
    """Everything that defines a RetroArch game session (see docs/adapters-retroarch.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    game_id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")] = "retroarch"
    core: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,64}$")] = "gambatte"
    """The libretro core, by name: ``<core>_libretro.so`` in ``core_dir``."""
    core_file: FilePath | None = None
    """A libretro core library by path (its SHA-256 enters the build digest, not the path)."""
    core_dir: ConfigPath = "/usr/lib/x86_64-linux-gnu/libretro"
    info_dir: ConfigPath = "/usr/share/libretro/info"
    """Core info files: without them RetroArch believes no core can save states."""
    retroarch: FilePath = "retroarch"
    """The RetroArch program (a name on the PATH or a path)."""
    rom: Annotated[str, Field(pattern=r"^[a-z0-9-]{1,32}$")] | None = None
    """A ROM shipped with playproof (``pp-collect``)."""
    rom_path: FilePath | None = None
    rom_sha256: Sha256 | None = None
    boot_state: FilePath | None = None
    """A state file of this core to start every episode from; without it one is made at launch."""
    boot_state_sha256: Sha256 | None = None
    frame_channel: ChannelName | None = None
    """A channel that changes on every frame: it confirms each frame advance."""
    watch_address: Annotated[int, Field(ge=0, le=0xFFFF_FFFF)] | None = None
    """Without ``frame_channel``: a memory block (``WATCH_BYTES``) whose change confirms
    an advance. Without either, every advance waits the stall time."""
    channels: dict[ChannelName, Channel] = Field(default_factory=dict)
    public: tuple[ChannelName, ...] = ()
    over_channel: ChannelName | None = None
    seed_channel: ChannelName | None = None
    """A 2-byte channel the seed is written to after reset (``seed mod 65535 + 1``)."""
    ready_channel: ChannelName | None = None
    """When making a boot state: run until this channel is non-zero, then save."""
    boot_press: Literal["a", "b", "start", "select", "up", "down", "left", "right"] | None = None
    """When making a boot state: a button held while running until ``ready_channel`` is set."""
    boot_write: dict[ChannelName, Annotated[int, Field(ge=0, le=0xFFFF)]] = Field(
        default_factory=dict
    )
    """When making a boot state: channel values written before ``boot_press`` (a game's seed)."""
    boot_seconds: Annotated[float, Field(gt=0, le=MAX_BOOT_SECONDS)] = 10.0
    boot_frames: Annotated[int, Field(ge=1, le=MAX_BOOT_FRAMES)] | None = None
    """Make the boot state by counted frames: reset the core, advance this many frames
    with no input, save. Deterministic for a deterministic core (see ``boot_check``)."""
    boot_check: bool = True
    """With ``boot_frames``: make the boot state in two launches and refuse when they differ."""
    boot_cache: FilePath | None = None
    """With ``boot_frames``: a folder keeping counted boot states per core, ROM and frames."""
    frames_per_input: Annotated[int, Field(ge=2, le=MAX_FRAMES_PER_INPUT)] = 8
    press_frames: Annotated[int, Field(ge=1, le=MAX_FRAMES_PER_INPUT - 1)] = 4

    @model_validator(mode="after")
    def _consistent(self) -> RetroArchOptions:
        problems: list[str] = []
        if (self.rom is None) == (self.rom_path is None):
            problems.append("give exactly one of rom (a bundled ROM) and rom_path")
        if len(self.channels) > MAX_CHANNELS:
            problems.append(f"{len(self.channels)} channels, over {MAX_CHANNELS}")
        if self.press_frames >= self.frames_per_input:
            problems.append("press_frames must be below frames_per_input so the button is released")
        named = [
            self.frame_channel,
            *self.public,
            self.over_channel,
            self.seed_channel,
            self.ready_channel,
            *self.boot_write,
        ]
        problems += [
            f"unknown channel {name!r}" for name in named if name and name not in self.channels
        ]
        seed = self.channels.get(self.seed_channel or "")
        if seed is not None and seed.size != 2:
            problems.append("seed_channel must be a 2-byte channel")
        if self.boot_state_sha256 and not self.boot_state:
            problems.append("boot_state_sha256 needs boot_state")
        if self.boot_state is None and (self.ready_channel is None) == (self.boot_frames is None):
            problems.append(
                "without boot_state, give one of ready_channel (run until it is set) "
                "and boot_frames (count frames from power-on)"
            )
        if self.boot_frames is not None and (self.boot_press or self.boot_write):
            problems.append(
                "boot_frames boots with no input: boot_press and boot_write need ready_channel"
            )
        if self.boot_state is not None and (self.boot_frames is not None or self.boot_cache):
            problems.append("boot_frames and boot_cache make a boot state: not with boot_state")
        if problems:
            raise ValueError("; ".join(problems))
        return self
