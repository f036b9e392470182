"""The public proof document and its blocks; nothing else leaves the service about a run."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from playproof.service.checks import GroupResult
from playproof.service.deployments.labels import TrustLabelName
from playproof.transparency import InclusionProof, TreeHead

__all__ = [
    "ArtifactBlock",
    "DecisionBlock",
    "DeploymentBlock",
    "EvidenceBlock",
    "LineageBlock",
    "ProofDocument",
    "RunBlock",
    "RunStatusDocument",
    "TransparencyBlock",
]

Status = Literal["pending", "verified", "rejected", "failed"]
"""``failed``: the replay itself kept raising; ``error_kind`` says how."""


class _Public(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class RunStatusDocument(_Public):
    """Where the service is with a run; ``status`` is apart from the run's ``stop_reason``."""

    id: str
    status: Status
    stop_reason: str | None
    failed_checks: list[str]
    error_kind: str | None
    trust_label: TrustLabelName
    submitted_at: datetime
    finished_at: datetime | None
    proof_url: str


class RunBlock(_Public):
    """The run's public fields, as the signed record states them (and the verified score)."""

    id: str
    status: Status
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
    verification_trust: str | None = None
    """What the verdict relied on beyond the verifier's own computation, in words (e.g. the
    recorder key that attested a trusted-recorder transcript); null for replay."""


class DeploymentBlock(_Public):
    """The deployment a run was played on; its configuration itself stays private."""

    id: str
    target: str
    template_version: str
    """The target's build digest when the deployment was made."""
    customized: bool
    configuration_sha256: str
    has_policy_envelope: bool
    trust_label: TrustLabelName
    created_at: datetime


class LineageBlock(_Public):
    """Where the run comes from: the target, the deployment (null: none named), the label.

    ``template`` and ``template_version`` are the packaged target and its
    build as the deployment recorded them at deploy time (else as the record
    pins them). A deployment never inherits its template's scores.
    """

    target: str | None
    build_digest: str
    contract_hash: str
    calibrated: bool | None
    template: str | None
    template_version: str
    trust_label: TrustLabelName
    deployment: DeploymentBlock | None


class DecisionBlock(_Public):
    """One decision as recorded."""

    turn: int
    input: str
    cost_usd: float | None
    latency_ms: float


class ArtifactBlock(_Public):
    """An evidence artifact the server's replay regenerated: what it is, never where it is kept.

    ``digest`` is SHA-256 of the artifact's exact bytes; ``role`` says what it
    is for the run (``run-events``, ``policy-envelope``, ``rebalance-evidence``,
    ``rebalance-allocation``, ...).
    """

    role: str
    digest: str
    size: int
    media_type: str


class EvidenceBlock(_Public):
    """What the proof rests on: the record's digest, the signer, the chain, the artifacts.

    ``artifacts`` lists every artifact stored for the run (a policy-bound
    run's replayed evidence once its replay finished; a trusted-recorder run's
    transcript and contract); it is empty for a plain replayed run.
    """

    record_digest: str
    signer_key_id: str
    decision_count: int
    chain_head: str
    last_decision: DecisionBlock | None
    artifacts: list[ArtifactBlock]


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
