"""RetroArch targets: the packaged ones and ad-hoc ``retroarch:CORE:FILE`` specs.

Packaged targets need Debian's ``retroarch`` and the core to open. An ad-hoc
spec plays any ROM on any installed libretro core (see
``docs/adapters-retroarch.md``): its boot state is made by counting frames
from power-on, twice in two launches, and its milestones read only the memory
channels the contract names (``ram_c000`` is one byte at 0xC000, ``ram16_c010``
two little-endian bytes at 0xC010).

>>> channel_of("ram16_c010")
(49168, 2)
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from playproof._bounded import read_bounded
from playproof.core.contract import Contract, ValueCheck
from playproof.errors import TargetError
from playproof.targets._registry import Target
from playproof.targets.packaged import packaged

__all__ = [
    "ADHOC_BOOT_FRAMES",
    "BOOT_CACHE",
    "CORE_DIR",
    "adhoc_options",
    "channel_of",
    "pp_collect",
]

CORE_DIR = Path("/usr/lib/x86_64-linux-gnu/libretro")
"""Where Debian installs libretro cores (``<name>_libretro.so``)."""
ADHOC_BOOT_FRAMES = 120
"""Counted frames from power-on to an ad-hoc target's boot state (two seconds of game time)."""
BOOT_CACHE = Path(".playproof") / "retroarch-boot"
"""Counted boot states kept per core, ROM and frame count (relative to the working folder)."""
GAME_BOY_SUFFIXES = (".gb", ".gbc")
GAME_BOY_WORK_RAM = 0xC000
"""Game Boy work RAM: the block watched to confirm each frame advance."""

_CORE_NAME = re.compile(r"^[a-z0-9_]{1,64}$")
_CHANNEL_KEY = re.compile(r"^ram(16)?_([0-9a-f]{4,8})$")
_SCREEN = {"frame": "a number read from the screen", "frame-hash": "a hash of the screen"}


def pp_collect() -> Target:
    """``retroarch/pp-collect``: pp-collect on the gambatte core, from a pinned boot state."""
    return packaged("retroarch", "pp-collect")


def channel_of(key: str) -> tuple[int, int] | None:
    """(address, size) of a contract key naming memory (``ram_c000``, ``ram16_c010``), else None."""
    found = _CHANNEL_KEY.match(key)
    if found is None:
        return None
    return int(found.group(2), 16), 2 if found.group(1) else 1


def _channels(contract: Contract) -> dict[str, dict[str, int]]:
    """The memory channels a contract reads; TargetError for any check RetroArch cannot back."""
    channels: dict[str, dict[str, int]] = {}
    for milestone in contract.milestones:
        check = milestone.check
        where = f"milestone {milestone.id!r}"
        if check.kind in _SCREEN:
            raise TargetError(
                f"{where} pins the screen ({check.kind}: {_SCREEN[check.kind]}): RetroArch runs "
                "with null video and two launches are not shown to draw the same frame, so the "
                "screen is shown, never pinned; check a memory channel (ram_ADDR) instead"
            )
        if not isinstance(check, ValueCheck) or check.kind != "state":
            raise TargetError(
                f"{where} checks {check.kind}, which RetroArch targets do not record; "
                "milestones read memory channels: state checks on ram_ADDR or ram16_ADDR"
            )
        place = channel_of(check.key)
        if place is None:
            raise TargetError(
                f"{where} reads {check.key!r}; a retroarch: contract names memory as ram_ADDR "
                "(one byte) or ram16_ADDR (two bytes, little-endian), ADDR in hex (ram_c000)"
            )
        channels[check.key] = {"address": place[0], "size": place[1]}
    return channels


def adhoc_options(
    name: str, contract: Contract, *, rom_sha256: str | None = None
) -> dict[str, Any]:
    """Adapter options for the ad-hoc spec ``retroarch:NAME`` (NAME is ``CORE:FILE``).

    CORE is an installed core's name (``gambatte``) or a core library's path;
    FILE is the ROM. Every problem is a TargetError saying what to give instead.
    """
    from playproof.adapters.retroarch._game import (  # local: the adapter is only needed here
        MAX_ROM_BYTES,
        check_core,
    )

    core, sep, rom = name.partition(":")
    if not sep or not core or not rom:
        raise TargetError(
            f"retroarch:{name}: give retroarch:CORE:FILE, CORE a core name (gambatte, mgba) "
            "or a core library's path, FILE the ROM"
        )
    options: dict[str, Any] = {}
    if _CORE_NAME.match(core):
        path = CORE_DIR / f"{core}_libretro.so"
        if not path.is_file():
            installed = sorted(p.name.removesuffix("_libretro.so") for p in _installed_cores())
            raise TargetError(
                f"no libretro core named {core!r} is installed "
                f"(installed: {', '.join(installed) or 'none'}); "
                f"install it (Debian: libretro-{core}) or give a core library's path"
            )
        options["core"] = core
    else:
        path = Path(core)
        options["core_file"] = str(path.resolve())
    check_core(path)
    rom_path = Path(rom)
    digest = hashlib.sha256(read_bounded(rom_path, MAX_ROM_BYTES, "ROM", TargetError)).hexdigest()
    if rom_sha256 is not None and digest != rom_sha256:
        raise TargetError(
            f"ROM {rom} has SHA-256 {digest[:16]}..., the record pins {rom_sha256[:16]}...; "
            "pass the ROM the run used (--target retroarch:CORE:FILE)"
        )
    options.update(
        game_id=f"ra-{digest[:12]}",
        rom_path=str(rom_path.resolve()),
        rom_sha256=digest,
        channels=_channels(contract),
        boot_frames=ADHOC_BOOT_FRAMES,
        boot_cache=str(BOOT_CACHE.resolve()),
    )
    if rom_path.suffix.lower() in GAME_BOY_SUFFIXES:
        options["watch_address"] = GAME_BOY_WORK_RAM
    return options


def _installed_cores() -> list[Path]:
    try:
        return sorted(CORE_DIR.glob("*_libretro.so"))[:64]
    except OSError:
        return []
