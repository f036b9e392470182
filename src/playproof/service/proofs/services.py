"""Building public documents from a stored run (reads only)."""

from __future__ import annotations

from importlib import metadata
from typing import Literal

from sqlalchemy.orm import Session

from playproof.service.checks import GROUPS, CheckGroup, GroupResult, StoredEvidence, run_group
from playproof.service.log.services import as_utc, inclusion, leaf_of
from playproof.service.problems import Problem
from playproof.service.proofs.models import (
    DecisionBlock,
    EvidenceBlock,
    LineageBlock,
    ProofDocument,
    RunBlock,
    RunStatusDocument,
    TransparencyBlock,
)
from playproof.service.runs.models import Run
from playproof.service.runs.services import signed_record, stored_report
from playproof.sign import SigningKey

__all__ = ["group_result", "proof_document", "status_document", "verifier_version"]

NO_DEPLOYMENT = "deployments are not recorded yet: the lineage names the packaged target only"

Status = Literal["pending", "verified", "rejected"]


def verifier_version() -> str:
    """The version of playproof that replays uploads on this server."""
    try:
        return metadata.version("playproof")
    except metadata.PackageNotFoundError:
        return "unknown"


def _status(run: Run) -> Status:
    if run.status == "verified":
        return "verified"
    if run.status == "rejected":
        return "rejected"
    return "pending"


def status_document(run: Run) -> RunStatusDocument:
    """Where the service is with ``run``."""
    record = signed_record(run)
    report = stored_report(run)
    failed = [f"{c.id}: {c.reason}" for c in report.failed()] if report is not None else []
    return RunStatusDocument(
        id=run.id,
        status=_status(run),
        stop_reason=record.stop_reason.value if record is not None else None,
        failed_checks=failed,
        submitted_at=as_utc(run.created_at),
        finished_at=as_utc(run.finished_at) if run.finished_at else None,
        proof_url=f"/api/v1/verifier/runs/{run.id}",
    )


def _evidence(run: Run) -> StoredEvidence:
    return StoredEvidence(record=signed_record(run), report=stored_report(run))


def group_result(run: Run, group: CheckGroup) -> GroupResult:
    """One check group decided on the run's stored evidence."""
    return run_group(group, _evidence(run))


def _transparency(
    session: Session, run: Run, log_key: SigningKey | None
) -> TransparencyBlock | None:
    leaf = leaf_of(session, run.id) if log_key is not None else None
    if leaf is None or log_key is None:
        return None
    head, proof = inclusion(session, leaf, log_key)
    return TransparencyBlock(
        log_id=log_key.key_id, leaf_index=leaf.leaf_index, tree_head=head, inclusion_proof=proof
    )


def proof_document(session: Session, run: Run, log_key: SigningKey | None) -> ProofDocument:
    """The public proof document of ``run`` (its inclusion proof signed with ``log_key``)."""
    evidence = _evidence(run)
    record, report = evidence.record, evidence.report
    if record is None:
        # Uploads are parsed before they are stored; an unreadable one is damage.
        raise Problem(409, "unreadable-run", f"run {run.id} holds no readable record")
    score = report.score if report is not None else None
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
            claimed_score=record.score.text,
            verified_score=score.text if score is not None else None,
            verified_milestones=list(report.verified) if report is not None else [],
            submitted_at=as_utc(run.created_at),
            finished_at=as_utc(run.finished_at) if run.finished_at else None,
        ),
        lineage=LineageBlock(
            target=record.target.name,
            build_digest=record.target.build_digest,
            contract_hash=record.target.contract_hash,
            trust_label=(
                "uncalibrated"
                if record.target.calibrated is False
                else "benchmarked_canonical_template"
            ),
            deployment=None,
            note=NO_DEPLOYMENT,
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
        ),
        cats=[run_group(group, evidence) for group in GROUPS],
        transparency=_transparency(session, run, log_key),
    )
