"""Operations on runs: ingest a signed record, read it back, store the replay's verdict."""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, defer

from playproof.core.canonical import parse_json
from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord, parse_run_record
from playproof.core.report import VerificationReport
from playproof.errors import FormatError
from playproof.service.artifacts.models import RunArtifact
from playproof.service.artifacts.roles import ArtifactBytes
from playproof.service.artifacts.services import link_artifacts, store_artifact
from playproof.service.db import utc_now
from playproof.service.deployments.labels import TrustLabel, label_for_target
from playproof.service.deployments.models import Deployment, Target
from playproof.service.log.services import append_verified
from playproof.service.owners.services import owner_keys
from playproof.service.problems import Problem
from playproof.service.runs.models import Run, RunStatus, agent_of
from playproof.service.runs.uploads import SIDE_NAMES, side_artifacts, unpack
from playproof.service.verification import add_once, count_raise, parse_report
from playproof.sign import (
    MAX_ENVELOPE_BYTES,
    RUN_RECORD,
    RUN_RECORD_SUBJECT,
    VerifyingKey,
    parse_envelope,
    verify_statement,
)

__all__ = [
    "MAX_REPLAY_ATTEMPTS",
    "RUN_ID",
    "Ingested",
    "ReplayJob",
    "finish_run",
    "get_run",
    "ingest",
    "pending_run_ids",
    "replay_raised",
    "signed_record",
    "stored_report",
]


log = logging.getLogger("playproof.service")

RUN_ID = re.compile(r"[0-9a-f]{32}")
"""What a run id looks like: 32 lowercase hex digits."""


@dataclass(frozen=True)
class ReplayJob:
    """What the server's replay of one run needs, as read at upload (no second read).

    ``envelope`` is the stored (normalized) envelope, ``key_pems`` the owner's
    keys, ``deployed_envelope`` the deployment's policy envelope (None: the
    target's own) and ``sides`` what the upload brought beside the envelope
    (``transcript``, ``contract``), as :func:`~playproof.service.runs.uploads.uploaded_sides`
    reads them back.
    """

    envelope: bytes
    key_pems: tuple[bytes, ...]
    deployed_envelope: str | None = None
    sides: dict[str, bytes] = field(default_factory=dict)
    target_name: str | None = None
    """The target the record names (whether its replay makes policy artifacts)."""
    record: RunRecord | None = None
    """The signed record as the upload read it, for rendering the run's proof document
    when its verdict is stored (None: read from the envelope then). Never sent to the
    replay, which reads the envelope itself."""


class Ingested:
    """The run an upload produced, and whether it is new (False: the same envelope again).

    ``record`` is the signed record as read at upload (the same for a repeat);
    ``job`` what a new run's replay needs (None for a repeat).
    """

    __slots__ = ("created", "job", "record", "run")

    def __init__(
        self,
        run: Run,
        created: bool,
        record: RunRecord | None = None,
        job: ReplayJob | None = None,
    ) -> None:
        self.run = run
        self.created = created
        self.record = record
        self.job = job if created else None


def _packaged(session: Session, record: RunRecord, known: dict[str, bool] | None) -> bool | None:
    """None when the record's target is not packaged, else whether the registry calibrated it.

    The calibration is the service's own (the targets table), never the record's word.
    """
    name = record.target.name
    if name is None or len(name) > 128:
        return None
    if known is not None and name in known:
        return known[name]
    row = session.get(Target, name)
    if row is None:
        return None
    if known is not None:
        known[name] = row.calibrated  # targets are never removed from the table (sync_targets)
    return row.calibrated


def _label(record: RunRecord, deployment: Deployment | None, packaged: bool | None) -> TrustLabel:
    target = record.target
    if target.verification_mode is not VerificationMode.REPLAY:
        # Verified from a transcript or pinned receipts, not replayed: never ranked beside
        # replayed runs on a public board, whatever target it names.
        return TrustLabel.CUSTOMIZED
    label = label_for_target(
        named=target.name is not None,
        packaged=packaged is not None,
        # The registry's calibration; a record that says its own contract was not is believed.
        calibrated=bool(packaged) and target.calibrated is not False,
    )
    if label is TrustLabel.CANONICAL and deployment is not None:
        return TrustLabel(deployment.trust_label)
    return label


