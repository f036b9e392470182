"""Entry points for the targets playproof ships (data folders under ``targets/data``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from playproof.targets._registry import Target, load_target_dir

__all__ = ["DATA", "packaged"]

DATA = Path(__file__).parent / "data"


@cache
def packaged(family: str, name: str) -> Target:
    """Load the packaged target folder ``data/<family>/<name>``."""
    return load_target_dir(DATA / family / name)


def game_2048() -> Target:
    """``native/2048``: seeded 2048 written for playproof."""
    return packaged("native", "2048")
