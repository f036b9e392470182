"""The ``solana/rebalance`` game (``rebalance_executor_v1``): bring a portfolio to its weights.

The world, the action grammar, the envelope, authorization and the event log
are those of ``solana/swap`` (:mod:`playproof.policy.game`); the goal differs.
The deployment names target weights for the portfolio tokens and a drift
threshold, and two rebalancing rules (:mod:`playproof.policy.rebalance`) run
before every swap next to the envelope's: a swap must sell an overweight
token for an underweight one while the portfolio is out of balance, and must
not push either token past its band. A broken rule ends the run with
``wallet_policy_rejected`` like any envelope rule.

Every decision (each proposed line) adds the clock, the prices and the
balances of every portfolio token to the run's ``rebalance_evidence_v1``
document (:meth:`RebalanceGame.rebalance_evidence`); the ``finalize`` event
carries its content hash.
"""

from __future__ import annotations

from typing import Any

from playproof.policy.actions import ProposedAction
from playproof.policy.envelope import example_envelope
from playproof.policy.game import _SOURCES, SwapGame
from playproof.policy.rebalance import (
    REBALANCE_TEMPLATE,
    Allocation,
    DecisionSnapshot,
    RebalanceEvidence,
    build_evidence,
    drift_bps,
    rebalance_violations,
    weights_bps,
)
from playproof.policy.validate import Context
from playproof.policy.world import SwapWorld

__all__ = ["RebalanceGame", "example_allocation", "example_rebalance_envelope", "make_game"]


def example_allocation() -> dict[str, Any]:
    """The target weights and drift threshold the packaged ``solana/rebalance`` deploys."""
    return {"weights_bps": {"USDC": 6000, "JUP": 2500, "BONK": 1500}, "drift_bps": 250}


def example_rebalance_envelope() -> dict[str, Any]:
    """The envelope the packaged ``solana/rebalance`` deploys, as data."""
    return {
        **example_envelope(),
        "max_position_usd": 3000,
        "max_position_weight_bps": 4000,
    }


class RebalanceGame(SwapGame):
    """One policy-bound rebalance session (see the module docstring).

    Options (all part of the build identity): ``envelope``, ``allocation``
    (target weights in bps and the drift threshold), ``hosted_wallet``.
    """

    TEMPLATE = REBALANCE_TEMPLATE
    GAME_ID = "solana-rebalance"
    TITLE = "solana/rebalance"
    SOURCES = (*_SOURCES, "rebalance", "rebalance_game")

    def __init__(
        self,
        envelope: dict[str, Any] | None = None,
        allocation: dict[str, Any] | None = None,
        hosted_wallet: bool = True,
    ) -> None:
        self.allocation = Allocation.model_validate(
            allocation if allocation is not None else example_allocation()
        )
        self._snapshots: list[DecisionSnapshot] = []
        self._seed = 0
        super().__init__(
            envelope=envelope if envelope is not None else example_rebalance_envelope(),
            hosted_wallet=hosted_wallet,
        )

    def _options(self) -> dict[str, Any]:
        return {
            "envelope": self.envelope.model_dump(mode="json", by_alias=True),
            "allocation": self.allocation.model_dump(mode="json"),
            "hosted_wallet": self.hosted_wallet,
        }

    # -- hooks -----------------------------------------------------------------------------

    def _on_reset(self, seed: int) -> None:
        self._seed = seed
        self._snapshots = []

    def _extra_rules(self, action: ProposedAction, context: Context) -> list[str]:
        return [rule.value for rule in rebalance_violations(action, self.allocation, context)]

    def _on_decision(self, world: SwapWorld) -> None:
        prices, held = world.prices(), world.balances()
        tokens = self.allocation.tokens
        self._snapshots.append(
            DecisionSnapshot(
                iteration=self._iterations,
                clock=world.second,
                prices={s: prices[s] for s in tokens if s in prices},
                balances={s: held[s] for s in tokens if s in held},
            )
        )

    def _finalize_fields(self) -> dict[str, Any]:
        return {"rebalance_evidence": self.rebalance_evidence().content_hash}

    def _weights(self, world: SwapWorld) -> dict[str, int]:
        decimals = {s: t.decimals for s, t in world.tokens.items()}
        return weights_bps(world.balances(), world.prices(), decimals, self.allocation.tokens)

    def _drift(self) -> int | None:
        world = self._world
        if world is None or world.wallet is None:
            return None
        return drift_bps(self._weights(world), self.allocation)

    def _target_met(self) -> bool:
        drift = self._drift()
        return drift is not None and drift <= self.allocation.drift_bps

    def _target_text(self) -> str:
        targets = ", ".join(f"{s} {w} bps" for s, w in sorted(self.allocation.weights_bps.items()))
        text = f"target: weights {targets}, each within {self.allocation.drift_bps} bps"
        world = self._world
        if world is not None and world.wallet is not None:
            now = ", ".join(f"{s} {w} bps" for s, w in sorted(self._weights(world).items()))
            text += f"; now {now}"
        return text

    def _extra_engine(self, world: SwapWorld) -> dict[str, int]:
        drift = self._drift()
        return {"drift_bps": drift if drift is not None else 10_000}

    # -- the evidence document -------------------------------------------------------------

    def rebalance_evidence(self) -> RebalanceEvidence:
        """The run's ``rebalance_evidence_v1`` document so far (every decision made)."""
        world = self._world
        tokens = self.allocation.tokens
        decimals = (
            {s: world.tokens[s].decimals for s in tokens if s in world.tokens}
            if world is not None
            else {}
        )
        return build_evidence(
            chain=self.envelope.chain,
            seed=self._seed,
            allocation=self.allocation,
            decimals=decimals,
            decisions=self._snapshots,
        )


def make_game(**options: Any) -> RebalanceGame:
    """Factory the target registry and worker children use."""
    return RebalanceGame(**options)