def _deployment_for(
    session: Session, owner_id: int, record: RunRecord, deployment_id: str | None
) -> Deployment | None:
    if deployment_id is None:
        return None
    from playproof.service.deployments.services import get_deployment

    deployment = get_deployment(session, deployment_id)
    if deployment.owner_id != owner_id:
        raise Problem(403, "not-your-deployment", "a run may only name its owner's deployment")
    if record.target.name != deployment.target_name:
        raise Problem(
            422,
            "deployment-mismatch",
            f"the record plays {str(record.target.name)[:64]!r}, the deployment "
            f"deploys {deployment.target_name!r}",
        )
    if record.target.build_digest != deployment.template_version:
        raise Problem(
            422,
            "deployment-mismatch",
            f"the record pins build {record.target.build_digest[:16]}..., the deployment "
            f"was made at {deployment.template_version[:16]}...",
        )
    return deployment


def ingest(
    session: Session,
    owner_id: int,
    body: bytes,
    *,
    deployment_id: str | None = None,
    bundled: bool = False,
    keys: Sequence[VerifyingKey] | None = None,
    known_targets: dict[str, bool] | None = None,
) -> Ingested:
    """Check an upload's signature against the owner's keys and store it ``pending``.

    Refuses (422, naming the failing check) an envelope that is malformed or
    not signed by one of the owner's registered keys, and (422, naming the
    label) a record of an ``external_custom_runtime``. ``deployment_id``
    names the owner's deployment the run was played on. The same envelope
    sent again returns the run it made the first time. Commits once.

    ``bundled``: the body is a run upload (``playproof/run-upload/v1``), the
    envelope with a trusted-recorder transcript and contract, which are
    stored as the run's artifacts in the same transaction (see
    :mod:`playproof.service.runs.uploads`). ``keys``: the owner's registered
    keys when the caller read them already (None: read here).
    ``known_targets``: targets this database is known to package, by name, with
    the registry's calibration (a row in ``targets`` is never removed, so a
    name seen once stays packaged); a name found is added to it.
    """
    unpacked = unpack(body, bundled=bundled)
    envelope = unpacked.envelope
    normalized = envelope.to_bytes()
    digest = hashlib.sha256(normalized).hexdigest()
    keys = list(keys) if keys is not None else owner_keys(session, owner_id)
    verdict = verify_statement(RUN_RECORD, envelope, keys)
    record, statement = verdict.value, verdict.statement
    if verdict.verdict != "clean" or record is None or statement is None or verdict.key_id is None:
        failed = next((c for c in verdict.checks if not c.passed), None)
        named = f"{failed.id}: {failed.reason}" if failed else "the signature does not verify"
        kind = failed.id if failed else "signature-valid"
        raise Problem(422, kind, named)
    deployment = _deployment_for(session, owner_id, record, deployment_id)
    packaged = _packaged(session, record, known_targets)
    label = _label(record, deployment, packaged)
    if label is TrustLabel.EXTERNAL:
        raise Problem(
            422,
            label.value,
            f"{label.value}: the record names no target, so the service cannot replay it",
        )
    extras = side_artifacts(unpacked, record, packaged is not None)
    # ``subjects-match`` passed: this subject is the digest of the record as received.
    record_digest = next(
        (s.digest.get("sha256", "") for s in statement.subject if s.name == RUN_RECORD_SUBJECT), ""
    )
    run = Run(
        id=uuid.uuid4().hex,
        owner_id=owner_id,
        envelope_sha256=digest,
        envelope=normalized,
        record_digest=record_digest,
        key_id=verdict.key_id,
        decision_count=len(record.decisions),
        status=RunStatus.PENDING.value,
        deployment_id=deployment.id if deployment is not None else None,
        trust_label=label.value,
        target_name=record.target.name,
        seed=record.seed,
        budget_usd=record.limits.budget_usd,
        cost_usd=(
            record.accounting.spent_usd if record.accounting.unmeasured_decisions == 0 else None
        ),
        attempts=0,
        agent=agent_of(record),
        stop_reason=record.stop_reason.value,
    )
    job = ReplayJob(
        envelope=normalized,
        key_pems=tuple(key.to_pem() for key in keys),
        deployed_envelope=deployment.policy_envelope if deployment is not None else None,
        sides={SIDE_NAMES[e.role]: e.content for e in extras},
        target_name=record.target.name,
        record=record,
    )

    def raced() -> Run | None:
        return session.scalar(select(Run).where(Run.envelope_sha256 == digest))

    if extras:
        # The transcript and contract are stored with the run in one transaction: the
        # artifacts, then the run, then the links that name both (inserted in that order).
        for attempt in range(_ARTIFACT_RACE_ATTEMPTS):
            try:
                # Inside the try: looking up the next artifact flushes the one before.
                for extra in extras:
                    store_artifact(session, extra.content, extra.media_type)
                session.add(run)
                session.flush()
                break
            except IntegrityError:
                session.rollback()
                found = raced()
                if found is not None:  # the same envelope, stored before or just now
                    return Ingested(found, created=False, record=record)
                # Another upload (another record, the same transcript) stored one of
                # these artifacts first; it is there now, so the next attempt uses it.
                if attempt + 1 == _ARTIFACT_RACE_ATTEMPTS:
                    raise Problem(
                        503,
                        "upload-contended",
                        "other uploads kept storing the same artifacts at the same moment; "
                        "send the upload again",
                    ) from None
        session.add_all(RunArtifact(run_id=run.id, role=e.role, digest=e.digest) for e in extras)
    # No lookup first: the envelope digest is unique, so the same envelope sent
    # again fails the insert and the stored run is the answer (one query fewer
    # for every new upload).
    stored, created = add_once(session, run, raced)
    return Ingested(stored, created=created, record=record, job=job)


