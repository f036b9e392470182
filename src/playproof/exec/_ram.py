"""Read-only memory access to emulator sessions, for blind channel discovery.

The ALE and PyBoy adapters publish only the RAM channels a target names; a
discovery needs all of it. This module reads it without changing the
adapters: it reaches into the session's emulator handle read-only (ALE's
``getRAM``, PyBoy's ``memory`` slices). It is the one place that does so.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from playproof.core.game import Game
from playproof.errors import NotSupportedError
from playproof.verify import MemoryReader

__all__ = ["ALE_RAM_BASE", "MAX_ROM_BYTES", "PYBOY_AREAS", "memory_access"]

ALE_RAM_BASE = 0x80
"""The Atari 2600 maps its 128 bytes of RAM at 0x80-0xFF."""
PYBOY_AREAS = (("wram", 0xC000, 0xE000), ("hram", 0xFF80, 0xFFFF))
"""Game Boy work RAM and high RAM (the interrupt-enable register at 0xFFFF is left out)."""
MAX_ROM_BYTES = 8 << 20
"""Game Boy ROMs are at most 8 MiB; Atari ROMs far less."""


def _rom_digest(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(MAX_ROM_BYTES + 1)
    if len(data) > MAX_ROM_BYTES:
        raise NotSupportedError(f"{path.name} is over the {MAX_ROM_BYTES}-byte ROM limit")
    return hashlib.sha256(data).hexdigest()


def memory_access(game: Game) -> tuple[MemoryReader, str, str]:
    """A memory reader, the ROM's SHA-256 and the platform family for an emulator session."""
    family = game.descriptor.platform.family
    raw: Any = game
    if family == "ale" and hasattr(raw, "_ale"):
        ale = raw._ale

        def read_ale() -> dict[str, tuple[int, bytes]]:
            return {"ram": (ALE_RAM_BASE, bytes(ale.getRAM()))}

        return read_ale, _rom_digest(Path(raw._rom_path)), family
    if family == "pyboy" and hasattr(raw, "_pyboy"):
        memory = raw._pyboy.memory

        def read_pyboy() -> dict[str, tuple[int, bytes]]:
            return {name: (low, bytes(memory[low:high])) for name, low, high in PYBOY_AREAS}

        return read_pyboy, str(raw.rom_sha256), family
    raise NotSupportedError(
        f"no memory access for {family!r} sessions; discovery reads ALE and PyBoy RAM in-process"
    )
