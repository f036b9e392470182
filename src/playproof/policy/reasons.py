"""The fixed set of reasons a policy-bound run ends early.

The values are part of the evidence format: a test pins them, and a new reason
is a format change.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FailureReason"]


class FailureReason(StrEnum):
    """Why a policy-bound run ended before the agent finished it."""

    MAINNET_GUARD_TRIGGERED = "mainnet_guard_triggered"
    """The envelope names a chain that is not a local or test network."""
    WALLET_POLICY_REJECTED = "wallet_policy_rejected"
    """A well-formed action broke a rule of the envelope (deny by default)."""
    AUTHORIZATION_SIGNATURE_REJECTED = "authorization_signature_rejected"
    """An action's authorization signature did not verify under the deployment's key."""
    HOSTED_WALLET_UNAVAILABLE = "hosted_wallet_unavailable"
    """The hosted wallet could not be provided, so nothing could be executed."""
    INVALID_ACTION_ATTEMPTS_EXCEEDED = "invalid_action_attempts_exceeded"
    """More invalid actions were proposed than the envelope allows."""
