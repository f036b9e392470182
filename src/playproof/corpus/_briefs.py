"""What a task's instructions say about the machine its corpus runs on.

A corpus names one platform in its manifest (``platform``). The instructions a
task folder gets open with that platform's name, the machine a candidate must
emulate and the requests it answers on it, so an agent working a CHIP-8 task
is never told to build a Game Boy and the other way round. ``PROTOCOL.md``
(copied beside the instructions) stays the full specification.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from playproof.corpus._manifest import Platform, load_manifest
from playproof.corpus._shipped import shipped_paths
from playproof.errors import FormatError

__all__ = [
    "PLATFORM_BRIEFS",
    "SHIPPED_PLATFORMS",
    "PlatformBrief",
    "platform_brief",
    "task_platform",
]


@dataclass(frozen=True)
class PlatformBrief:
    """One platform as a task's instructions present it."""

    name: str
    """The machine's usual name, e.g. ``CHIP-8``."""
    heading: str
    """The instructions' first line (a Markdown heading)."""
    machine: str
    """What the candidate emulates, and the requests it answers, in a few lines."""


PLATFORM_BRIEFS: Mapping[Platform, PlatformBrief] = {
    "dmg": PlatformBrief(
        name="Game Boy",
        heading="# Build a Game Boy (DMG) emulator",
        machine=(
            "The corpus runs on platform `dmg`: the original Game Boy (DMG). Each case\n"
            "sends `LOAD` with a cartridge image and then asks for what its tests read:\n"
            "`FRAMES`/`CYCLES`/`RUNBP` to run the machine, `SERIAL` (bytes written to\n"
            "the link port), `REGS`, `MEM`, `SCREEN` (the 160x144 LCD, one shade 0..3\n"
            "per pixel) and `PRESS`/`RELEASE` for the joypad (`a b start select up down\n"
            "left right`). No `PLATFORM` request is ever sent."
        ),
    ),
    "chip8": PlatformBrief(
        name="CHIP-8",
        heading="# Build a CHIP-8 interpreter",
        machine=(
            "The corpus runs on platform `chip8`: the COSMAC VIP's CHIP-8. Every case\n"
            "starts with `PLATFORM chip8 <ipf>` (instructions per 1/60 s frame), then\n"
            "`LOAD` with a program placed at 0x200, `POKE` for the case's setup bytes,\n"
            "`FRAMES` to run, `PRESS`/`RELEASE` for the 16-key hexadecimal keypad\n"
            "(`0`..`f`) and `SCREEN`: the 64x32 display, one byte per pixel (1 lit,\n"
            "0 dark). `REGS` and `MEM` read V0-VF, I, PC, the timers and memory."
        ),
    ),
}
"""Every platform a manifest may name, as the instructions describe it."""


def platform_brief(platform: Platform) -> str:
    """The opening of a task's ``INSTRUCTIONS.md`` for a corpus on ``platform``."""
    brief = PLATFORM_BRIEFS[platform]
    return (
        f"{brief.heading}\n\n{brief.machine}\nPROTOCOL.md beside this file is the full "
        f"specification; its {brief.name} section and the framing rules are what\n"
        "your program must follow.\n\n"
    )


SHIPPED_PLATFORMS: Mapping[str, Platform] = {
    "blargg": "dmg",
    "chip8": "chip8",
    "dmg-acid2": "dmg",
    "mooneye": "dmg",
}
"""The platform each shipped corpus's manifest names (a test keeps the two in step).

Known without reading the manifest, so a task can be created from a package
installed without its corpus data.
"""


def task_platform(folder: Path, corpus: str, manifest: str | None) -> Platform:
    """The platform of a task's corpus: its own manifest's (task-relative) or the shipped one's."""
    if not manifest:
        shipped_paths(corpus)  # refuses a name that is not a shipped corpus
        return SHIPPED_PLATFORMS[corpus]
    path = folder / manifest
    if not path.is_file():
        raise FormatError(
            f"the task's manifest {path} does not exist; put it there before creating the task"
        )
    return load_manifest(path).platform
