"""Drivers that replay fixed inputs: an input script and the trivial baselines."""

from __future__ import annotations

from collections.abc import Sequence

from playproof.core.agent import Action, DecisionContext, HistoryEntry
from playproof.core.baselines import baseline_inputs
from playproof.core.observation import Observation
from playproof.errors import InputError

__all__ = ["BaselineDriver", "ScriptedDriver"]


class ScriptedDriver:
    """Plays ``inputs`` in order at zero cost (nothing is bought); raises when they run out.

    Inputs are applied as written (not normalized), so a script can probe how a
    game treats unknown words.
    """

    kind = "scripted"

    def __init__(self, inputs: Sequence[str], *, name: str = "script") -> None:
        self.inputs = tuple(inputs)
        self.id = name

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        """The input for ``context.turn`` (1-based)."""
        if context.turn > len(self.inputs):
            raise InputError(
                f"the input script has {len(self.inputs)} inputs; turn {context.turn} has none "
                "(set max_turns to the script length)"
            )
        return Action(self.inputs[context.turn - 1], 0.0)


class BaselineDriver:
    """A trivial policy (``constant:WORD``, ``unknown``, ``round-robin``, ``random-walk``).

    The inputs are a pure function of the vocabulary, the turn and the seed, so
    a baseline run reproduces from its name and seed alone.
    """

    kind = "baseline"

    def __init__(self, name: str, *, seed: int = 0) -> None:
        self.name = name
        self.seed = seed
        self.id = f"{name}@{seed}" if name == "random-walk" else name
        self._cache: tuple[str, ...] = ()

    async def act(
        self, observation: Observation, history: Sequence[HistoryEntry], context: DecisionContext
    ) -> Action:
        """The baseline's input for this turn, at zero cost."""
        if context.turn > len(self._cache):
            size = max(context.turn, 2 * len(self._cache), 64)
            self._cache = baseline_inputs(self.name, context.vocabulary, size, seed=self.seed)
        return Action(self._cache[context.turn - 1], 0.0)
