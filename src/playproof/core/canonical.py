"""Canonical JSON (RFC 8785) and SHA-256 digests: the only way playproof hashes data.

>>> canonical_json({"b": 1, "a": [True, None]})
b'{"a":[true,null],"b":1}'
>>> digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
True
>>> canonical_object({"b": b"[1]", "a": canonical_json("x")})
b'{"a":"x","b":[1]}'
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import rfc8785
from pydantic import BaseModel, ValidationError

from playproof.errors import FormatError

__all__ = [
    "canonical_json",
    "canonical_number",
    "canonical_object",
    "canonical_strings",
    "digest",
    "parse_json",
    "parse_model",
    "paused_gc",
    "plain_json_problem",
    "sha256_hex",
    "validate_strict",
]

M = TypeVar("M", bound=BaseModel)

# RFC 8785 strings are JSON.stringify strings: the same escapes Python's C encoder
# makes with ensure_ascii=False (quote, backslash, control characters as \b \f
# \n \r \t or lower-case \u00XX), and nothing else escaped.
_STRING_LIST = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_STRING = json.JSONEncoder(ensure_ascii=False).encode

# The C encoder with sorted keys writes RFC 8785 text for every value _plain()
# lets through: strings as above, integers as digits, booleans and null as
# words, and the floats _plain() keeps print by repr() exactly as ECMAScript
# prints them. Keys sort by code point, which is UTF-16 order unless a key
# holds a character outside the Basic Multilingual Plane (checked on the text).
_ENCODE = json.JSONEncoder(
    ensure_ascii=False,
    separators=(",", ":"),
    sort_keys=True,
    allow_nan=False,
    check_circular=False,
).encode

_SAFE_INTEGER = 2**53
"""RFC 8785 (I-JSON) integers are those of magnitude below 2**53."""
_FIXED_LOW = 1e-4
_FIXED_HIGH = 1e16
"""repr() writes a float in [1e-4, 1e16) in plain decimals, the ECMAScript way."""
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")

_DEPTH_NOTE = "it is nested too deeply"


class _Unsure(Exception):
    """The fast path cannot vouch for this value; the reference canonicalizer decides."""


def _plain(value: Any) -> Any:
    """``value`` with every float the C encoder would misprint replaced, or raise _Unsure.

    Integral floats below 2**53 become ints (ECMAScript prints 1.0 as ``1``,
    -0.0 as ``0``); other floats stay only if repr() already prints them the
    ECMAScript way. Anything else unusual (subclasses, other types, integers
    outside the I-JSON range, floats in exponent form) raises _Unsure.
    """
    kind = type(value)
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Unsure
            item_kind = type(item)
            if item_kind is str or item is None or item_kind is bool:
                out[key] = item
            elif item_kind is float:
                if item.is_integer():
                    if not -_SAFE_INTEGER < item < _SAFE_INTEGER:
                        raise _Unsure
                    out[key] = int(item)
                elif _FIXED_LOW <= abs(item) < _FIXED_HIGH:
                    out[key] = item
                else:
                    raise _Unsure
            elif item_kind is int:
                if not -_SAFE_INTEGER < item < _SAFE_INTEGER:
                    raise _Unsure
                out[key] = item
            else:
                out[key] = _plain(item)
        return out
    if kind is list or kind is tuple:
        return [_plain(item) for item in value]
    if kind is str or value is None or kind is bool:
        return value
    if kind is float:
        if value.is_integer():
            if -_SAFE_INTEGER < value < _SAFE_INTEGER:
                return int(value)
        elif _FIXED_LOW <= abs(value) < _FIXED_HIGH:
            return value
        raise _Unsure
    if kind is int and -_SAFE_INTEGER < value < _SAFE_INTEGER:
        return value
    raise _Unsure


def _astral_key(value: Any) -> bool:
    """True when some object key in ``value`` holds a character beyond U+FFFF."""
    if type(value) is dict:
        return any(
            _ASTRAL.search(key) is not None or _astral_key(item) for key, item in value.items()
        )
    if type(value) is list or type(value) is tuple:
        return any(_astral_key(item) for item in value)
    return False


def _fast(value: Any) -> bytes | None:
    """The RFC 8785 bytes by the C encoder, or None when only the reference can say."""
    try:
        text = _ENCODE(_plain(value))
    except (_Unsure, RecursionError):
        return None
    if not text.isascii() and _ASTRAL.search(text) is not None and _astral_key(value):
        return None  # keys may sort differently by UTF-16 code units
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None  # lone surrogates: the reference raises the documented error


def canonical_json(value: Any) -> bytes:
    """Serialize ``value`` in the RFC 8785 canonical form (sorted keys, no spaces, UTF-8).

    Raises :class:`~playproof.errors.FormatError` for values JSON cannot carry
    (NaN, infinities, integers beyond 2**53, non-string keys, other types,
    nesting deeper than Python's recursion limit).

    Plain JSON data (dicts, lists, tuples, strings, ints, bools, None and
    floats that print alike in Python and ECMAScript) goes through Python's C
    JSON encoder; anything else through the reference canonicalizer, which
    gives the same bytes. Property tests hold the two equal.
    """
    fast = _fast(value)
    if fast is not None:
        return fast
    try:
        return bytes(rfc8785.dumps(value))
    except RecursionError as exc:
        raise FormatError(f"value has no canonical JSON form: {_DEPTH_NOTE}") from exc
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise FormatError(f"value has no canonical JSON form: {exc}") from exc


def canonical_number(value: float) -> str:
    """The RFC 8785 text of one number (ECMAScript's shortest form), as canonical_json writes it.

    >>> canonical_number(1.0), canonical_number(-0.0), canonical_number(1e21), canonical_number(2.5)
    ('1', '0', '1e+21', '2.5')

    Raises :class:`~playproof.errors.FormatError` for NaN, infinities and
    integers beyond 2**53.
    """
    kind = type(value)
    if kind is float:
        if value.is_integer():
            if -_SAFE_INTEGER < value < _SAFE_INTEGER:
                return str(int(value))
        elif _FIXED_LOW <= abs(value) < _FIXED_HIGH:
            return repr(value)
    elif kind is int and -_SAFE_INTEGER < value < _SAFE_INTEGER:
        return str(value)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise FormatError(f"{type(value).__name__} is not a number")
    return canonical_json(value).decode("ascii")


def canonical_object(members: Mapping[str, bytes]) -> bytes:
    """The RFC 8785 form of an object whose members' canonical forms are already known.

    An object's canonical form is its members in UTF-16 key order, each
    ``"key":value``; so a large member serialized once (a run record inside a
    statement) is spliced in rather than serialized again. Each value must be
    canonical JSON bytes (e.g. from :func:`canonical_json`).
    """
    keys = sorted(members, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
    parts = [b"%s:%s" % (canonical_json(key), members[key]) for key in keys]
    return b"{" + b",".join(parts) + b"}"


def canonical_strings(values: Sequence[str]) -> bytes:
    """The RFC 8785 form of a list of strings, as :func:`canonical_json` gives it, faster.

    Input logs are hashed whole (millions of short strings); Python's C JSON
    encoder writes strings exactly as RFC 8785 does, so it is used whenever every
    value is a plain ``str`` that UTF-8 can carry. A property test holds the two equal.
    """
    items = list(values)
    if set(map(type, items)) <= {str}:
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


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cycle collector while a parsed document is built, then resume it.

    A long record parses into millions of containers, none in a cycle;
    without the pause the collector walks them again and again as they are
    allocated (at 100,000 decisions that doubles the cost of a strict read).
    Reference counting still frees everything; the collector resumes after.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _refuse_constant(name: str) -> Any:
    raise FormatError(f"JSON constant {name} is not allowed")


def parse_json(data: bytes | str, *, limit: int, what: str) -> Any:
    """Parse JSON text of at most ``limit`` bytes, refusing NaN/Infinity and duplicate keys.

    The caller has already read ``data`` with a bound; ``limit`` is checked
    again here so a parser is never handed more than the documented size.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > limit:
        raise FormatError(f"{what} is {len(raw)} bytes, over the {limit}-byte limit")

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, val in items:
            if key in result:
                raise FormatError(f"{what} repeats the key {key[:80]!r}")
            result[key] = val
        return result

    try:
        with paused_gc():
            return json.loads(raw, object_pairs_hook=pairs, parse_constant=_refuse_constant)
    except FormatError:
        raise
    except RecursionError as exc:
        raise FormatError(f"{what} is not valid JSON: {_DEPTH_NOTE}") from exc
    except ValueError as exc:
        raise FormatError(f"{what} is not valid JSON: {exc}") from exc


def _errors(exc: ValidationError, limit: int = 3) -> str:
    """The first few problems of a validation error, one line."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "value"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def validate_strict(model: type[M], text: bytes | str, *, what: str) -> M:
    """Validate JSON ``text`` (already checked by :func:`parse_json`) as ``model``, strictly.

    Strict means what the published schema says: no string for a number, no
    float for an integer, no ``"yes"`` for a boolean. Raises
    :class:`~playproof.errors.FormatError` with the first problems.
    """
    try:
        with paused_gc():
            return model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise FormatError(f"{what} is not valid: {_errors(exc)}") from exc
    except RecursionError as exc:
        raise FormatError(f"{what} is not valid: {_DEPTH_NOTE}") from exc


def parse_model(model: type[M], data: Any, *, limit: int, what: str) -> M:
    """Read ``model`` strictly from JSON text, or from a value already parsed from JSON.

    Text is bounded by ``limit`` and must be plain JSON (no duplicate keys,
    no NaN or Infinity); a parsed value is written back as JSON text first, so
    both are judged the same strict way (see :func:`validate_strict`), and is
    refused when its compact JSON (UTF-8) is over ``limit``: no text of it
    would be read, so neither is the value. Raises
    :class:`~playproof.errors.FormatError` and nothing else for any input.
    """
    if isinstance(data, bytes | bytearray | memoryview | str):
        text: bytes | str = bytes(data) if not isinstance(data, str) else data
        parse_json(text, limit=limit, what=what)
    else:
        try:
            text = json.dumps(data, allow_nan=False, separators=(",", ":"))
        except RecursionError as exc:
            raise FormatError(f"{what} is not valid: {_DEPTH_NOTE}") from exc
        except (TypeError, ValueError) as exc:
            raise FormatError(f"{what} is not JSON data: {exc}") from exc
        # The text escapes every non-ASCII character, so it is never shorter than
        # the value's UTF-8 form; only a long one is measured again, exactly.
        if len(text) > limit:
            size = len(_STRING_LIST(data).encode("utf-8", "surrogatepass"))
            if size > limit:
                raise FormatError(f"{what} is {size} bytes as JSON, over the {limit}-byte limit")
    return validate_strict(model, text, what=what)


def plain_json_problem(value: object, limit: int) -> str | None:
    """Why ``value`` is not plain JSON of at most ``limit`` bytes (UTF-8, compact), or None.

    Plain JSON: objects with string keys, arrays, strings, booleans, null,
    integers and finite numbers, nested no deeper than the interpreter allows.
    For free-form blocks of a record, which would otherwise take an infinite
    number (``1e400`` parses as one) or any amount of padding.
    """
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except ValueError:
        return "it holds a number that is not finite"
    except (TypeError, RecursionError) as exc:
        return f"it is not plain JSON ({type(exc).__name__})"
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > limit:
        return f"it takes {size} bytes, over the {limit}-byte limit"
    return None
