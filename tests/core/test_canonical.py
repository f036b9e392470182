import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from playproof.core.canonical import canonical_json, digest, parse_json
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
