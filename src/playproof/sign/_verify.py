"""Checking a signed statement: four named checks, reasons as data, never an exception.

The order follows the DSSE protocol: the envelope must be well formed, a
trusted signature must verify over the PAE, and only then is the payload
parsed as a statement and its subjects compared with what the predicate says.
A check that cannot run because an earlier one failed is reported as failed
with the reason, so every verdict carries all four checks.

The predicate's digest is taken over the canonical bytes of the predicate as
received, serialized once; when the payload is itself canonical (as playproof
writes it) those bytes are exactly the predicate's bytes in the payload, which
also proves the payload repeats no key. The predicate is read strictly, so a
value the schema forbids is refused, never coerced into one that matches.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError
from pydantic_core import from_json

from playproof.core.canonical import (
    canonical_json,
    canonical_object,
    parse_json,
    parse_model,
    paused_gc,
    sha256_hex,
)
from playproof.core.report import CheckId, CheckResult, Verdict, verdict_of
from playproof.errors import FormatError
from playproof.sign._dsse import MAX_ENVELOPE_BYTES, Envelope, parse_envelope, signing_key_id
from playproof.sign._keys import VerifyingKey
from playproof.sign._statement import IN_TOTO_PAYLOAD_TYPE, PredicateKind, Statement

__all__ = ["SIGNATURE_CHECK_IDS", "StatementVerdict", "verify_statement"]

SIGNATURE_CHECK_IDS: tuple[CheckId, ...] = (
    "envelope-well-formed",
    "signature-valid",
    "statement-well-formed",
    "subjects-match",
)
"""The checks :func:`verify_statement` runs, in order."""

P = TypeVar("P")


@dataclass(frozen=True)
class StatementVerdict(Generic[P]):
    """The checks run on a signed statement, the key that verified, and what was read.

    ``statement`` carries the statement's own fields with an empty predicate:
    the predicate is ``value``, read strictly. The parsed JSON of a long
    predicate is dropped as soon as its digest is known, so a million-decision
    record is never held twice.
    """

    checks: list[CheckResult]
    key_id: str | None = None
    statement: Statement | None = None
    value: P | None = None
    """The predicate read as its Python type, once the signature and statement check out."""
    envelope: Envelope | None = field(default=None, repr=False)

    @property
    def verdict(self) -> Verdict:
        """``clean`` iff every check passed."""
        return verdict_of(self.checks)


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)[:3]
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in errors]
        more = exc.error_count() - len(errors)
        return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
    return str(exc)


class _Checks:
    """Collects results in vocabulary order and fills in the ones that could not run."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []

    def add(self, check_id: CheckId, passed: bool, reason: str) -> bool:
        self.results.append(CheckResult(id=check_id, passed=passed, reason=reason))
        return passed

    def finish(self, blocker: CheckId | None = None) -> list[CheckResult]:
        done = {c.id for c in self.results}
        for check_id in SIGNATURE_CHECK_IDS:
            if check_id not in done:
                reason = f"not checked: {blocker} failed" if blocker else "not checked"
                self.results.append(CheckResult(id=check_id, passed=False, reason=reason))
        return self.results


