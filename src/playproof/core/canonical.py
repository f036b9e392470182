"""Canonical JSON (RFC 8785) and SHA-256 digests: the only way playproof hashes data.

>>> canonical_json({"b": 1, "a": [True, None]})
b'{"a":[true,null],"b":1}'
>>> digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import rfc8785

from playproof.errors import FormatError

__all__ = ["canonical_json", "canonical_strings", "digest", "parse_json", "sha256_hex"]

# RFC 8785 strings are JSON.stringify strings: the same escapes Python's C encoder
# makes with ensure_ascii=False (quote, backslash, control characters as \b \f
# \n \r \t or lower-case \u00XX), and nothing else escaped.
_STRING_LIST = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def canonical_json(value: Any) -> bytes:
    """Serialize ``value`` in the RFC 8785 canonical form (sorted keys, no spaces, UTF-8).

    Raises :class:`~playproof.errors.FormatError` for values JSON cannot carry
    (NaN, infinities, integers beyond 2**53, non-string keys, other types).
    """
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise FormatError(f"value has no canonical JSON form: {exc}") from exc


def canonical_strings(values: Sequence[str]) -> bytes:
    """The RFC 8785 form of a list of strings, as :func:`canonical_json` gives it, faster.

    Input logs are hashed whole (millions of short strings); Python's C JSON
    encoder writes strings exactly as RFC 8785 does, so it is used whenever every
    value is a plain ``str`` that UTF-8 can carry. A property test holds the two equal.
    """
    items = list(values)
    if all(type(value) is str for value in items):
        try:
            return _STRING_LIST(items).encode("utf-8")
        except UnicodeEncodeError:
            pass  # lone surrogates: the canonicalizer raises the documented error
    return canonical_json(items)


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """SHA-256 hex of the canonical JSON form of ``value``."""
    return sha256_hex(canonical_json(value))


def _refuse_constant(name: str) -> Any:
    raise FormatError(f"JSON constant {name} is not allowed")


def parse_json(data: bytes | str, *, limit: int, what: str) -> Any:
    """Parse JSON text of at most ``limit`` bytes, refusing NaN/Infinity and duplicate keys.

    The caller has already read ``data`` with a bound; ``limit`` is checked
    again here so a parser is never handed more than the documented size.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > limit:
        raise FormatError(f"{what} is {len(raw)} bytes, over the {limit}-byte limit")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, val in items:
            if key in result:
                raise FormatError(f"{what} repeats the key {key!r}")
            result[key] = val
        return result

    try:
        return json.loads(raw, object_pairs_hook=pairs, parse_constant=_refuse_constant)
    except FormatError:
        raise
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{what} is not valid JSON: {exc}") from exc
