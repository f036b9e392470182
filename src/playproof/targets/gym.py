"""Entry points for the packaged Gymnasium targets (install ``playproof[gym]``)."""

from __future__ import annotations

from playproof.targets._registry import Target
from playproof.targets.packaged import packaged

__all__ = ["cartpole", "frozenlake"]


def cartpole() -> Target:
    """``gym/cartpole``: CartPole-v1, a ladder of steps balanced."""
    return packaged("gym", "cartpole")


def frozenlake() -> Target:
    """``gym/frozenlake``: FrozenLake-v1, 4x4, not slippery."""
    return packaged("gym", "frozenlake")
