"""One episode: play a game with a driver under declared limits.

Before each decision the loop checks, in order: game over (when armed), the
turn limit, the budget. A decision whose cost overshoots the budget is applied
and recorded at full cost, then the run stops. Costs are what the driver
measured (``None`` = unmeasured; refused under a budget); latency is the wall
time around the driver call. A driver error, an empty or oversized input, a
negative or non-finite cost, or a cost (or latency) that would take the run's
total past the largest finite number ends the run with a typed error and no
record (a campaign keeps the decisions taken before it in its ledger).
The driver is closed afterwards (``aclose()``, at most DRIVER_CLOSE_S); a close that
fails or hangs is logged and never costs the run its record or replaces its error.
The loop itself lives in :mod:`playproof.engine._loop` (campaigns share it).
"""

from __future__ import annotations

import asyncio
import logging
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
    "DRIVER_CLOSE_S",
    "DEFAULT_MAX_TURNS",
    "EpisodeConfig",
    "TurnReport",
    "check_mode",
    "play",
]


DRIVER_CLOSE_S = 30.0
"""The longest a driver's ``aclose()`` may take before the run goes on without it."""

log = logging.getLogger("playproof.engine")


async def close_driver(driver: Driver) -> None:
    """Let a driver release what it holds (``aclose()``), when it has anything to release.

    The play is over by then, so a close that raises or takes over DRIVER_CLOSE_S
    is logged, not raised: the record (or the error that ended the run) stands.
    Cancellation of the caller still propagates.
    """
    aclose = getattr(driver, "aclose", None)
    if not callable(aclose):
        return
    label = getattr(driver, "label", type(driver).__name__)
    try:
        async with asyncio.timeout(DRIVER_CLOSE_S):
            await aclose()
    except TimeoutError:
        log.warning("driver %s did not close within %.0f s; going on", label, DRIVER_CLOSE_S)
    except Exception as exc:
        log.warning(
            "driver %s failed to close (%s: %.200s); going on", label, type(exc).__name__, exc
        )


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
