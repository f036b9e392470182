"""Agents for the matrix tests: a slow one (so a run can be killed between cells)."""

import time
from typing import Any

SLOW_DECISION_S = 0.15
"""How long the slow agent thinks before each input."""


def slow_up(observation: Any, history: Any, context: Any) -> str:
    """Think for SLOW_DECISION_S, then press up."""
    time.sleep(SLOW_DECISION_S)
    return "up"


def fails_on_seed_one(observation: Any, history: Any, context: Any) -> str:
    """Press left, except on seed 1, where it raises (a cell that fails)."""
    if context.seed == 1:
        raise RuntimeError("this agent cannot play seed 1")
    return "left"
