import json
import math
from collections import OrderedDict
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.core.canonical import canonical_json, canonical_object, digest, parse_json
from playproof.errors import FormatError

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    # Integral floats at or past 2**53 print as integers JSON cannot carry exactly.
    | st.floats(min_value=-1e15, max_value=1e15, allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_canonical_round_trip(value: Any) -> None:
    text = canonical_json(value)
    again = json.loads(text)
    assert canonical_json(again) == text


@given(st.dictionaries(st.text(max_size=6), st.integers(0, 100), max_size=6))
def test_digest_ignores_key_order(mapping: dict[str, int]) -> None:
    assert digest(dict(reversed(list(mapping.items())))) == digest(mapping)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**60, {1: 2}, object()])
def test_values_without_canonical_form_are_refused(value: Any) -> None:
    with pytest.raises(FormatError):
        canonical_json(value)


def test_parse_json_refuses_duplicates_constants_and_oversize() -> None:
    with pytest.raises(FormatError, match="repeats the key"):
        parse_json('{"a": 1, "a": 2}', limit=100, what="doc")
    with pytest.raises(FormatError, match="NaN"):
        parse_json('{"a": NaN}', limit=100, what="doc")
    with pytest.raises(FormatError, match="over the 10-byte limit"):
        parse_json('{"a": "0123456789"}', limit=10, what="doc")
    with pytest.raises(FormatError, match="not valid JSON"):
        parse_json('{"a": ', limit=100, what="doc")
    with pytest.raises(FormatError, match="not valid JSON"):
        parse_json(b"\xff\xfe", limit=100, what="doc")


@given(st.lists(st.text(max_size=12), max_size=12))
def test_canonical_strings_equals_the_general_canonicalizer(values: list[str]) -> None:
    from playproof.core.canonical import canonical_strings

    try:
        expected = canonical_json(values)
    except FormatError:  # lone surrogates have no canonical form: refused alike
        with pytest.raises(FormatError):
            canonical_strings(values)
        return
    assert canonical_strings(values) == expected


def test_canonical_strings_escapes_like_rfc8785() -> None:
    from playproof.core.canonical import canonical_strings

    tricky = ['a"\\\n\x01\x1f\x7f\u2028\u00e9\U0001f600', "", "\t\b\f\r"]
    assert canonical_strings(tricky) == canonical_json(tricky)
    with pytest.raises(FormatError):
        canonical_strings(["\ud800"])


# --- the C-encoder fast path against the reference canonicalizer ------------------

ROOT = Path(__file__).resolve().parents[2]

# Every code point, lone surrogates included; astral and high-BMP characters
# are where UTF-16 key order and code point order part ways.
any_char = st.characters(codec=None, exclude_categories=())
TRICKY = '\x00 \x1f \x7f " \\ \b \t \n \f \r \u2028 \ue000 \uffff \U00010000 \U0001f600 é a A _'
tricky_char = st.sampled_from([*TRICKY.split(" "), "\ud800", "\udfff"])
texts = st.text(any_char | tricky_char, max_size=12)
special_floats = st.sampled_from(
    [
        *(0.0, -0.0, 1.0, -1.0, 1e21, 1e-7, 1e-6, 1e-4, 9.999e-5, 1e15, 1e16, 2.0**53),
        *(2.0**53 - 1, 5e-324, 1.7976931348623157e308, 0.1, 1 / 3, 123456789.125, 1e20),
        *(1.5e300, -2.5e-8, float("nan"), float("inf"), float("-inf")),
    ]
)
numbers = (
    st.integers()
    | st.sampled_from([2**53, 2**53 - 1, -(2**53), -(2**53) + 1, 10**30, -(10**30)])
    | st.floats()
    | special_floats
)
any_json = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: (
        st.lists(children, max_size=5)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(texts, children, max_size=5)
    ),
    max_leaves=30,
)


def reference(value: Any) -> bytes | None:
    """What rfc8785 gives, or None where it refuses the value."""
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError, ValueError, RecursionError):
        return None


def assert_same_as_reference(value: Any) -> None:
    expected = reference(value)
    if expected is None:
        with pytest.raises(FormatError):
            canonical_json(value)
    else:
        assert canonical_json(value) == expected


@settings(max_examples=400)
@given(any_json)
def test_fast_path_gives_the_reference_bytes(value: Any) -> None:
    assert_same_as_reference(value)


@settings(max_examples=300)
@given(st.dictionaries(texts, st.integers(-3, 3), min_size=2, max_size=8))
def test_keys_sort_by_utf16_code_units(mapping: dict[str, int]) -> None:
    assert_same_as_reference(mapping)


