"""Building public documents from a stored run (reads only)."""

from __future__ import annotations

import functools
from importlib import metadata

from pydantic import ValidationError
from sqlalchemy.orm import Session

from playproof.core.record import RunRecord
from playproof.service.artifacts.replay import is_policy_target
from playproof.service.artifacts.services import run_artifact_bytes, run_artifacts
from playproof.service.checks import (
    GroupResult,
    PolicyEvidence,
    StoredEvidence,
    decide_group,
    decide_groups,
)
from playproof.service.deployments.models import Deployment
from playproof.service.deployments.services import require_read
from playproof.service.log.services import LogCache, as_utc, leaf_of
from playproof.service.problems import Problem
from playproof.service.proofs.models import (
    ArtifactBlock,
    DecisionBlock,
    DeploymentBlock,
    EvidenceBlock,
    LineageBlock,
    ProofDocument,
    RunBlock,
    RunStatusDocument,
    Status,
    TransparencyBlock,
)
from playproof.service.runs.models import Run
from playproof.service.runs.services import signed_record, stored_report
from playproof.service.runs.stop_reasons import stop_reason
from playproof.sign import SigningKey

__all__ = [
    "check_run_read",
    "group_result",
    "proof_document",
    "status_document",
    "verifier_version",
]


def check_run_read(run: Run, viewer: int | None) -> None:
    """Refuse ``viewer`` (an owner id, None: anonymous) a run its trust label keeps from them.

    A customized instance is its owner's only: 401 without credentials, 403
    for another owner. Every read route about a run calls this first.
    """
    require_read(run.trust_label, run.owner_id, viewer, f"run {run.id}")


@functools.cache
def verifier_version() -> str:
    """The version of playproof that replays uploads on this server (read once: it is slow)."""
    try:
        return metadata.version("playproof")
    except metadata.PackageNotFoundError:
        return "unknown"


def _status(run: Run) -> Status:
    if run.status == "verified":
        return "verified"
    if run.status == "rejected":
        return "rejected"
    if run.status == "failed":
        return "failed"
    return "pending"


def status_document(run: Run, record: RunRecord | None = None) -> RunStatusDocument:
    """Where the service is with ``run`` (``record``: its signed record, when already read).

    The record's stop reason is read once per envelope (clients poll this).
    """
    report = stored_report(run)
    failed = [f"{c.id}: {c.reason}" for c in report.failed()] if report is not None else []
    return RunStatusDocument(
        id=run.id,
        status=_status(run),
        stop_reason=stop_reason(run, record),
        failed_checks=failed,
        error_kind=run.error_kind,
        trust_label=run.trust_label,  # type: ignore[arg-type]
        submitted_at=as_utc(run.created_at),
        finished_at=as_utc(run.finished_at) if run.finished_at else None,
        proof_url=f"/api/v1/verifier/runs/{run.id}",
    )


def _evidence(session: Session, run: Run, record: RunRecord | None = None) -> StoredEvidence:
    # Only a policy-bound run's artifacts are read: other runs cost no query.
    policy = (
        PolicyEvidence(target=run.target_name, artifacts=run_artifact_bytes(session, run.id))
        if is_policy_target(run.target_name)
        else None
    )
    if record is None:
        record = signed_record(run)
    return StoredEvidence(record=record, report=stored_report(run), policy=policy)


def group_result(session: Session, run: Run, group: str) -> GroupResult:
    """The check group called ``group`` decided on the run's stored evidence.

    A 404 problem when the run has no such group (a policy group of a run
    that is not policy-bound).
    """
    found = decide_group(group, _evidence(session, run))
    if found is None:
        raise Problem(404, "unknown-check-group", f"run {run.id} has no check group {group[:64]!r}")
    return found


def _artifact_blocks(session: Session, run: Run) -> list[ArtifactBlock]:
    return [
        ArtifactBlock(role=a.role, digest=a.digest, size=a.size, media_type=a.media_type)
        for a in run_artifacts(session, run.id)
    ]


def _transparency(
    session: Session, run: Run, log_key: SigningKey | None, cache: LogCache | None
) -> TransparencyBlock | None:
    leaf = leaf_of(session, run.id) if log_key is not None else None
    if leaf is None or log_key is None:
        return None
    head, proof = (cache or LogCache()).inclusion(session, leaf.leaf_index, log_key)
    return TransparencyBlock(
        log_id=log_key.key_id, leaf_index=leaf.leaf_index, tree_head=head, inclusion_proof=proof
    )


