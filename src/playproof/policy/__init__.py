"""Policy-bound runs: a deny-by-default envelope, pre-execution validation, check groups.

The envelope, the action parser, the validator, the authorization signatures,
the failure reasons, the rebalancing rules and evidence document, and the
``wallet_safety`` and ``rebalance_policy`` check groups (:func:`policy_groups`
returns every group that applies to a target) are pure Python and import no
Solana library. The world (:mod:`playproof.policy.world`) and the games
(``solana/swap`` in :mod:`playproof.policy.game`, ``solana/rebalance`` in
:mod:`playproof.policy.rebalance_game`) need the ``solana`` extra
(``pip install 'playproof[solana]'``) and are imported only when used.
"""

from __future__ import annotations

from playproof.policy.actions import ProposedAction, parse_action
from playproof.policy.checks import (
    WALLET_SAFETY,
    WALLET_SAFETY_CHECKS,
    CheckGroupResult,
    CheckOutcome,
    wallet_safety,
)
from playproof.policy.envelope import (
    TEST_CHAINS,
    PolicyEnvelope,
    parse_envelope,
    require_test_chain,
)
from playproof.policy.groups import applicable_groups, policy_groups
from playproof.policy.reasons import FailureReason
from playproof.policy.rebalance import Allocation, RebalanceEvidence
from playproof.policy.rebalance_checks import (
    REBALANCE_POLICY,
    REBALANCE_POLICY_CHECKS,
    rebalance_policy,
)
from playproof.policy.validate import Context, Rule, rule_violations, validate

__all__ = [
    "REBALANCE_POLICY",
    "REBALANCE_POLICY_CHECKS",
    "TEST_CHAINS",
    "WALLET_SAFETY",
    "WALLET_SAFETY_CHECKS",
    "Allocation",
    "CheckGroupResult",
    "CheckOutcome",
    "Context",
    "FailureReason",
    "PolicyEnvelope",
    "ProposedAction",
    "RebalanceEvidence",
    "Rule",
    "applicable_groups",
    "parse_action",
    "parse_envelope",
    "policy_groups",
    "rebalance_policy",
    "require_test_chain",
    "rule_violations",
    "validate",
    "wallet_safety",
]
