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

import json
from collections.abc import Iterable, Iterator, Sequence
from json.encoder import encode_basestring
from typing import Any

from pydantic import BaseModel, ConfigDict

from playproof.core.canonical import (
    canonical_json,
    canonical_number,
    canonical_object,
    canonical_strings,
    sha256_hex,
    validate_strict,
)
from playproof.core.record import (
    RECORD_SCHEMA,
    RECORD_SCHEMA_V1,
    RunRecord,
    read_parsed_record,
)
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

    A record is mostly decisions. A v2 record's columns are written column by
    column (the inputs by the C encoder, each number by
    :func:`~playproof.core.canonical.canonical_number`); a v1 record's
    decisions from their four fields, the ``{"cost_usd":..,"input":..,
    "latency_ms":`` prefix remembered per (input, cost) pair. Any value this
    cannot vouch for takes the general path; property tests hold the two equal.
    """
    log = record.log
    rest = record.model_dump(mode="json", by_alias=True, exclude={"decisions"})
    members = {key: canonical_json(value) for key, value in rest.items()}
    try:
        if record.schema_ == RECORD_SCHEMA_V1:
            rows = zip(log.inputs, log.costs_usd, log.latencies_ms, log.turns, strict=True)
            parts = [_decisions_bytes(rows)]
        else:
            parts = _columns_parts(log.columns())
    except (FormatError, UnicodeEncodeError):
        parts = [canonical_json(record.decisions_json())]
    except ValueError as exc:  # turns that are not positions: no v2 form
        raise FormatError(f"the record has no {record.schema_} form: {exc}") from exc
    return _spliced(members, parts)


def _spliced(members: dict[str, bytes], decisions: list[bytes]) -> bytes:
    """The canonical object of ``members`` with ``decisions`` (in parts) as its decisions.

    Joined once: a long record's bytes are never copied whole on the way.
    """
    # NUL never appears raw in canonical JSON (strings escape it), so it marks the spot.
    marked = canonical_object({**members, "decisions": b"\x00"})
    prefix, _, suffix = marked.partition(b"\x00")
    return b"".join([prefix, *decisions, suffix])


def predicate_bytes(predicate: Any) -> bytes:
    """The RFC 8785 bytes of a record as parsed from JSON, the decisions written directly.

    What a verifier hashes: the record exactly as received. Equal to
    ``canonical_json(predicate)`` (a property test holds them equal); decisions
    that are neither plain four-member objects nor three plain columns take
    the general path.
    """
    decisions = predicate.get("decisions") if type(predicate) is dict else None
    try:
        if type(decisions) is list:
            parts = [_decisions_bytes(_json_rows(decisions))]
        elif type(decisions) is dict:
            parts = _columns_parts(decisions)
        else:
            return canonical_json(predicate)
    except (FormatError, KeyError, UnicodeEncodeError):
        return canonical_json(predicate)
    members = {k: canonical_json(v) for k, v in predicate.items() if k != "decisions"}
    return _spliced(members, parts)


_COLUMN_KEYS = ("costs_usd", "inputs", "latencies_ms")
"""A v2 record's decision columns in RFC 8785 order; the writer below knows no others."""


def _columns_parts(columns: dict[str, Any]) -> list[bytes]:
    """``{"costs_usd":[..],"inputs":[..],"latencies_ms":[..]}`` in parts; FormatError if unsure."""
    if len(columns) != len(_COLUMN_KEYS) or any(
        type(columns.get(key)) is not list for key in _COLUMN_KEYS
    ):
        raise FormatError("not three plain columns")
    costs, inputs, latencies = (columns[key] for key in _COLUMN_KEYS)
    return [
        b'{"costs_usd":',
        *_numbers_parts(costs, nullable=True),
        b',"inputs":',
        *_strings_parts(inputs),
        b',"latencies_ms":',
        *_numbers_parts(latencies, nullable=False),
        b"}",
    ]


def _strings_parts(words: list[Any]) -> list[bytes]:
    """A column of strings in RFC 8785 form, a chunk at a time (as canonical_strings writes it)."""
    if not words:
        return [b"[]"]
    parts = [b"["]
    for start in range(0, len(words), _CHUNK):
        if start:
            parts.append(b",")
        parts.append(canonical_strings(words[start : start + _CHUNK])[1:-1])
    parts.append(b"]")
    return parts


_CHUNK = 8192
"""Numbers written per chunk: a long column never exists as a million separate strings."""


def _numbers_parts(values: Sequence[Any], *, nullable: bool) -> list[bytes]:
    """A column of numbers (and nulls when ``nullable``) in RFC 8785 form, a chunk at a time.

    FormatError for a value that is not a number (or null where allowed) or
    has no canonical form.
    """
    if not values:
        return [b"[]"]
    seen: dict[Any, str] = {}
    plain = _PLAIN_NULLABLE if nullable else _PLAIN
    parts: list[bytes] = []
    for start in range(0, len(values), _CHUNK):
        chunk = values[start : start + _CHUNK]
        text = _repeated_chunk(chunk, plain) or _plain_chunk(chunk, plain)
        parts += (b"," if parts else b"[", text or _chunk(chunk, seen, nullable))
    parts.append(b"]")
    return parts


_FEW = 16
"""A chunk whose first _SAMPLE values hold at most this many distinct ones is written by table."""
_SAMPLE = 64
_MAX_TABLE = 256


def _repeated_chunk(chunk: Sequence[Any], plain: frozenset[type]) -> bytes | None:
    """A chunk of a few repeated values (costs: 0 or a fixed price), each formatted once.

    None when the chunk is not such, or holds both integers and floats (2**60
    and 2.0**60 are equal but print differently, so they cannot share a row).
    """
    kinds = set(map(type, chunk))
    if not kinds <= plain | {int} or {int, float} <= kinds:
        return None
    if len(set(chunk[:_SAMPLE])) > _FEW:
        return None
    distinct = set(chunk)
    if len(distinct) > _MAX_TABLE:
        return None
    table = {value: "null" if value is None else canonical_number(value) for value in distinct}
    return ",".join(map(table.__getitem__, chunk)).encode("ascii")


_PLAIN: frozenset[type] = frozenset({float})
_PLAIN_NULLABLE: frozenset[type] = frozenset({float, type(None)})
_FLOATS = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def _plain_chunk(chunk: Sequence[Any], plain: frozenset[type]) -> bytes | None:
    """The chunk written by the C encoder, or None when a value may print otherwise.

    repr() of a float is ECMAScript's shortest form except in exponent form,
    for negative zero, and for integral values, where it adds ``.0`` (``5.0``
    is ``5``). Text with an exponent or a sign is left to the careful path;
    ``.0`` before a separator can only end an integral value (repr writes no
    other trailing zero), so it is cut in place.
    """
    if not set(map(type, chunk)) <= plain:
        return None
    try:
        text = _FLOATS(list(chunk))
    except ValueError:  # NaN or an infinity: the careful path says so
        return None
    if "e" in text or "-" in text:
        return None
    text = text.replace(".0,", ",")
    end = -3 if text.endswith(".0]") else -1
    return text[1:end].encode("ascii")


def _chunk(chunk: Sequence[Any], seen: dict[Any, str], nullable: bool) -> bytes:
    """The chunk number by number (memo ``seen`` shared across chunks)."""
    parts: list[str] = []
    append = parts.append
    for value in chunk:
        kind = type(value)
        # Equal numbers print alike only as floats or safe integers (2**60 and 2.0**60 do not).
        key = (kind, value) if kind is float or kind is int else None
        text = seen.get(key) if key is not None else None
        if text is None:
            if value is None and nullable:
                text = "null"
            elif kind is bool or value is None:
                raise FormatError("not a number")
            else:
                text = canonical_number(value)
            if key is not None and len(seen) < _MAX_PREFIXES:
                seen[key] = text
        append(text)
    return ",".join(parts).encode("ascii")


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


def _read_columnar(predicate: Any) -> RunRecord | None:
    """A v2 record read from its parsed JSON (columns kept as parsed); None for any other."""
    decisions = predicate.get("decisions") if type(predicate) is dict else None
    if type(decisions) is not dict or predicate.get("schema") != RECORD_SCHEMA:
        return None  # v1 rows: reading the text is faster than the parsed objects
    return read_parsed_record(predicate)


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
    read_parsed=_read_columnar,
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
