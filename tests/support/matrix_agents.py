"""Agents and pool tasks for the matrix tests: a slow agent, a failing one, tasks that hang."""

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


def hang_on_seed_one(build: Any, job: Any) -> Any:
    """Stands in for the runner's ``play_cell``: the cell of seed 1 never finishes."""
    from playproof.matrix import _runner

    while job.cell.seed == 1:
        time.sleep(1)
    return _runner.play_cell(build, job)


def hang_replay(record: Any, worker: Any) -> Any:
    """Stands in for the report's ``_replay``: a replay that never finishes."""
    while True:
        time.sleep(1)