def _deployment_block(session: Session, run: Run) -> DeploymentBlock | None:
    if run.deployment_id is None:
        return None
    deployment = session.get(Deployment, run.deployment_id)
    if deployment is None:
        return None
    return DeploymentBlock(
        id=deployment.id,
        target=deployment.target_name,
        template_version=deployment.template_version,
        customized=deployment.customized,
        configuration_sha256=deployment.configuration_sha256,
        has_policy_envelope=deployment.policy_envelope is not None,
        trust_label=deployment.trust_label,  # type: ignore[arg-type]
        created_at=as_utc(deployment.created_at),
    )


def _claimed_score(record: RunRecord) -> str:
    """The score ``record`` claims, as text.

    A signed record may claim more milestones than it says its contract has:
    no score can hold that (the verdict rejects the claim), so the document
    states the two counts as they stand instead of failing to be written.
    """
    try:
        return record.score.text
    except ValidationError:
        return f"{len(record.claimed)} claimed of {record.milestones_total}"


def proof_document(
    session: Session,
    run: Run,
    log_key: SigningKey | None,
    cache: LogCache | None = None,
    *,
    record: RunRecord | None = None,
) -> ProofDocument:
    """The public proof document of ``run`` (its inclusion proof signed with ``log_key``).

    ``cache`` is the service's Merkle tree cache (none: the tree is loaded
    for this document). ``record`` is the run's signed record when the caller
    has it parsed already (it must be the one in the run's envelope); None
    reads it from the envelope. The caller checks read access first
    (:func:`check_run_read`).
    """
    evidence = _evidence(session, run, record)
    record, report = evidence.record, evidence.report
    if record is None:
        # Uploads are parsed before they are stored; an unreadable one is damage.
        raise Problem(409, "unreadable-run", f"run {run.id} holds no readable record")
    score = report.score if report is not None else None
    deployment = _deployment_block(session, run)
    last = record.decisions[-1] if record.decisions else None
    return ProofDocument(
        verifier_version=verifier_version(),
        run=RunBlock(
            id=run.id,
            status=_status(run),
            target=record.target.name,
            game_id=record.target.game_id,
            platform=record.target.platform,
            verification_mode=record.target.verification_mode.value,
            actor_kind=record.actor.kind,
            actor_id=record.actor.id,
            seed=record.seed,
            stop_reason=record.stop_reason.value,
            game_over=record.game_over,
            turns=len(record.decisions),
            max_turns=record.limits.max_turns,
            budget_usd=record.limits.budget_usd,
            spent_usd=record.accounting.spent_usd,
            unmeasured_decisions=record.accounting.unmeasured_decisions,
            total_latency_ms=record.accounting.total_latency_ms,
            claimed_score=_claimed_score(record),
            verified_score=score.text if score is not None else None,
            verified_milestones=list(report.verified) if report is not None else [],
            verification_trust=report.trust if report is not None else None,
            submitted_at=as_utc(run.created_at),
            finished_at=as_utc(run.finished_at) if run.finished_at else None,
        ),
        lineage=LineageBlock(
            target=record.target.name,
            build_digest=record.target.build_digest,
            contract_hash=record.target.contract_hash,
            calibrated=record.target.calibrated,
            template=deployment.target if deployment is not None else record.target.name,
            template_version=(
                deployment.template_version
                if deployment is not None
                else record.target.build_digest
            ),
            trust_label=run.trust_label,  # type: ignore[arg-type]
            deployment=deployment,
        ),
        evidence=EvidenceBlock(
            record_digest=run.record_digest,
            signer_key_id=run.key_id,
            decision_count=run.decision_count,
            chain_head=record.chain_head,
            last_decision=(
                DecisionBlock(
                    turn=last.turn,
                    input=last.input,
                    cost_usd=last.cost_usd,
                    latency_ms=last.latency_ms,
                )
                if last is not None
                else None
            ),
            artifacts=_artifact_blocks(session, run),
        ),
        cats=decide_groups(evidence),
        transparency=_transparency(session, run, log_key, cache),
    )
