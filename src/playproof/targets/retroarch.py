"""Packaged RetroArch targets (need Debian's ``retroarch`` and the core to open)."""

from __future__ import annotations

from playproof.targets._registry import Target
from playproof.targets.packaged import packaged

__all__ = ["pp_collect"]


def pp_collect() -> Target:
    """``retroarch/pp-collect``: pp-collect on the gambatte core, from a pinned boot state."""
    return packaged("retroarch", "pp-collect")
