"""Checking a signed statement: four named checks, reasons as data, never an exception.

The order follows the DSSE protocol: the envelope must be well formed, a
trusted signature must verify over the PAE, and only then is the payload
parsed as a statement and its subjects compared with what the predicate says.
A check that cannot run because an earlier one failed is reported as failed
with the reason, so every verdict carries all four checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from playproof.core.canonical import parse_json
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
    """The checks run on a signed statement, the key that verified, and what was read."""

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


def _read_statement(
    kind: PredicateKind[P], envelope: Envelope, expected_predicate_type: str
) -> tuple[Statement, P]:
    """Parse and validate the payload; FormatError says what is wrong."""
    if envelope.payloadType != IN_TOTO_PAYLOAD_TYPE:
        raise FormatError(
            f"payloadType is {envelope.payloadType[:80]!r}, expected {IN_TOTO_PAYLOAD_TYPE!r}"
        )
    value = parse_json(envelope.payload_bytes(), limit=MAX_ENVELOPE_BYTES, what="payload")
    if not isinstance(value, dict):
        raise FormatError(f"the statement is a JSON object, not {type(value).__name__}")
    try:
        statement = Statement.model_validate(value)
    except ValidationError as exc:
        raise FormatError(f"not an in-toto Statement v1: {_describe(exc)}") from exc
    if statement.predicateType != expected_predicate_type:
        raise FormatError(
            f"predicateType is {statement.predicateType[:120]!r}, "
            f"expected {expected_predicate_type!r}"
        )
    try:
        predicate = kind.read(statement.predicate)
    except (ValueError, FormatError) as exc:
        raise FormatError(f"the predicate is not valid: {_describe(exc)}") from exc
    return statement, predicate


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
        envelope.payload_bytes()
    except FormatError as exc:
        checks.add("envelope-well-formed", False, str(exc))
        return StatementVerdict(checks=checks.finish("envelope-well-formed"))
    checks.add(
        "envelope-well-formed",
        True,
        f"DSSE envelope with {len(envelope.signatures)} signature(s)",
    )

    keys = [trusted] if isinstance(trusted, VerifyingKey) else list(trusted or ())
    key_id, reason = signing_key_id(envelope, keys)
    if not checks.add("signature-valid", key_id is not None, reason):
        return StatementVerdict(checks=checks.finish("signature-valid"), envelope=envelope)

    try:
        statement, value = _read_statement(kind, envelope, expected_predicate_type)
    except FormatError as exc:
        checks.add("statement-well-formed", False, str(exc))
        return StatementVerdict(
            checks=checks.finish("statement-well-formed"), key_id=key_id, envelope=envelope
        )
    checks.add("statement-well-formed", True, f"in-toto Statement v1 of {statement.predicateType}")

    try:
        passed, reason = _subjects_reason(statement, kind.subjects(value))
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
