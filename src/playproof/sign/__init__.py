"""Signed records: Ed25519 keys, DSSE envelopes carrying in-toto statements, verification.

See docs/signing.md for the formats and the check ids.
"""

from __future__ import annotations

from playproof.sign._dsse import (
    MAX_ENVELOPE_BYTES,
    Envelope,
    EnvelopeSignature,
    pae,
    parse_envelope,
)
from playproof.sign._keys import MAX_KEY_FILE_BYTES, SigningKey, VerifyingKey
from playproof.sign._run import (
    RUN_PREDICATE_TYPE,
    RUN_RECORD,
    RUN_RECORD_SUBJECT,
    SignatureVerdict,
    record_digest,
    run_statement,
    run_subjects,
    sign_record,
    verify_envelope,
)
from playproof.sign._statement import (
    IN_TOTO_PAYLOAD_TYPE,
    STATEMENT_TYPE,
    PredicateKind,
    Statement,
    Subject,
    make_statement,
    sign_predicate,
    sign_statement,
    statement_payload,
)
from playproof.sign._upload import (
    MAX_RUN_UPLOAD_BYTES,
    RUN_UPLOAD_MEDIA_TYPE,
    RUN_UPLOAD_SCHEMA,
    RunUpload,
)
from playproof.sign._verify import SIGNATURE_CHECK_IDS, StatementVerdict, verify_statement

__all__ = [
    "IN_TOTO_PAYLOAD_TYPE",
    "MAX_ENVELOPE_BYTES",
    "MAX_KEY_FILE_BYTES",
    "MAX_RUN_UPLOAD_BYTES",
    "RUN_PREDICATE_TYPE",
    "RUN_RECORD",
    "RUN_RECORD_SUBJECT",
    "RUN_UPLOAD_MEDIA_TYPE",
    "RUN_UPLOAD_SCHEMA",
    "SIGNATURE_CHECK_IDS",
    "STATEMENT_TYPE",
    "Envelope",
    "EnvelopeSignature",
    "PredicateKind",
    "RunUpload",
    "SignatureVerdict",
    "SigningKey",
    "Statement",
    "StatementVerdict",
    "Subject",
    "VerifyingKey",
    "make_statement",
    "pae",
    "parse_envelope",
    "record_digest",
    "run_statement",
    "run_subjects",
    "sign_predicate",
    "sign_record",
    "sign_statement",
    "statement_payload",
    "verify_envelope",
    "verify_statement",
]
