"""The public proof document and its blocks; nothing else leaves the service about a run."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from playproof.service.checks import GroupResult
from playproof.transparency import InclusionProof, TreeHead

__all__ = [
    "DecisionBlock",
    "EvidenceBlock",
    "LineageBlock",
    "ProofDocument",
    "RunBlock",
    "RunStatusDocument",
    "TransparencyBlock",
    "TrustLabel",
]

TrustLabel = Literal["benchmarked_canonical_template", "uncalibrated"]
"""``benchmarked_canonical_template``: a packaged target with a calibrated contract."""


class _Public(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class RunStatusDocument(_Public):
    """Where the service is with a run; ``status`` is apart from the run's ``stop_reason``."""

    id: str
    status: Literal["pending", "verified", "rejected"]
    stop_reason: str | None
    failed_checks: list[str]
    submitted_at: datetime
    finished_at: datetime | None
    proof_url: str


class RunBlock(_Public):
    """The run's public fields, as the signed record states them (and the verified score)."""

    id: str
    status: Literal["pending", "verified", "rejected"]
    target: str | None
    game_id: str
    platform: str
    verification_mode: str
    actor_kind: str
    actor_id: str
    seed: int
    stop_reason: str
    game_over: bool
    turns: int
    max_turns: int
    budget_usd: float | None
    spent_usd: float
    unmeasured_decisions: int
    total_latency_ms: float
    claimed_score: str
    verified_score: str | None
    verified_milestones: list[str]
    submitted_at: datetime
    finished_at: datetime | None


class LineageBlock(_Public):
    """Where the target comes from; deployments are not recorded yet (``deployment`` null)."""

    target: str | None
    build_digest: str
    contract_hash: str
    trust_label: TrustLabel
    deployment: None
    note: str


class DecisionBlock(_Public):
    """One decision as recorded."""

    turn: int
    input: str
    cost_usd: float | None
    latency_ms: float


class EvidenceBlock(_Public):
    """What the proof rests on: the record's digest, the signer, the chain."""

    record_digest: str
    signer_key_id: str
    decision_count: int
    chain_head: str
    last_decision: DecisionBlock | None


class TransparencyBlock(_Public):
    """Where the verified record sits in the transparency log, and the proof of it.

    Check it offline: ``tree_head`` is signed by the log key named ``log_id``
    and ``inclusion_proof`` leads from the record digest's leaf to its root.
    """

    log_id: str
    leaf_index: int
    tree_head: TreeHead
    inclusion_proof: InclusionProof


class ProofDocument(_Public):
    """The public proof of one run: ``run``, ``lineage``, ``evidence``, ``cats``, ``transparency``.

    ``transparency`` is null while the run is not in the log (not verified,
    or the service keeps no log).
    """

    verifier_version: str
    run: RunBlock
    lineage: LineageBlock
    evidence: EvidenceBlock
    cats: list[GroupResult]
    transparency: TransparencyBlock | None
