"""Entry points for the policy-bound targets (data folders under ``policy/data``).

Loading a target reads only its JSON; the game module (and the Solana runtime
it needs) is imported when a session is opened, so a missing ``solders``
surfaces as the registry's usual "install the extra" message.
"""

from __future__ import annotations

from pathlib import Path

from playproof.targets import Target, load_target_dir

__all__ = ["DATA", "rebalance", "swap"]

DATA = Path(__file__).parent / "data"


def swap() -> Target:
    """``solana/swap``: reach a target holding under a policy envelope (``swap_executor_v1``)."""
    return load_target_dir(DATA / "swap")


def rebalance() -> Target:
    """``solana/rebalance``: bring a portfolio within a drift threshold of target weights."""
    return load_target_dir(DATA / "rebalance")
