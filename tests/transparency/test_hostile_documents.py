"""Hostile tree heads and proofs: the offline checks answer a failing step, never raise.

A client checks documents a log (or someone posing as it) hands over. Whatever
they hold (any JSON value, any bytes, a genuine document with one field
replaced by anything), a check returns a result whose failed step is in the
documented vocabulary, and a document that is not the genuine one never holds.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.errors import FormatError
from playproof.sign import SigningKey
from playproof.transparency import (
    CHECK_STEPS,
    MerkleTree,
    check_consistency,
    check_inclusion,
    check_tree_head,
    consistency_proof_document,
    inclusion_proof_document,
    parse_consistency_proof,
    parse_inclusion_proof,
    parse_tree_head,
    record_leaf_hash,
    sign_tree_head,
)

KEY = SigningKey.generate()
DIGESTS = [f"{i:064x}" for i in range(1, 10)]
TREE = MerkleTree(record_leaf_hash(d) for d in DIGESTS)
HEAD = sign_tree_head(KEY, tree_size=9, root_hash=TREE.root(9), timestamp=1_700_000).to_json()
OLD_HEAD = sign_tree_head(KEY, tree_size=4, root_hash=TREE.root(4), timestamp=1_600_000).to_json()
INCLUSION = inclusion_proof_document(TREE, KEY.key_id, 2, 9).to_json()
CONSISTENCY = consistency_proof_document(TREE, KEY.key_id, 4, 9).to_json()

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=25,
)
INPUTS = JSON_VALUES | st.binary(max_size=200) | st.text(max_size=200)


def test_the_genuine_documents_hold() -> None:
    assert check_tree_head(HEAD, KEY.verifying_key).valid
    assert check_inclusion(HEAD, INCLUSION, DIGESTS[2], KEY.verifying_key).valid
    assert check_consistency(OLD_HEAD, HEAD, CONSISTENCY, KEY.verifying_key).valid


@settings(max_examples=150, deadline=None)
@given(value=INPUTS)
def test_any_input_parses_to_a_document_or_a_format_error(value: Any) -> None:
    for parse in (parse_tree_head, parse_inclusion_proof, parse_consistency_proof):
        with contextlib.suppress(FormatError):
            parse(value)


@settings(max_examples=150, deadline=None)
@given(value=INPUTS, slot=st.integers(0, 2))
def test_any_input_in_any_slot_fails_a_named_step(value: Any, slot: int) -> None:
    documents: list[Any] = [HEAD, INCLUSION, DIGESTS[2]]
    documents[slot] = value if slot < 2 or isinstance(value, str) else str(value)
    result = check_inclusion(*documents, KEY.verifying_key)
    assert result.failed_step in CHECK_STEPS or result.valid
    assert not result.valid or documents == [HEAD, INCLUSION, DIGESTS[2]]
    pair: list[Any] = [OLD_HEAD, HEAD, CONSISTENCY]
    pair[slot] = value
    result = check_consistency(*pair, KEY.verifying_key)
    assert result.failed_step in CHECK_STEPS or result.valid
    assert not result.valid or pair == [OLD_HEAD, HEAD, CONSISTENCY]


def _replace(document: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    return {**document, field: value}


@settings(max_examples=200, deadline=None)
@given(data=st.data(), value=JSON_VALUES)
def test_a_genuine_document_with_one_field_replaced_never_holds(
    data: st.DataObject, value: Any
) -> None:
    which = data.draw(st.sampled_from(["head", "inclusion", "old", "consistency"]))
    document = {"head": HEAD, "inclusion": INCLUSION, "old": OLD_HEAD, "consistency": CONSISTENCY}[
        which
    ]
    field = data.draw(st.sampled_from(sorted(document)))
    if value == document[field] and type(value) is type(document[field]):
        return  # not a change
    changed = _replace(document, field, value)
    if which in ("head", "inclusion"):
        head, proof = (changed, INCLUSION) if which == "head" else (HEAD, changed)
        result = check_inclusion(head, proof, DIGESTS[2], KEY.verifying_key)
    else:
        old, proof = (changed, CONSISTENCY) if which == "old" else (OLD_HEAD, changed)
        result = check_consistency(old, HEAD, proof, KEY.verifying_key)
    assert not result.valid, (which, field, value)
    assert result.failed_step in CHECK_STEPS


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(0, 10_000))
def test_a_truncated_document_never_holds(cut: int) -> None:
    for which in range(3):
        texts = [json.dumps(d).encode() for d in (HEAD, INCLUSION)]
        if which < 2:
            texts[which] = texts[which][: cut % len(texts[which])]
            result = check_inclusion(texts[0], texts[1], DIGESTS[2], KEY.verifying_key)
        else:
            proof = json.dumps(CONSISTENCY).encode()
            result = check_consistency(OLD_HEAD, HEAD, proof[: cut % len(proof)], KEY.verifying_key)
        assert not result.valid
        assert result.failed_step in CHECK_STEPS
