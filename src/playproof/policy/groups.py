"""Every check group that applies to a policy-bound target, from one pure call.

:func:`policy_groups` is what a proof document needs: given the target (its
name or its template id), the replayed run events, the deployed envelope and,
for a rebalance target, the replayed rebalance evidence and the deployed
allocation, it returns ``wallet_safety`` and, for ``solana/rebalance``,
``rebalance_policy``. Nothing here imports a Solana library.

>>> applicable_groups("solana/rebalance")
('wallet_safety', 'rebalance_policy')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from playproof.errors import PolicyError
from playproof.policy.checks import WALLET_SAFETY, CheckGroupResult, wallet_safety
from playproof.policy.envelope import PolicyEnvelope
from playproof.policy.rebalance import REBALANCE_TEMPLATE, Allocation, RebalanceEvidence
from playproof.policy.rebalance_checks import REBALANCE_POLICY, rebalance_policy

__all__ = ["SWAP_TEMPLATE", "TEMPLATES", "applicable_groups", "policy_groups", "template_of"]

SWAP_TEMPLATE = "swap_executor_v1"
TEMPLATES: Mapping[str, str] = {
    "solana/swap": SWAP_TEMPLATE,
    "solana/rebalance": REBALANCE_TEMPLATE,
}
"""Packaged policy-bound target name -> its template id."""
_GROUPS: Mapping[str, tuple[str, ...]] = {
    SWAP_TEMPLATE: (WALLET_SAFETY,),
    REBALANCE_TEMPLATE: (WALLET_SAFETY, REBALANCE_POLICY),
}


def template_of(target: str) -> str:
    """The template id of a target name or template id; PolicyError if it is not policy-bound."""
    template = TEMPLATES.get(target, target)
    if template not in _GROUPS:
        known = ", ".join([*TEMPLATES, *_GROUPS])
        raise PolicyError(f"{target[:80]!r} is not a policy-bound target; known: {known}")
    return template


def applicable_groups(target: str) -> tuple[str, ...]:
    """The ids of the check groups that apply to ``target`` (name or template id), in order."""
    return _GROUPS[template_of(target)]


def policy_groups(
    target: str,
    events: Sequence[str] | None,
    envelope: PolicyEnvelope,
    *,
    rebalance_evidence: RebalanceEvidence | Mapping[str, Any] | bytes | str | None = None,
    allocation: Allocation | Mapping[str, Any] | None = None,
) -> tuple[CheckGroupResult, ...]:
    """Every check group that applies to ``target``, recomputed from the replayed inputs.

    ``events`` are the evidence event strings replay regenerated; ``envelope``
    is the deployed envelope (the authority). For a rebalance target,
    ``rebalance_evidence`` is the replayed ``rebalance_evidence_v1`` document
    (model, JSON data or JSON text) and ``allocation`` the deployed target
    weights and drift threshold; a missing one fails the checks that read it
    (it is not an exception).
    """
    template = template_of(target)
    results = [wallet_safety(events, envelope)]
    if template == REBALANCE_TEMPLATE:
        results.append(rebalance_policy(events, envelope, rebalance_evidence, allocation))
    return tuple(results)
