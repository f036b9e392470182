"""in-toto statements and predicate kinds: the machinery grade records will reuse."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from playproof.sign import (
    STATEMENT_TYPE,
    PredicateKind,
    SigningKey,
    Statement,
    Subject,
    make_statement,
    sign_predicate,
    verify_statement,
)


class Grade(BaseModel):
    """A stand-in for a later predicate: a candidate graded against a corpus."""

    candidate: str
    passed: int
    total: int


GRADE = PredicateKind[Grade](
    predicate_type="https://example.com/grade/v1",
    write=lambda g: g.model_dump(mode="json"),
    read=lambda text: Grade.model_validate_json(text, strict=True),
    self_subject="grade",
    pins=lambda g: {},
)


def test_a_second_predicate_kind_signs_and_verifies(key: SigningKey) -> None:
    grade = Grade(candidate="emu-1", passed=41, total=50)
    envelope = sign_predicate(GRADE, grade, key)
    result = verify_statement(GRADE, envelope.to_bytes(), [key.verifying_key])
    assert result.verdict == "clean"
    assert result.value == grade
    assert result.statement is not None
    assert result.statement.predicateType == "https://example.com/grade/v1"


def test_a_statement_of_one_kind_is_not_accepted_as_another(key: SigningKey) -> None:
    from playproof.sign import RUN_RECORD

    envelope = sign_predicate(GRADE, Grade(candidate="c", passed=1, total=2), key)
    result = verify_statement(RUN_RECORD, envelope.to_bytes(), [key.verifying_key])
    failed = {c.id: c.reason for c in result.checks if not c.passed}
    assert "predicateType" in failed["statement-well-formed"]
    assert result.value is None


def test_make_statement_writes_the_spec_shape() -> None:
    statement = make_statement({"a": "0" * 64, "b": "1" * 64}, "https://x/y", {"k": [1]})
    doc = statement.to_json()
    assert doc == {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": "a", "digest": {"sha256": "0" * 64}},
            {"name": "b", "digest": {"sha256": "1" * 64}},
        ],
        "predicateType": "https://x/y",
        "predicate": {"k": [1]},
    }
    assert Statement.model_validate(doc) == statement


@pytest.mark.parametrize(
    "digest_value",
    [{}, {"sha512": "0" * 128}, {"sha256": "0" * 63}, {"sha256": "A" * 64}, {"sha256": 5}],
)
def test_subject_needs_a_sha256_hex_digest(digest_value: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Subject(name="x", digest=digest_value)


def test_subject_may_carry_other_digests_too() -> None:
    subject = Subject(name="x", digest={"sha256": "e" * 64, "sha512": "f" * 128})
    assert subject.sha256 == "e" * 64


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=30),
        st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
        min_size=1,
        max_size=5,
    ),
    st.dictionaries(st.text(max_size=10), st.integers(-(2**53) + 1, 2**53 - 1), max_size=5),
)
def test_statement_round_trips_through_its_payload(
    subjects: dict[str, str], predicate: dict[str, Any]
) -> None:
    statement = make_statement(subjects, "https://example.com/p/v1", predicate)
    assert Statement.model_validate_json(statement.to_payload()) == statement