@settings(max_examples=300)
@given(st.floats() | special_floats)
def test_floats_print_as_ecmascript_does(value: float) -> None:
    assert_same_as_reference(value)
    assert_same_as_reference({"x": [value]})


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, b"1"),
        (-0.0, b"0"),
        (1e21, b"1e+21"),
        (1e-7, b"1e-7"),
        (5e-324, b"5e-324"),
        (1e16, b"10000000000000000"),
        (0.0001, b"0.0001"),
        (2**53 - 1, b"9007199254740991"),
        ({"\U0001f600": 1, "\ue000": 2}, '{"\U0001f600":1,"\ue000":2}'.encode()),
        ("\x7f\x1f\u2028", '"\x7f\\u001f\u2028"'.encode()),
    ],
)
def test_known_canonical_forms(value: Any, text: bytes) -> None:
    assert canonical_json(value) == text == bytes(rfc8785.dumps(value))


class Color(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "value",
    [
        2**53,
        -(2**53),
        float("nan"),
        [float("-inf")],
        {"a": "\ud800"},
        {"\udfff": 1},
        {1: 2},
        {"a": {1.5: 2}},
        b"bytes",
        {"a": object()},
        {"a": {1, 2}},
    ],
)
def test_refusals_match_the_reference(value: Any) -> None:
    assert reference(value) is None
    with pytest.raises(FormatError):
        canonical_json(value)


@pytest.mark.parametrize(
    "value",
    [Color.RED, {"c": Color.RED}, Level.HIGH, [Level.HIGH], OrderedDict(b=1, a=2), (1, (2,))],
)
def test_subclasses_take_the_reference_path_with_the_same_bytes(value: Any) -> None:
    assert_same_as_reference(value)


def test_deep_nesting_is_a_format_error() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(FormatError, match="nested too deeply"):
        canonical_json(deep)
    shallow: Any = 1
    for _ in range(200):
        shallow = {"k": [shallow]}
    assert_same_as_reference(shallow)


def _fixtures() -> list[Path]:
    found = [
        path
        for folder in ("tests", "schemas", "src/playproof")
        for path in sorted((ROOT / folder).rglob("*.json"))
        if path.stat().st_size <= 4 * 1024 * 1024
    ]
    return found


def test_there_are_fixtures_to_compare() -> None:
    assert len(_fixtures()) >= 16  # the schemas alone are 16


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_json_file_in_the_repository_canonicalizes_like_the_reference(path: Path) -> None:
    value = json.loads(path.read_bytes())
    assert_same_as_reference(value)


@given(st.dictionaries(texts, any_json, max_size=5))
def test_canonical_object_splices_members_as_the_whole_object_serializes(
    mapping: dict[str, Any],
) -> None:
    try:
        members = {key: canonical_json(val) for key, val in mapping.items()}
        whole = canonical_json(mapping)
    except FormatError:
        return
    assert canonical_object(members) == whole


def test_nan_never_reaches_the_output() -> None:
    for bad in (math.nan, math.inf):
        with pytest.raises(FormatError):
            canonical_json({"a": [1, {"b": bad}]})


def test_plain_documents_never_touch_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(value: Any) -> bytes:
        raise AssertionError("the reference canonicalizer was called")

    monkeypatch.setattr(rfc8785, "dumps", refuse)
    document = {
        "decisions": [{"turn": 1, "input": "up\n", "cost_usd": 0.0, "latency_ms": 12.345}],
        "seed": 2**53 - 1,
        "name": "é\u2028\U0001f600",
        "ok": True,
        "none": None,
        "nested": {"x": [1.5, -0.0, 1e15, 0.0001]},
    }
    assert canonical_json(document).startswith(b'{"decisions":[{"cost_usd":0,')


def test_parse_json_reads_text_with_lone_surrogates_as_their_escapes() -> None:
    # Before, text that UTF-8 cannot carry escaped as UnicodeEncodeError; now it
    # reads as the escaped form does, and has no canonical form.
    value = parse_json('{"a": "\ud800"}', limit=100, what="doc")
    assert value == parse_json(b'{"a": "\\ud800"}', limit=100, what="doc")
    with pytest.raises(FormatError):
        canonical_json(value)


def test_parse_json_refuses_deep_nesting_with_a_format_error() -> None:
    with pytest.raises(FormatError, match="nested too deeply"):
        parse_json("[" * 100_000 + "]" * 100_000, limit=1 << 20, what="doc")


def test_paused_gc_resumes_the_collector_even_after_an_error() -> None:
    import gc

    from playproof.core.canonical import paused_gc

    def fail_while_paused() -> None:
        with paused_gc():
            assert not gc.isenabled()
            parse_json("{", limit=10, what="doc")

    assert gc.isenabled()
    with pytest.raises(FormatError):
        fail_while_paused()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # a collector paused by the caller stays paused
    finally:
        gc.enable()
