"""Signed run records: a run record as an in-toto statement inside a DSSE envelope.

The statement's subjects are the record itself (``run-record``: SHA-256 of the
canonical JSON of :meth:`RunRecord.to_json`) and the game build
(``build:<game_id>``: the pinned build digest); the predicate is the record.

A verifier computes the record digest from the record exactly as received (its
canonical bytes), never from a re-serialized model, and reads the record
strictly: a value the published schema forbids (``"seed": "0"``, ``"turn":
1.0``) is refused rather than coerced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from json.encoder import encode_basestring
from typing import Any

from pydantic import BaseModel, ConfigDict

from playproof.core.canonical import (
    canonical_json,
    canonical_number,
    canonical_object,
    sha256_hex,
    validate_strict,
)
from playproof.core.chain import Decision
from playproof.core.record import RunRecord
from playproof.core.report import CheckResult, Verdict, verdict_of
from playproof.errors import FormatError
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
    return sha256_hex(record_bytes(record))


_DECISION_FIELDS = ("cost_usd", "input", "latency_ms", "turn")
"""A decision's fields in RFC 8785 order; the writer below knows no others."""
_MAX_PREFIXES = 4096
"""How many (input, cost) prefixes one record's writer remembers (a vocabulary is small)."""
_SAFE_INTEGER = 2**53


def record_bytes(record: RunRecord) -> bytes:
    """The RFC 8785 bytes of ``record.to_json()``, the decisions written directly.

    A record is mostly decisions; each is written from its four fields, its
    ``{"cost_usd":..,"input":..,"latency_ms":`` prefix remembered per (input,
    cost) pair, instead of being dumped to a dict and canonicalized. Any
    value this cannot vouch for (and any decision shape it does not know)
    takes the general path; a property test holds the two equal.
    """
    if tuple(sorted(Decision.model_fields)) == _DECISION_FIELDS:
        rows = ((d.input, d.cost_usd, d.latency_ms, d.turn) for d in record.decisions)
        try:
            decisions = _decisions_bytes(rows)
        except (FormatError, UnicodeEncodeError):
            pass
        else:
            rest = record.model_dump(mode="json", by_alias=True, exclude={"decisions"})
            members = {key: canonical_json(value) for key, value in rest.items()}
            return canonical_object({**members, "decisions": decisions})
    return canonical_json(record.to_json())


def predicate_bytes(predicate: Any) -> bytes:
    """The RFC 8785 bytes of a record as parsed from JSON, the decisions written directly.

    What a verifier hashes: the record exactly as received. Equal to
    ``canonical_json(predicate)`` (a property test holds them equal); a
    decision that is not a plain four-member object takes the general path.
    """
    decisions = predicate.get("decisions") if type(predicate) is dict else None
    if type(decisions) is list:
        try:
            text = _decisions_bytes(_json_rows(decisions))
        except (FormatError, KeyError, UnicodeEncodeError):
            pass
        else:
            members = {k: canonical_json(v) for k, v in predicate.items() if k != "decisions"}
            return canonical_object({**members, "decisions": text})
    return canonical_json(predicate)


def _json_rows(decisions: list[Any]) -> Iterator[tuple[Any, Any, Any, Any]]:
    for decision in decisions:
        if type(decision) is not dict or len(decision) != len(_DECISION_FIELDS):
            raise FormatError("not a plain decision")
        yield decision["input"], decision["cost_usd"], decision["latency_ms"], decision["turn"]


def _decisions_bytes(rows: Iterable[tuple[Any, Any, Any, Any]]) -> bytes:
    """``[{"cost_usd":..,"input":..,"latency_ms":..,"turn":..},...]``; FormatError when unsure."""
    prefixes: dict[tuple[str, float | int | None], str] = {}
    parts: list[str] = []
    append = parts.append
    for word, cost, latency, turn in rows:
        if type(word) is not str or type(turn) is not int or not 0 < turn < _SAFE_INTEGER:
            raise FormatError("not a plain decision")
        # Equal costs print alike only within the safe range (2**60 and 2.0**60 do not).
        plain = (
            cost is None
            or type(cost) is float
            or (type(cost) is int and -_SAFE_INTEGER < cost < _SAFE_INTEGER)
        )
        key = (word, cost) if plain else None
        prefix = prefixes.get(key) if key is not None else None
        if prefix is None:
            text = "null" if cost is None else canonical_number(cost)
            prefix = f'{{"cost_usd":{text},"input":{encode_basestring(word)},"latency_ms":'
            if key is not None and len(prefixes) < _MAX_PREFIXES:
                prefixes[key] = prefix
        append(f'{prefix}{canonical_number(latency)},"turn":{turn}}}')
    return ("[" + ",".join(parts) + "]").encode("utf-8")


def _build_pin(record: RunRecord) -> dict[str, str]:
    return {f"build:{record.target.game_id}": record.target.build_digest}


def _read_record(text: bytes) -> RunRecord:
    return validate_strict(RunRecord, text, what="run record")


RUN_RECORD: PredicateKind[RunRecord] = PredicateKind(
    predicate_type=RUN_PREDICATE_TYPE,
    write=RunRecord.to_json,
    read=_read_record,
    self_subject=RUN_RECORD_SUBJECT,
    pins=_build_pin,
    encode=record_bytes,
    encode_parsed=predicate_bytes,
)
"""The run-record predicate kind (for :func:`~playproof.sign.verify_statement` and friends)."""


def run_subjects(record: RunRecord) -> dict[str, str]:
    """The subjects a run statement carries: the record digest and the build digest."""
    return RUN_RECORD.subjects(record)


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
