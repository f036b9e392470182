"""Helpers for the policy-bound run tests: play lines on the swap game and check the result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from playproof.policy.checks import CheckGroupResult, wallet_safety
from playproof.policy.envelope import example_envelope
from playproof.policy.events import decode_events
from playproof.policy.game import SwapGame
from playproof.policy.reasons import FailureReason
from playproof.policy.replay import replay_events
from playproof.targets import Target, get_target

REFERENCE = (
    "quote USDC JUP 300",
    "swap USDC JUP 300 100",
    "quote USDC JUP 200",
    "swap USDC JUP 200 100",
    "finish",
)


@dataclass(frozen=True)
class Played:
    """What one scripted run on the swap game produced."""

    game: SwapGame
    events: tuple[str, ...]
    checks: CheckGroupResult
    digests: tuple[str, ...]
    """The account state digest after reset and after every input."""
    balances: tuple[dict[str, int], ...]
    """The wallet balances after reset and after every input."""

    @property
    def failure(self) -> FailureReason | None:
        return self.game.failure

    def decoded(self) -> list[dict[str, Any]]:
        return decode_events(self.events)


def envelope(**changes: Any) -> dict[str, Any]:
    """The shipped envelope with ``changes`` applied."""
    return {**example_envelope(), **changes}


G = TypeVar("G", bound=SwapGame)

Trace = tuple[tuple[str, ...], tuple[str, ...], tuple[dict[str, int], ...]]
"""What a played game left: its events, state digests and balances after each step."""


def step_through(make: Callable[[], G], seed: int, lines: Sequence[str]) -> tuple[G, G, Trace]:
    """Play ``lines`` from ``seed`` on ``make()``'s game, keeping the events, digests and
    balances after every step; the events are checked equal to a replay on another ``make()``,
    which is returned second (replayed) for further checks."""
    game = make()
    game.reset(seed)
    events = list(game.evidence().events)
    digests = [game.evidence().save_hash or ""]
    balances = [game._world.balances() if game._world else {}]
    for line in lines:
        game.step(line)
        snapshot = game.evidence()
        events.extend(snapshot.events)
        digests.append(snapshot.save_hash or "")
        balances.append(game._world.balances() if game._world else {})
    replayed = make()
    assert tuple(events) == replay_events(replayed, seed, lines)
    return game, replayed, (tuple(events), tuple(digests), tuple(balances))


def play(lines: Sequence[str], *, seed: int = 0, **options: Any) -> Played:
    """Play ``lines`` from ``seed`` on a fresh swap game and run ``wallet_safety``."""
    game, _, (events, digests, balances) = step_through(lambda: SwapGame(**options), seed, lines)
    return Played(game, events, wallet_safety(events, game.envelope), digests, balances)


def packaged_with(name: str, game_class: type[SwapGame], **options: Any) -> Target:
    """The packaged target ``name`` with other options (and the build they give)."""
    packaged = get_target(name)
    merged = {**packaged.spec.options, **options}
    digest = game_class(**merged).descriptor.build.digest
    spec = packaged.spec.model_copy(update={"options": merged, "build_digest": digest})
    return replace(packaged, spec=spec)


def swap_target(**options: Any) -> Target:
    """The packaged ``solana/swap`` target with other options (and the build they give)."""
    return packaged_with("solana/swap", SwapGame, **options)
