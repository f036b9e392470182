"""Packaged Game Boy targets (need ``pip install playproof[pyboy]`` to open)."""

from __future__ import annotations

from playproof.targets._registry import Target
from playproof.targets.packaged import packaged

__all__ = ["pp_collect"]


def pp_collect() -> Target:
    """``pyboy/pp-collect``: the Game Boy game assembled in-repo, with a score-ladder contract."""
    return packaged("pyboy", "pp-collect")
