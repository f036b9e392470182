"""The record digest a log leaf holds, taken from a signed or a bare run record.

The leaf of a run is the SHA-256 of the record's canonical JSON as received
(what the signed statement's ``run-record`` subject names). From a DSSE
envelope the record is the statement's predicate, and the subject must
agree with it. The signature is not checked here: ``playproof verify`` does
that; the log only answers whether this record is in it.
"""

from __future__ import annotations

from typing import Any

from playproof.core.canonical import digest, parse_json
from playproof.core.record import parse_run_record
from playproof.errors import FormatError
from playproof.sign import MAX_ENVELOPE_BYTES, RUN_RECORD_SUBJECT, parse_envelope

__all__ = ["record_document_digest"]


def record_document_digest(data: bytes) -> str:
    """The record digest of a signed run record (DSSE envelope) or a bare run record.

    Raises :class:`~playproof.errors.FormatError` when ``data`` holds neither,
    or when an envelope's ``run-record`` subject disagrees with its record.
    """
    parsed = parse_json(data, limit=MAX_ENVELOPE_BYTES, what="record file")
    if isinstance(parsed, dict) and "payloadType" in parsed:
        envelope = parse_envelope(parsed)
        statement = parse_json(envelope.payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="payload")
        if not isinstance(statement, dict) or "predicate" not in statement:
            raise FormatError("the envelope's payload is not an in-toto statement with a record")
        record = statement["predicate"]
        found = digest(_checked(record))
        claimed = _subject_digest(statement.get("subject"))
        if claimed is not None and claimed != found:
            raise FormatError(
                f"the statement's {RUN_RECORD_SUBJECT} subject does not match its record; "
                "the envelope was altered"
            )
        return found
    return digest(_checked(parsed))


def _checked(record: Any) -> Any:
    """``record`` unchanged, once it reads strictly as a run record."""
    try:
        parse_run_record(record)
    except FormatError as exc:
        raise FormatError(f"not a playproof run record: {exc}") from exc
    return record


def _subject_digest(subjects: Any) -> str | None:
    if not isinstance(subjects, list):
        return None
    for subject in subjects:
        if isinstance(subject, dict) and subject.get("name") == RUN_RECORD_SUBJECT:
            found = subject.get("digest")
            if isinstance(found, dict) and isinstance(found.get("sha256"), str):
                return str(found["sha256"])
    return None