def _load_payload(payload: bytes) -> dict[str, Any]:
    """The payload as JSON, refusing NaN and Infinity.

    pydantic-core's parser is used for speed; it keeps the last of repeated
    keys, which :func:`_read_statement` detects (a canonical payload has
    none, any other is parsed again by :func:`parse_json`).
    """
    if len(payload) > MAX_ENVELOPE_BYTES:
        raise FormatError(f"payload is over the {MAX_ENVELOPE_BYTES}-byte limit")
    try:
        document = from_json(payload, allow_inf_nan=False)
    except RecursionError as exc:
        raise FormatError("payload is not valid JSON: it is nested too deeply") from exc
    except ValueError as exc:
        raise FormatError(f"payload is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise FormatError(f"the statement is a JSON object, not {type(document).__name__}")
    return document


def _read_statement(
    kind: PredicateKind[P], envelope: Envelope, payload: bytes, expected_predicate_type: str
) -> tuple[Statement, P, str]:
    """Parse and validate the payload; FormatError says what is wrong.

    Returns the statement (its predicate left empty), the predicate read as
    ``kind``'s value, and the SHA-256 hex of the predicate's canonical bytes.
    Those bytes and the parsed payload are released before the predicate is
    read, so they never coexist with the value in memory.
    """
    if envelope.payloadType != IN_TOTO_PAYLOAD_TYPE:
        raise FormatError(
            f"payloadType is {envelope.payloadType[:80]!r}, expected {IN_TOTO_PAYLOAD_TYPE!r}"
        )
    document = _load_payload(payload)
    predicate = document.get("predicate")
    # The statement's own fields are checked strictly; the predicate, the bulk,
    # is checked by the kind's reader below.
    probe = {**document, "predicate": {}} if isinstance(predicate, dict) else document
    try:
        statement = parse_model(Statement, probe, limit=MAX_ENVELOPE_BYTES, what="statement")
    except FormatError as exc:
        raise FormatError(f"not an in-toto Statement v1: {exc}") from exc
    if statement.predicateType != expected_predicate_type:
        raise FormatError(
            f"predicateType is {statement.predicateType[:120]!r}, "
            f"expected {expected_predicate_type!r}"
        )
    try:
        body = kind.canonical_parsed(predicate)
    except FormatError as exc:
        raise FormatError(f"the predicate is not valid: {exc}") from exc
    span = _canonical_span(payload, document, body)
    text: bytes | None = None
    if span is not None:
        # The payload is canonical: ``body`` is the predicate's bytes as received,
        # and the parsed predicate is faithful to them (no repeated key, no 1.0).
        parsed_reader = kind.read_parsed
    else:
        # Written by other tooling: parse again with the reference parser,
        # refusing repeated keys, and read the predicate from a faithful (not
        # canonical: 1.0 stays 1.0) rewrite.
        predicate = parse_json(payload, limit=MAX_ENVELOPE_BYTES, what="payload")["predicate"]
        try:
            body = kind.canonical_parsed(predicate)
            text = json.dumps(predicate, allow_nan=False).encode("ascii")
        except (FormatError, ValueError, RecursionError) as exc:
            raise FormatError(f"the predicate is not valid: {exc}") from exc
        parsed_reader = None
    # Only the digest of the canonical bytes is kept; a kind that reads the parsed
    # predicate keeps what it needs of it (a v2 record its columns), and the rest
    # of the parsed payload is released before the text, if needed, is read.
    digest = sha256_hex(body)
    del body
    try:
        value = parsed_reader(predicate) if parsed_reader is not None else None
        del document, predicate, probe
        if value is None:
            # Canonical: the predicate's own bytes in the payload; else the faithful rewrite.
            value = kind.read(payload[span[0] : span[1]] if span is not None else text or b"")
    except (ValueError, FormatError) as exc:
        raise FormatError(f"the predicate is not valid: {_describe(exc)}") from exc
    return statement, value, digest


def _canonical_span(
    payload: bytes, document: dict[str, Any], body: bytes
) -> tuple[int, int] | None:
    """Where ``body`` sits in ``payload`` when the payload is the canonical form of ``document``
    with ``body`` as its predicate; None when it is not.

    Compared in place: the statement's other members are serialized (they are
    small) around a marker, and the long predicate is compared as a slice.
    """
    members = {key: canonical_json(val) for key, val in document.items() if key != "predicate"}
    # NUL never appears raw in canonical JSON (strings escape it), so it marks the spot.
    prefix, _, suffix = canonical_object({**members, "predicate": b"\x00"}).partition(b"\x00")
    end = len(payload) - len(suffix)
    canonical = (
        end - len(prefix) == len(body)
        and payload.startswith(prefix)
        and payload.endswith(suffix)
        and memoryview(payload)[len(prefix) : end] == body
    )
    return (len(prefix), end) if canonical else None


def _subjects_reason(statement: Statement, expected: dict[str, str]) -> tuple[bool, str]:
    actual: dict[str, str] = {}
    for subject in statement.subject:
        if subject.name in actual:
            return False, f"subject {subject.name[:80]!r} appears twice"
        actual[subject.name] = subject.sha256
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing or extra:
        return (
            False,
            f"subjects differ: missing {missing[:4]}, unexpected {[e[:80] for e in extra[:4]]}",
        )
    for name, sha in expected.items():
        if actual[name] != sha:
            return (
                False,
                f"subject {name!r} has sha256 {actual[name][:16]}..., recomputed {sha[:16]}...",
            )
    return True, f"{len(expected)} subjects match the recomputed digests"


def _verify(
    kind: PredicateKind[P],
    data: Any,
    trusted: VerifyingKey | Sequence[VerifyingKey] | None,
    expected_predicate_type: str,
) -> StatementVerdict[P]:
    checks = _Checks()
    try:
        envelope = parse_envelope(data)
        payload = envelope.payload_bytes()
    except FormatError as exc:
        checks.add("envelope-well-formed", False, str(exc))
        return StatementVerdict(checks=checks.finish("envelope-well-formed"))
    checks.add(
        "envelope-well-formed",
        True,
        f"DSSE envelope with {len(envelope.signatures)} signature(s)",
    )

    keys = [trusted] if isinstance(trusted, VerifyingKey) else list(trusted or ())
    key_id, reason = signing_key_id(envelope, keys, payload)
    if not checks.add("signature-valid", key_id is not None, reason):
        return StatementVerdict(checks=checks.finish("signature-valid"), envelope=envelope)

    try:
        with paused_gc():
            statement, value, digest = _read_statement(
                kind, envelope, payload, expected_predicate_type
            )
    except FormatError as exc:
        checks.add("statement-well-formed", False, str(exc))
        return StatementVerdict(
            checks=checks.finish("statement-well-formed"), key_id=key_id, envelope=envelope
        )
    checks.add("statement-well-formed", True, f"in-toto Statement v1 of {statement.predicateType}")

    try:
        passed, reason = _subjects_reason(statement, kind.subjects_with(value, digest))
    except (ValueError, FormatError) as exc:
        passed, reason = False, f"cannot recompute the subjects: {exc}"
    checks.add("subjects-match", passed, reason)
    return StatementVerdict(
        checks=checks.finish(),
        key_id=key_id,
        statement=statement,
        value=value,
        envelope=envelope,
    )


def verify_statement(
    kind: PredicateKind[P],
    data: Any,
    trusted: VerifyingKey | Sequence[VerifyingKey] | None,
    expected_predicate_type: str | None = None,
) -> StatementVerdict[P]:
    """Check a signed statement of ``kind``; never raises, whatever ``data`` is.

    ``data`` is envelope JSON (bytes or str, at most
    :data:`~playproof.sign.MAX_ENVELOPE_BYTES`), a parsed JSON object, or an
    :class:`Envelope`. The signature check passes only for a trusted key.
    """
    expected = expected_predicate_type or kind.predicate_type
    try:
        return _verify(kind, data, trusted, expected)
    except Exception as exc:  # a verifier reports; it must not raise on hostile input
        checks = _Checks()
        checks.add(
            "envelope-well-formed",
            False,
            f"the verifier could not process this input ({type(exc).__name__}: {str(exc)[:200]})",
        )
        return StatementVerdict(checks=checks.finish("envelope-well-formed"))
