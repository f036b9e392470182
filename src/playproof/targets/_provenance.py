"""What defines a target's game besides its options: library versions and ROM digests.

A run record carries these as provenance so that a run can be reproduced, and
a verifier compares its own with the recorder's when replay diverges. Versions
come from installed package metadata (never an import of the library); ROM
digests from bounded reads of the ROM files the adapters load.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import warnings
from functools import cache
from importlib import metadata
from pathlib import Path

from playproof._bounded import read_bounded
from playproof.errors import TargetError
from playproof.targets._registry import Target

__all__ = ["MAX_PROVENANCE_ROM_BYTES", "target_libraries", "target_roms"]

MAX_PROVENANCE_ROM_BYTES = 16 << 20
"""The largest ROM file hashed for provenance (cartridge ROMs are far smaller)."""

# The distributions that define a game of each adapter family (install extra).
_LIBRARIES: dict[str | None, tuple[str, ...]] = {
    "ale": ("ale-py", "numpy"),
    "gym": ("gymnasium", "numpy"),
    "retro": ("stable-retro", "gymnasium", "numpy"),
    "pyboy": ("pyboy", "numpy"),
    None: (),
}
_IMAGES = ("pillow",)
"""Encodes the screen images a target with ``image_scale`` shows."""


@cache
def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def target_libraries(target: Target) -> dict[str, str]:
    """The installed version of every library that defines ``target``'s game."""
    names = list(_LIBRARIES.get(target.spec.extra, ()))
    if target.spec.options.get("image_scale"):
        names += _IMAGES
    found = {name: _version(name) for name in names}
    return {name: version for name, version in sorted(found.items()) if version is not None}


@cache
def _file_digest(path: Path, size: int, mtime_ns: int) -> str:
    # Keyed by size and mtime as well as the path: a replaced file is hashed again.
    del size, mtime_ns
    return hashlib.sha256(
        read_bounded(path, MAX_PROVENANCE_ROM_BYTES, "ROM", TargetError)
    ).hexdigest()


def _digest(path: Path) -> str:
    try:
        stat = path.stat()
    except OSError as exc:
        raise TargetError(f"cannot read ROM {path}: {exc.strerror}") from exc
    return _file_digest(path, stat.st_size, stat.st_mtime_ns)


def _rom_path(target: Target) -> tuple[str, Path] | None:
    """The ROM a target's game loads, by name, or None for games without one."""
    options, extra = target.spec.options, target.spec.extra
    if extra == "pyboy":
        if options.get("rom_path"):
            path = Path(str(options["rom_path"]))
            return path.name, path
        from playproof.adapters.pyboy._roms import BUNDLED  # local: an optional adapter

        bundled = BUNDLED.get(str(options.get("rom")))
        return (bundled.name, bundled) if bundled is not None else None
    if extra == "ale" and options.get("rom"):
        from ale_py import roms  # local: an optional library

        rom = str(options["rom"])
        if rom not in roms.get_all_rom_ids():
            return None
        # get_rom_path may print or warn; neither belongs in a command's output.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = roms.get_rom_path(rom)
        return (rom, Path(found)) if found is not None else None
    if extra == "retro":
        from stable_retro import data  # local: an optional library

        game = str(options.get("game", "Airstriker-Genesis-v0"))
        try:
            return game, Path(data.get_romfile_path(game))
        except FileNotFoundError:
            return None
    return None


def target_roms(target: Target) -> dict[str, str] | None:
    """ROM name -> SHA-256 of the ROM ``target``'s game loads; None when it loads none.

    A library that is missing or cannot locate the ROM yields None: opening the
    game reports that problem properly.
    """
    try:
        found = _rom_path(target)
    except (ImportError, OSError, TargetError, ValueError):
        return None
    if found is None:
        return None
    name, path = found
    try:
        return {name: _digest(path)}
    except TargetError:
        return None
