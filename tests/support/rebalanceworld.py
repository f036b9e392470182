"""Helpers for the rebalance tests: play lines on the rebalance game and run both check groups."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from policyworld import packaged_with, step_through

from playproof.policy.checks import CheckGroupResult
from playproof.policy.events import decode_events
from playproof.policy.groups import policy_groups
from playproof.policy.reasons import FailureReason
from playproof.policy.rebalance import RebalanceEvidence
from playproof.policy.rebalance_game import (
    RebalanceGame,
    example_allocation,
    example_rebalance_envelope,
)
from playproof.targets import Target

REBALANCE_REFERENCE = (
    "quote USDC JUP 1000",
    "swap USDC JUP 1000 100",
    "quote USDC JUP 1000",
    "swap USDC JUP 1000 100",
    "quote USDC BONK 1000",
    "swap USDC BONK 1000 100",
    "quote USDC JUP 300",
    "swap USDC JUP 300 100",
    "quote USDC BONK 300",
    "swap USDC BONK 300 100",
    "quote USDC JUP 200",
    "swap USDC JUP 200 100",
    "finish",
)


@dataclass(frozen=True)
class PlayedRebalance:
    """What one scripted run on the rebalance game produced."""

    game: RebalanceGame
    events: tuple[str, ...]
    evidence: RebalanceEvidence
    safety: CheckGroupResult
    policy: CheckGroupResult
    digests: tuple[str, ...]
    balances: tuple[dict[str, int], ...]

    @property
    def failure(self) -> FailureReason | None:
        return self.game.failure

    def decoded(self) -> list[dict[str, Any]]:
        return decode_events(self.events)

    def groups(
        self, events: Sequence[str] | None = None, evidence: Any = "same"
    ) -> tuple[CheckGroupResult, ...]:
        """Both groups over (possibly edited) events and evidence, with the game's deployment."""
        return policy_groups(
            "solana/rebalance",
            self.events if events is None else events,
            self.game.envelope,
            rebalance_evidence=self.evidence if evidence == "same" else evidence,
            allocation=self.game.allocation,
        )


def rebalance_envelope(**changes: Any) -> dict[str, Any]:
    """The shipped rebalance envelope with ``changes`` applied."""
    return {**example_rebalance_envelope(), **changes}


def allocation(**changes: Any) -> dict[str, Any]:
    """The shipped allocation with ``changes`` applied."""
    return {**example_allocation(), **changes}


def play_rebalance(lines: Sequence[str], *, seed: int = 0, **options: Any) -> PlayedRebalance:
    """Play ``lines`` from ``seed`` on a fresh rebalance game and run both groups."""
    game, again, (events, digests, balances) = step_through(
        lambda: RebalanceGame(**options), seed, lines
    )
    assert again.rebalance_evidence() == game.rebalance_evidence()
    safety, policy = policy_groups(
        "solana/rebalance",
        events,
        game.envelope,
        rebalance_evidence=game.rebalance_evidence(),
        allocation=game.allocation,
    )
    return PlayedRebalance(
        game,
        tuple(events),
        game.rebalance_evidence(),
        safety,
        policy,
        tuple(digests),
        tuple(balances),
    )


def rebalance_target(**options: Any) -> Target:
    """The packaged ``solana/rebalance`` target with other options (and the build they give)."""
    return packaged_with("solana/rebalance", RebalanceGame, **options)
