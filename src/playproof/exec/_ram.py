"""Read-only memory access to emulator sessions, for blind channel discovery.

Sessions that expose their memory (:class:`~playproof.core.game.MemoryExposing`:
the ALE and PyBoy adapters) give a discovery every readable area and the ROM's
SHA-256; anything else is refused with a clear error. Discovery reads memory
in-process: a worker does not forward it.
"""

from __future__ import annotations

from playproof.core.game import Game, MemoryExposing
from playproof.errors import NotSupportedError
from playproof.verify import MemoryReader

__all__ = ["memory_access"]


def memory_access(game: Game) -> tuple[MemoryReader, str, str]:
    """A memory reader, the ROM's SHA-256 and the platform family for an emulator session."""
    family = game.descriptor.platform.family
    if isinstance(game, MemoryExposing):
        return game.memory, game.rom_sha256, family
    raise NotSupportedError(
        f"no memory access for {family!r} sessions; discovery reads the RAM of emulator "
        "sessions that expose it (ALE, PyBoy), in-process"
    )
