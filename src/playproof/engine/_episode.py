"""One episode: play a game with a driver under declared limits.

Before each decision the loop checks, in order: game over (when armed), the
turn limit, the budget. A decision whose cost overshoots the budget is applied
and recorded at full cost, then the run stops. Costs are what the driver
measured (``None`` = unmeasured; refused under a budget); latency is the wall
time around the driver call. A driver error, an empty or oversized input, or
a negative or non-finite cost ends the run with a typed error and no record.
The loop itself lives in :mod:`playproof.engine._loop` (campaigns share it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from playproof.core.agent import Driver
from playproof.core.contract import Contract
from playproof.core.game import Game
from playproof.core.record import RunRecord
from playproof.engine._loop import (
    DEFAULT_HISTORY,
    DEFAULT_MAX_TURNS,
    DecisionLoop,
    EpisodeConfig,
    TurnReport,
    check_mode,
)

__all__ = [
    "DEFAULT_HISTORY",
    "DEFAULT_MAX_TURNS",
    "EpisodeConfig",
    "TurnReport",
    "check_mode",
    "play",
]


async def close_driver(driver: Driver) -> None:
    """Let a driver release what it holds (``aclose()``), when it has anything to release."""
    aclose = getattr(driver, "aclose", None)
    if callable(aclose):
        await aclose()


async def play(
    game: Game,
    contract: Contract,
    driver: Driver,
    config: EpisodeConfig,
    *,
    cancel: asyncio.Event | None = None,
    on_turn: Callable[[TurnReport], None] | None = None,
) -> RunRecord:
    """Play one episode of ``game`` with ``driver`` and return its (unsigned) record."""
    loop = DecisionLoop(game, contract, driver, config)
    try:
        loop.start()
        stop = await loop.run(guidance=config.guidance, cancel=cancel, on_turn=on_turn)
    finally:
        await close_driver(driver)
    return loop.record(stop)