_NO_ENVELOPE = (defer(Run.envelope),)
"""Built once: a loader option costs more to build than to apply."""


def get_run(session: Session, run_id: str, *, envelope: bool = True) -> Run:
    """The run with this id; a 404 problem when there is none.

    ``envelope=False`` leaves the stored envelope (up to 16 MiB) unread until
    it is used, for readers that seldom need it (status polls).
    """
    # Ids are 32 lowercase hex digits; anything else (a NUL byte, a megabyte)
    # is unknown without asking the database, which may refuse it loudly.
    options = () if envelope else _NO_ENVELOPE
    run = session.get(Run, run_id, options=options) if RUN_ID.fullmatch(run_id) else None
    if run is None:
        raise Problem(404, "unknown-run", f"no run with id {run_id[:64]!r}")
    return run


def pending_run_ids(session: Session) -> list[str]:
    """Runs whose replay has not finished, oldest first."""
    query = select(Run.id).where(Run.status == RunStatus.PENDING.value).order_by(Run.created_at)
    return list(session.scalars(query))


_ARTIFACT_RACE_ATTEMPTS = 3
"""How often an upload is stored again when a concurrent upload stored one of its artifacts."""

MAX_APPEND_ATTEMPTS = 8
"""How often storing a verdict is retried when another process took the same log index."""


_RUNS: Table = Run.__table__  # type: ignore[assignment]
# Statements on the table (not the mapped class) are built once and skip the ORM's
# bulk-update bookkeeping: storing a verdict is on the path of every replay.
_FINISH = (
    update(_RUNS)
    .where(_RUNS.c.id == bindparam("run_id"), _RUNS.c.status == RunStatus.PENDING.value)
    .values(
        status=bindparam("new_status"),
        report=bindparam("new_report"),
        finished_at=bindparam("new_finished_at"),
    )
)
_FINISH_SCORED = _FINISH.values(
    earned=bindparam("new_earned"),
    earnable=bindparam("new_earnable"),
    score_ratio=bindparam("new_score_ratio"),
)
_STORE_PROOF = (
    update(_RUNS)
    .where(_RUNS.c.id == bindparam("run_id"))
    .values(proof_document=bindparam("document"), proof_key=bindparam("key"))
)


