"""Wrap a Python function (sync or async) as a driver."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from playproof.core.agent import Action, DecisionContext, HistoryEntry
from playproof.core.observation import Observation
from playproof.errors import DriverError

__all__ = ["CallableDriver"]


class CallableDriver:
    """A driver around ``fn(observation, history, context)``.

    ``fn`` may be sync or async and return an :class:`Action`, a ``(input, cost)``
    pair, or a bare input string. A bare string costs ``cost_usd`` (default None:
    the cost is unmeasured, which is refused under a budget; cost is never invented).
    """

    kind = "python"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        cost_usd: float | None = None,
    ) -> None:
        if not callable(fn):
            raise DriverError(f"{fn!r} is not callable")
        self.fn = fn
        self.cost_usd = cost_usd
        self.id = name or f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', '?')}"

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        """Call the function and normalize what it returned into an Action."""
        result = self.fn(observation, history, context)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, Action):
            return result
        if isinstance(result, str):
            return Action(result, self.cost_usd)
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str):
            return Action(result[0], result[1])
        raise DriverError(
            f"driver function returned {type(result).__name__}; return a str, "
            "an (input, cost_usd) pair or an Action"
        )
