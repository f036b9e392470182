"""What a driver sees and returns: the agent side of the decision loop.

A driver turns one observation into one input and a measured cost::

    async def act(observation, history, context) -> Action

The context carries the turn, limits, spend so far, the declared vocabulary,
optional out-of-band guidance and a cancellation event. History is text only.
Nothing here carries evidence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from playproof.core.canonical import plain_json_problem
from playproof.core.observation import Observation

__all__ = [
    "MAX_DRIVER_REPORT_BYTES",
    "NOOP",
    "Action",
    "DecisionContext",
    "Driver",
    "HistoryEntry",
    "normalize_input",
]

MAX_DRIVER_REPORT_BYTES = 64 * 1024
"""The most a driver's provenance report (a record's ``provenance.driver``) may take as
compact JSON."""
_NOTE_CHARS = 300
"""How much of a failing report's exception the note in its place quotes."""

NOOP = "noop"
"""The word every driver falls back to when an answer is not a valid input."""


@dataclass(frozen=True, slots=True)
class Action:
    """One input and what producing it cost (``None`` = the driver could not measure it)."""

    input: str
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One past turn, text only: the observation text shown and the input given."""

    turn: int
    observation: str
    input: str


@dataclass(slots=True)
class DecisionContext:
    """Out-of-band facts a driver may use to decide (never evidence).

    Built fresh for every turn (not frozen: frozen dataclasses cost several
    times more to build, and this one is built on the hot path).
    """

    turn: int
    max_turns: int
    seed: int
    spent_usd: float
    remaining_usd: float | None
    vocabulary: tuple[str, ...]
    guidance: str | None = None
    cancel: asyncio.Event = field(default_factory=asyncio.Event)


@runtime_checkable
class Driver(Protocol):
    """An agent driver. ``kind`` and ``id`` name the actor in the record."""

    kind: str
    id: str

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        """Choose one input for this turn and report its measured cost."""
        ...


def normalize_input(raw: str, vocabulary: Sequence[str]) -> str:
    """Trim, keep one line, refuse NUL, and map anything outside ``vocabulary`` to ``noop``.

    >>> normalize_input("  up \\n", ["up", "down"])
    'up'
    >>> normalize_input("up\\ndown", ["up", "down"]), normalize_input("jump", ["up"])
    ('noop', 'noop')
    """
    text = raw.strip()
    if not text or "\n" in text or "\r" in text or "\x00" in text:
        return NOOP
    return text if text in vocabulary else NOOP


def provenance_of(driver: Any) -> dict[str, Any]:
    """Health counters a driver chooses to publish (``driver.provenance()``), else empty.

    A report a record cannot hold (not plain JSON with finite numbers, or
    over ``MAX_DRIVER_REPORT_BYTES``), or one that raises, is replaced by a
    note saying why, so the run's record is still written.
    """
    report = getattr(driver, "provenance", None)
    if not callable(report):
        return {}
    try:
        published = report()
        found = dict(published) if isinstance(published, Mapping) else published
    except Exception as exc:
        said = f"it raised {type(exc).__name__}: {exc}"[:_NOTE_CHARS]
        problem: str | None = said.encode("utf-8", "replace").decode("utf-8")
    else:
        problem = (
            plain_json_problem(found, MAX_DRIVER_REPORT_BYTES)
            if isinstance(found, dict)
            else "it is not a JSON object"
        )
    if problem is not None:
        return {"unrecorded": f"the driver's provenance report was left out: {problem}"}
    return found
