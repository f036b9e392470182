"""Signed run records: a run record as an in-toto statement inside a DSSE envelope.

The statement's subjects are the record itself (``run-record``: SHA-256 of the
canonical JSON of :meth:`RunRecord.to_json`) and the game build
(``build:<game_id>``: the pinned build digest); the predicate is the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from playproof.core.canonical import digest
from playproof.core.record import RunRecord
from playproof.core.report import CheckResult, Verdict, verdict_of
from playproof.sign._dsse import Envelope
from playproof.sign._keys import SigningKey, VerifyingKey
from playproof.sign._statement import PredicateKind, Statement, sign_predicate
from playproof.sign._verify import verify_statement

__all__ = [
    "RUN_PREDICATE_TYPE",
    "RUN_RECORD_SUBJECT",
    "RUN_RECORD",
    "SignatureVerdict",
    "record_digest",
    "run_statement",
    "run_subjects",
    "sign_record",
    "verify_envelope",
]

RUN_PREDICATE_TYPE = "https://playproof.dev/run/v1"
"""The predicate type URI of a signed run record."""

RUN_RECORD_SUBJECT = "run-record"
"""The subject name under which the record's own digest appears."""


def record_digest(record: RunRecord) -> str:
    """SHA-256 hex of the canonical JSON of the record's JSON form."""
    return digest(record.to_json())


def run_subjects(record: RunRecord) -> dict[str, str]:
    """The subjects a run statement carries: the record digest and the build digest."""
    return {
        RUN_RECORD_SUBJECT: record_digest(record),
        f"build:{record.target.game_id}": record.target.build_digest,
    }


def _read_record(predicate: dict[str, Any]) -> RunRecord:
    return RunRecord.model_validate(predicate)


RUN_RECORD: PredicateKind[RunRecord] = PredicateKind(
    predicate_type=RUN_PREDICATE_TYPE,
    write=RunRecord.to_json,
    read=_read_record,
    subjects=run_subjects,
)
"""The run-record predicate kind (for :func:`~playproof.sign.verify_statement` and friends)."""


def run_statement(record: RunRecord) -> Statement:
    """The in-toto statement for ``record``."""
    return RUN_RECORD.statement(record)


def sign_record(record: RunRecord, key: SigningKey | Sequence[SigningKey]) -> Envelope:
    """Sign ``record`` as a DSSE envelope whose payload is its in-toto statement."""
    return sign_predicate(RUN_RECORD, record, key)


class SignatureVerdict(BaseModel):
    """The outcome of checking a signed run record: four checks, the key, the record.

    ``record`` is set only when the signature verified and the statement and
    the record parsed; it is the record as signed, not yet replayed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    checks: list[CheckResult]
    key_id: str | None = None
    record: RunRecord | None = None

    @property
    def verdict(self) -> Verdict:
        """``clean`` iff every check passed."""
        return verdict_of(self.checks)

    @property
    def clean(self) -> bool:
        """True when every check passed."""
        return self.verdict == "clean"

    def reasons(self) -> list[str]:
        """``"<check id>: <reason>"`` for every failed check."""
        return [f"{c.id}: {c.reason}" for c in self.checks if not c.passed]


def verify_envelope(
    data: bytes | str | Any,
    trusted: VerifyingKey | Sequence[VerifyingKey] | None,
    expected_predicate_type: str = RUN_PREDICATE_TYPE,
) -> SignatureVerdict:
    """Check a signed run record against ``trusted`` keys; never raises on any input.

    Runs ``envelope-well-formed``, ``signature-valid``, ``statement-well-formed``
    and ``subjects-match``. Without trusted keys the signature check fails with
    "no trusted key given": DSSE carries no key, so the caller must name one.
    """
    result = verify_statement(RUN_RECORD, data, trusted, expected_predicate_type)
    return SignatureVerdict(checks=result.checks, key_id=result.key_id, record=result.value)
