"""Action names for Gymnasium environments that do not name their Discrete actions."""

from __future__ import annotations

import re
from typing import Any

from playproof.errors import TargetError

__all__ = ["action_names"]

# Keyed by the unwrapped environment class name; the order is the action index.
KNOWN_ACTIONS: dict[str, tuple[str, ...]] = {
    "CartPoleEnv": ("left", "right"),
    "MountainCarEnv": ("left", "coast", "right"),
    "AcrobotEnv": ("minus", "zero", "plus"),
    "FrozenLakeEnv": ("left", "down", "right", "up"),
    "CliffWalkingEnv": ("up", "right", "down", "left"),
    "TaxiEnv": ("south", "north", "east", "west", "pickup", "dropoff"),
    "BlackjackEnv": ("stick", "hit"),
    "LunarLander": ("idle", "left_engine", "main_engine", "right_engine"),
}
_WORD = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def _from_env(unwrapped: Any) -> tuple[str, ...] | None:
    meanings = getattr(unwrapped, "get_action_meanings", None)
    if callable(meanings):
        names = tuple(re.sub(r"[^a-z0-9_]", "_", str(m).lower()) for m in meanings())
        return names
    return KNOWN_ACTIONS.get(type(unwrapped).__name__)


def action_names(unwrapped: Any, count: int, given: tuple[str, ...] | None) -> tuple[str, ...]:
    """The vocabulary words of a Discrete(count) environment, in action order."""
    names = given if given is not None else _from_env(unwrapped)
    if names is None:
        names = tuple(f"action{i}" for i in range(count))
    if len(names) != count:
        raise TargetError(f"{count} actions but {len(names)} action names: {list(names)}")
    if len(set(names)) != count:
        raise TargetError(f"action names repeat: {list(names)}")
    bad = [name for name in names if name == "noop" or not _WORD.match(name)]
    if bad:
        raise TargetError(f"unusable action names {bad} (lower-case words, never 'noop')")
    return names
