"""Operations on runs: ingest a signed record, read it back, store the replay's verdict."""

from __future__ import annotations

import hashlib
import re
import uuid

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from playproof.core.canonical import parse_json
from playproof.core.record import RunRecord, parse_run_record
from playproof.core.report import VerificationReport
from playproof.errors import FormatError
from playproof.service.db import utc_now
from playproof.service.log.services import append_verified
from playproof.service.owners.services import owner_keys
from playproof.service.problems import Problem
from playproof.service.runs.models import Run, RunStatus
from playproof.sign import (
    MAX_ENVELOPE_BYTES,
    RUN_RECORD_SUBJECT,
    parse_envelope,
    verify_envelope,
)

__all__ = [
    "Ingested",
    "finish_run",
    "get_run",
    "ingest",
    "pending_run_ids",
    "signed_record",
    "stored_report",
]


_RUN_ID = re.compile(r"[0-9a-f]{32}")


class Ingested:
    """The run an upload produced, and whether it is new (False: the same envelope again)."""

    __slots__ = ("created", "run")

    def __init__(self, run: Run, created: bool) -> None:
        self.run = run
        self.created = created


def ingest(session: Session, owner_id: int, body: bytes) -> Ingested:
    """Check an upload's signature against the owner's keys and store it ``pending``.

    Refuses (422, naming the failing check) an envelope that is malformed or
    not signed by one of the owner's registered keys. The same envelope sent
    again returns the run it made the first time. Commits once.
    """
    try:
        envelope = parse_envelope(body)
    except FormatError as exc:
        raise Problem(422, "envelope-well-formed", f"envelope-well-formed: {exc}") from exc
    normalized = envelope.to_bytes()
    digest = hashlib.sha256(normalized).hexdigest()
    verdict = verify_envelope(envelope, owner_keys(session, owner_id))
    if not verdict.clean or verdict.record is None or verdict.key_id is None:
        failed = next((c for c in verdict.checks if not c.passed), None)
        named = f"{failed.id}: {failed.reason}" if failed else "the signature does not verify"
        kind = failed.id if failed else "signature-valid"
        raise Problem(422, kind, named)
    existing = session.scalar(select(Run).where(Run.envelope_sha256 == digest))
    if existing is not None:
        return Ingested(existing, created=False)
    subject = next(
        (s for s in _subjects(envelope.payload_bytes()) if s[0] == RUN_RECORD_SUBJECT), ("", "")
    )
    run = Run(
        id=uuid.uuid4().hex,
        owner_id=owner_id,
        envelope_sha256=digest,
        envelope=normalized,
        record_digest=subject[1],
        key_id=verdict.key_id,
        decision_count=len(verdict.record.decisions),
        status=RunStatus.PENDING.value,
    )
    session.add(run)
    try:
        session.commit()
    except IntegrityError:
        # The same envelope raced in from another request: that one is the run.
        session.rollback()
        raced = session.scalar(select(Run).where(Run.envelope_sha256 == digest))
        if raced is None:
            raise
        return Ingested(raced, created=False)
    return Ingested(run, created=True)


def _subjects(payload: bytes) -> list[tuple[str, str]]:
    statement = parse_json(payload, limit=MAX_ENVELOPE_BYTES, what="statement")
    found = []
    for subject in statement.get("subject", []) if isinstance(statement, dict) else []:
        if isinstance(subject, dict) and isinstance(subject.get("digest"), dict):
            found.append((str(subject.get("name")), str(subject["digest"].get("sha256", ""))))
    return found


def get_run(session: Session, run_id: str) -> Run:
    """The run with this id; a 404 problem when there is none."""
    # Ids are 32 lowercase hex digits; anything else (a NUL byte, a megabyte)
    # is unknown without asking the database, which may refuse it loudly.
    run = session.get(Run, run_id) if _RUN_ID.fullmatch(run_id) else None
    if run is None:
        raise Problem(404, "unknown-run", f"no run with id {run_id[:64]!r}")
    return run


def pending_run_ids(session: Session) -> list[str]:
    """Runs whose replay has not finished, oldest first."""
    query = select(Run.id).where(Run.status == RunStatus.PENDING.value).order_by(Run.created_at)
    return list(session.scalars(query))


MAX_APPEND_ATTEMPTS = 8
"""How often storing a verdict is retried when another process took the same log index."""


def finish_run(
    session: Session, run_id: str, report: VerificationReport, *, log: bool = False
) -> bool:
    """Store a replay's verdict on a pending run; False if it was not pending.

    With ``log``, a verified run's record digest is appended to the
    transparency log in the same transaction: verified and logged, or neither.
    """
    status = RunStatus.VERIFIED if report.clean else RunStatus.REJECTED
    for attempt in range(MAX_APPEND_ATTEMPTS):
        result = session.execute(
            update(Run)
            .where(Run.id == run_id, Run.status == RunStatus.PENDING.value)
            .values(status=status.value, report=report.model_dump_json(), finished_at=utc_now())
        )
        changed = bool(getattr(result, "rowcount", 0))
        try:
            if changed and log and status is RunStatus.VERIFIED:
                run = session.get(Run, run_id)
                assert run is not None
                append_verified(session, run_id, run.record_digest)
            session.commit()
            return changed
        except IntegrityError:
            session.rollback()
            if attempt == MAX_APPEND_ATTEMPTS - 1:
                raise
    return False


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
    if run.report is None:
        return None
    try:
        return VerificationReport.model_validate_json(run.report)
    except ValueError:
        return None
