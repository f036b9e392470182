"""The decision loop: episodes under declared budgets and turn limits."""

from playproof.engine._episode import (
    DEFAULT_HISTORY,
    DEFAULT_MAX_TURNS,
    EpisodeConfig,
    TurnReport,
    check_mode,
    play,
)

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_MAX_TURNS",
    "EpisodeConfig",
    "TurnReport",
    "check_mode",
    "play",
]
