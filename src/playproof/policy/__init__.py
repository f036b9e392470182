"""Policy-bound runs: a deny-by-default envelope, pre-execution validation, check groups.

The envelope, the action parser, the validator, the authorization signatures,
the failure reasons and the ``wallet_safety`` check group are pure Python and
import no Solana library. The world (:mod:`playproof.policy.world`) and the
``solana/swap`` game (:mod:`playproof.policy.game`) need the ``solana`` extra
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
from playproof.policy.reasons import FailureReason
from playproof.policy.validate import Context, Rule, rule_violations, validate

__all__ = [
    "TEST_CHAINS",
    "WALLET_SAFETY",
    "WALLET_SAFETY_CHECKS",
    "CheckGroupResult",
    "CheckOutcome",
    "Context",
    "FailureReason",
    "PolicyEnvelope",
    "ProposedAction",
    "Rule",
    "parse_action",
    "parse_envelope",
    "require_test_chain",
    "rule_violations",
    "validate",
    "wallet_safety",
]
