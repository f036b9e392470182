"""Entry points for the packaged stable-retro targets (install ``playproof[retro]``)."""

from __future__ import annotations

from playproof.targets._registry import Target
from playproof.targets.packaged import packaged

__all__ = ["airstriker"]


def airstriker() -> Target:
    """``retro/airstriker``: Airstriker (Genesis, bundled with stable-retro), a score ladder."""
    return packaged("retro", "airstriker")
