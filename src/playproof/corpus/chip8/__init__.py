"""CHIP-8: a from-scratch interpreter with COSMAC VIP behaviour and its protocol candidate.

``machine`` is the interpreter; ``candidate`` serves the corpus line protocol
on top of it and is the reference candidate of the ``chip8`` corpus. Both use
the standard library only, so the candidate starts without importing playproof.
"""

from __future__ import annotations

from playproof.corpus.chip8.machine import Chip8, Chip8Fault

__all__ = ["Chip8", "Chip8Fault"]
