"""Operations on grade records: ingest, re-verify on the server, read back (no HTTP here).

An upload's signature is checked at once against the owner's keys
(:func:`playproof.corpus.verify_grade`); the grade is stored ``pending`` and
verified again in the replay executor, this time against the manifest of the
shipped corpus the record names (when the service ships it), which adds the
``corpus-pinned`` check. The verdict is then what ``playproof corpus
verify-grade --manifest`` gives on the same record.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from playproof.core.canonical import canonical_json, parse_json
from playproof.core.report import CheckResult, VerificationReport
from playproof.errors import FormatError
from playproof.service.db import utc_now
from playproof.service.grades.documents import GradeDocument
from playproof.service.grades.models import Grade
from playproof.service.log.services import as_utc
from playproof.service.owners.services import owner_keys
from playproof.service.problems import Problem
from playproof.service.runs.models import RunStatus
from playproof.service.settings import MAX_GRADE_CASES
from playproof.service.verification import add_once, count_raise, parse_report
from playproof.sign import MAX_ENVELOPE_BYTES, VerifyingKey, parse_envelope

if TYPE_CHECKING:
    from playproof.corpus import GradeRecord

__all__ = [
    "MAX_GRADE_ATTEMPTS",
    "SUMMARY_COLUMNS",
    "command_sha256",
    "finish_grade",
    "get_grade",
    "grade_raised",
    "ingest_grade",
    "passing_bitmap",
    "record_document",
    "pending_grade_ids",
    "record_in_envelope",
    "reverify_grade",
    "stored_grade_record",
    "stored_grade_report",
    "summary_columns",
]

MAX_GRADE_ATTEMPTS = 3
"""How often a re-verification that raises is tried before the grade is ``failed``."""
_SIGNATURE_CHECKS = frozenset(
    {"envelope-well-formed", "signature-valid", "statement-well-formed", "subjects-match"}
)
_GRADE_ID = re.compile(r"[0-9a-f]{32}")


def ingest_grade(
    session: Session, owner_id: int, body: bytes, max_cases: int = MAX_GRADE_CASES
) -> tuple[Grade, bool]:
    """Check a signed grade record against the owner's keys and store it ``pending``.

    Refuses (422, naming the failing check) an envelope that is malformed,
    not signed by one of the owner's keys, or not a readable grade record,
    and (413, ``too-many-cases``) a record of more than ``max_cases`` cases.
    The same envelope again is the same grade (``False``: not new). Commits.
    """
    from playproof.corpus import verify_grade

    try:
        envelope = parse_envelope(body)
    except FormatError as exc:
        raise Problem(422, "envelope-well-formed", f"envelope-well-formed: {exc}") from exc
    normalized = envelope.to_bytes()
    digest = hashlib.sha256(normalized).hexdigest()
    report, record = verify_grade(normalized, owner_keys(session, owner_id))
    failed = next(
        (c for c in report.checks if not c.passed and c.id in _SIGNATURE_CHECKS), None
    ) or next((c for c in report.checks if not c.passed), None)
    if failed is not None or record is None or report.key_id is None:
        kind = failed.id if failed else "signature-valid"
        reason = failed.reason if failed else "the signature does not verify"
        raise Problem(422, kind, f"{kind}: {reason}")
    if len(record.results) > max_cases:
        raise Problem(
            413,
            "too-many-cases",
            f"the grade record holds {len(record.results)} cases; "
            f"this service takes at most {max_cases}",
        )
    existing = session.scalar(select(Grade).where(Grade.envelope_sha256 == digest))
    if existing is not None:
        return existing, False
    try:
        summary = summary_columns(record)
    except OverflowError:
        # A signed time at the calendar's edge in a zone of its own (year 1 east of
        # Greenwich, year 9999 west of it) has no UTC form to store or show.
        raise Problem(
            422,
            "unstorable-value",
            "the grade record's started_at or finished_at cannot be expressed in UTC",
        ) from None
    grade = Grade(
        id=uuid.uuid4().hex,
        owner_id=owner_id,
        envelope_sha256=digest,
        envelope=normalized,
        record_digest=_self_subject(envelope.payload_bytes()),
        key_id=report.key_id,
        corpus_id=record.corpus_id[:128],
        corpus_digest=record.corpus_digest,
        status=RunStatus.PENDING.value,
        attempts=0,
        **summary,
    )
    return add_once(
        session, grade, lambda: session.scalar(select(Grade).where(Grade.envelope_sha256 == digest))
    )


def _self_subject(payload: bytes) -> str:
    """The ``grade-record`` subject digest of a statement (checked by the signature checks)."""
    statement = parse_json(payload, limit=MAX_ENVELOPE_BYTES, what="statement")
    for subject in statement.get("subject", []) if isinstance(statement, dict) else []:
        if isinstance(subject, dict) and subject.get("name") == "grade-record":
            digest = subject.get("digest")
            if isinstance(digest, dict) and isinstance(digest.get("sha256"), str):
                return str(digest["sha256"])[:64]
    return ""


def stored_grade_record(grade: Grade) -> GradeRecord | None:
    """The grade record inside the stored envelope (None if it does not read)."""
    return record_in_envelope(grade.envelope)


def record_in_envelope(envelope: bytes) -> GradeRecord | None:
    """The grade record inside a DSSE envelope, signature unchecked (None if it does not read).

    Parses and validates the whole record: the pages never call it for a list
    or a history, which read the summary columns instead.
    """
    from playproof.corpus import GRADE_RECORD

    try:
        statement = parse_json(
            parse_envelope(envelope).payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="grade"
        )
        if not isinstance(statement, dict):
            return None
        return GRADE_RECORD.read(canonical_json(statement.get("predicate")))
    except (FormatError, ValueError):
        return None


SUMMARY_COLUMNS = (
    "passed",
    "denominator",
    "trust",
    "build_digest",
    "command_sha256",
    "case_ids",
    "case_ids_sha256",
    "passing",
    "record_document",
)
"""The columns of ``grades`` copied from the record, for the pages and the proof document."""


def command_sha256(command: Sequence[str]) -> str:
    """The lineage key of a candidate command line: SHA-256 of its canonical JSON."""
    return hashlib.sha256(canonical_json(list(command))).hexdigest()


def passing_bitmap(flags: Sequence[bool]) -> str:
    """``flags`` as a bitmap in hex: case ``i`` is bit ``7 - i % 8`` of byte ``i // 8``."""
    packed = bytearray((len(flags) + 7) // 8)
    for index, flag in enumerate(flags):
        if flag:
            packed[index // 8] |= 0x80 >> (index % 8)
    return packed.hex()


def summary_columns(record: GradeRecord | None) -> dict[str, Any]:
    """The summary columns of a grade whose envelope holds ``record`` (all None: unreadable).

    Case ids are JSON with every non-ASCII character escaped, so any id the
    record can hold is stored on both databases.
    """
    if record is None:
        return dict.fromkeys(SUMMARY_COLUMNS)
    case_ids = json.dumps([r.case_id for r in record.results], separators=(",", ":"))
    return {
        "passed": record.passed,
        "denominator": record.denominator,
        "trust": record.trust,
        "build_digest": record.candidate.build_digest,
        "command_sha256": command_sha256(record.candidate.command),
        "case_ids": case_ids,
        "case_ids_sha256": hashlib.sha256(case_ids.encode("ascii")).hexdigest(),
        "passing": passing_bitmap([r.passed for r in record.results]),
        "record_document": record_document(record).model_dump_json(),
    }


def record_document(record: GradeRecord) -> GradeDocument:
    """The public fields of ``record``: the proof document's ``record`` block."""
    return GradeDocument(
        corpus_id=record.corpus_id,
        corpus_version=record.corpus_version,
        corpus_digest=record.corpus_digest,
        candidate_build_digest=record.candidate.build_digest,
        isolation=str(record.isolation),
        sandbox=record.sandbox,
        passed=record.passed,
        denominator=record.denominator,
        trust=record.trust,
        controller_key=record.controller_key,
        reward=record.reward,
        started_at=as_utc(record.started_at),
        finished_at=as_utc(record.finished_at),
    )


def reverify_grade(envelope: bytes, key_pems: tuple[bytes, ...]) -> str:
    """Verify a signed grade record (in a pool process); the report as JSON text.

    The record's corpus pin is checked against the manifest of the shipped
    corpus of the same id, when there is one, and a record claiming a trusted
    corpus against that corpus's signature under the shipped controller key.
    A trusted claim about a corpus this server does not ship cannot be checked,
    so it fails ``corpus-pinned``: the server never repeats a record's own word
    that it is trusted.
    """
    from playproof.corpus import SHIPPED, load_manifest, shipped_paths, verify_grade
    from playproof.corpus._trust import (
        load_controller_keys,
        read_signature,
        signature_path,
        signed_claim,
    )

    keys = [VerifyingKey.from_pem(pem) for pem in key_pems]
    report, record = verify_grade(envelope, keys)
    if record is None:
        return report.model_dump_json()
    if record.corpus_id not in SHIPPED:
        if record.trust == "trusted":
            refused = CheckResult(
                id="corpus-pinned",
                passed=False,
                reason=f"the record claims a trusted corpus {record.corpus_id[:100]!r}, which "
                "this server does not ship, so it cannot check the controller's signature",
            )
            report = VerificationReport.from_checks([*report.checks, refused], key_id=report.key_id)
        return report.model_dump_json()
    manifest_path = shipped_paths(record.corpus_id)[0]
    signed = signed_claim(read_signature(signature_path(manifest_path)), load_controller_keys())
    report, _ = verify_grade(envelope, keys, load_manifest(manifest_path), signed)
    return report.model_dump_json()


def get_grade(session: Session, grade_id: str) -> Grade:
    """The grade with this id; a 404 problem when there is none."""
    found = session.get(Grade, grade_id) if _GRADE_ID.fullmatch(grade_id) else None
    if found is None:
        raise Problem(404, "unknown-grade", f"no grade with id {grade_id[:64]!r}")
    return found


def pending_grade_ids(session: Session) -> list[str]:
    """Grades whose re-verification has not finished, oldest first."""
    query = (
        select(Grade.id).where(Grade.status == RunStatus.PENDING.value).order_by(Grade.created_at)
    )
    return list(session.scalars(query))


def finish_grade(session: Session, grade_id: str, report: VerificationReport) -> bool:
    """Store the server's verdict on a pending grade; False if it was not pending. Commits."""
    status = RunStatus.VERIFIED if report.clean else RunStatus.REJECTED
    result = session.execute(
        update(Grade)
        .where(Grade.id == grade_id, Grade.status == RunStatus.PENDING.value)
        .values(status=status.value, report=report.model_dump_json(), finished_at=utc_now())
    )
    session.commit()
    return bool(getattr(result, "rowcount", 0))


def grade_raised(session: Session, grade_id: str, error: BaseException) -> bool:
    """Count a re-verification that raised; True when the grade is now ``failed``. Commits."""
    grade = session.get(Grade, grade_id)
    if grade is None or grade.status != RunStatus.PENDING.value:
        session.rollback()
        return True
    failed = count_raise(grade, error, MAX_GRADE_ATTEMPTS)
    session.commit()
    return failed


def stored_grade_report(grade: Grade) -> VerificationReport | None:
    """The stored verification report (None while pending or if unreadable)."""
    return parse_report(grade.report)