def finish_run(
    session: Session,
    run_id: str,
    report: VerificationReport,
    *,
    log: bool = False,
    artifacts: Sequence[ArtifactBytes] = (),
    render: Callable[[Session, Run], tuple[bytes, str] | None] | None = None,
) -> bool:
    """Store a replay's verdict on a pending run; False if it was not pending.

    With ``log``, a verified run's record digest is appended to the
    transparency log in the same transaction: verified and logged, or neither.
    ``artifacts`` (what the replay regenerated) are stored once per digest and
    linked to the run in that transaction too. ``render`` builds the run's
    proof document and its key from the finished row
    (:func:`playproof.service.proofs.cache.render_proof`), stored with the
    verdict so that no reader builds it again.
    """
    status = RunStatus.VERIFIED if report.clean else RunStatus.REJECTED
    score = report.score if report.clean else None
    scored = (
        {
            "earned": score.earned,
            "earnable": score.earnable,
            "score_ratio": score.earned / score.earnable if score.earnable else 0.0,
        }
        if score is not None
        else {}
    )
    values = {
        "run_id": run_id,
        "new_status": status.value,
        "new_report": report.model_dump_json(),
        "new_finished_at": utc_now(),
        **{f"new_{name}": value for name, value in scored.items()},
    }
    statement = _FINISH_SCORED if scored else _FINISH
    for attempt in range(MAX_APPEND_ATTEMPTS):
        result = session.execute(statement, values)
        changed = bool(getattr(result, "rowcount", 0))
        try:
            if changed and artifacts:
                link_artifacts(session, run_id, artifacts)
            logged = log and status is RunStatus.VERIFIED
            if changed and (logged or render is not None):
                # The row as the update left it (the update bypassed any loaded object),
                # read once for both; the envelope only if rendering asks for it.
                session.flush()
                run = session.get(Run, run_id, populate_existing=True, options=_NO_ENVELOPE)
                assert run is not None
                if logged:
                    append_verified(session, run_id, run.record_digest)
                if render is not None:
                    _store_rendered(session, run, render)
            session.commit()
            return changed
        except IntegrityError:
            session.rollback()
            if attempt == MAX_APPEND_ATTEMPTS - 1:
                raise
    return False


def _store_rendered(
    session: Session, run: Run, render: Callable[[Session, Run], tuple[bytes, str] | None]
) -> None:
    try:
        rendered = render(session, run)
    except SQLAlchemyError:
        raise  # the transaction is broken: the verdict is not stored either (retried later)
    except Exception:
        # The document is a cache: a verdict is stored without it (built when asked for).
        log.exception("rendering the proof document of run %s failed", run.id)
        rendered = None
    if rendered is not None:
        document, key = rendered
        session.execute(_STORE_PROOF, {"run_id": run.id, "document": document, "key": key})


MAX_REPLAY_ATTEMPTS = 3
"""How often a replay that raises is tried before the run is marked ``failed``."""


def replay_raised(session: Session, run_id: str, error: BaseException) -> bool:
    """Count a replay that raised; True when the run is now ``failed``, False to retry. Commits.

    Only the error's kind (its class name) is kept, never its message or
    traceback, which may quote server paths.
    """
    run = session.get(Run, run_id)
    if run is None or run.status != RunStatus.PENDING.value:
        session.rollback()
        return True
    failed = count_raise(run, error, MAX_REPLAY_ATTEMPTS)
    session.commit()
    return failed


def signed_record(run: Run) -> RunRecord | None:
    """The run record inside the stored envelope (None if it does not parse)."""
    try:
        envelope = parse_envelope(run.envelope)
        statement = parse_json(envelope.payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="payload")
        if not isinstance(statement, dict):
            return None
        return parse_run_record(statement.get("predicate"))
    except FormatError:
        return None


def stored_report(run: Run) -> VerificationReport | None:
    """The stored verification report (None while pending or if unreadable)."""
    return parse_report(run.report)
