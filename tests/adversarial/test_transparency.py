"""Hostile input to the transparency log's verifiers: every case ends in a typed result."""

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import playproof
from playproof.drivers import ScriptedDriver
from playproof.errors import FormatError
from playproof.sign import SigningKey, sign_record
from playproof.targets import get_target
from playproof.transparency import (
    MAX_PROOF_BYTES,
    MAX_PROOF_HASHES,
    MerkleTree,
    ProofResult,
    check_consistency,
    check_inclusion,
    check_tree_head,
    consistency_proof_document,
    inclusion_proof_document,
    record_document_digest,
    record_leaf_hash,
    sign_tree_head,
    verify_consistency,
    verify_inclusion,
)

KEY = SigningKey.generate()
DIGESTS = [f"{i:064x}" for i in range(1, 10)]
TREE = MerkleTree(record_leaf_hash(d) for d in DIGESTS)
HEAD = sign_tree_head(KEY, tree_size=9, root_hash=TREE.root(), timestamp=5).to_json()
OLD_HEAD = sign_tree_head(KEY, tree_size=4, root_hash=TREE.root(4), timestamp=4).to_json()
PROOF = inclusion_proof_document(TREE, KEY.key_id, 3, 9).to_json()
CONSISTENCY = consistency_proof_document(TREE, KEY.key_id, 4, 9).to_json()

HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.binary(max_size=40),
    st.text(max_size=70),
    st.lists(st.binary(max_size=33), max_size=70),
    st.lists(st.integers(), max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(args=st.tuples(*[HOSTILE_VALUES] * 5))
def test_the_rfc_algorithms_never_raise(args: tuple[Any, ...]) -> None:
    for result in (verify_inclusion(*args), verify_consistency(*args)):
        assert isinstance(result, ProofResult)
        assert not result.valid or result.failed_step is None


def _inclusion(proof: Any, head: Any = None) -> ProofResult:
    return check_inclusion(HEAD if head is None else head, proof, DIGESTS[3], KEY.verifying_key)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tree_size", 2**63),
        ("tree_size", 2**64 + 9),
        ("tree_size", 2**53),
        ("tree_size", -1),
        ("tree_size", 9.0),
        ("tree_size", "9"),
        ("tree_size", True),
        ("leaf_index", 2**63),
        ("leaf_index", -3),
        ("leaf_index", None),
        ("inclusion_path", "not a list"),
        ("inclusion_path", [123]),
        ("inclusion_path", ["zz" * 32]),
        ("inclusion_path", ["AB" * 32]),
        ("inclusion_path", ["ab" * 31]),
        ("inclusion_path", ["ab" * 32] * (MAX_PROOF_HASHES + 1)),
        ("log_id", "x"),
    ],
)
def test_a_malformed_inclusion_proof_is_a_typed_result(field: str, value: Any) -> None:
    result = _inclusion({**PROOF, field: value})
    assert not result.valid
    assert result.failed_step == "proof-well-formed"


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"null",
        b"[]",
        b"{",
        b'{"log_id": 1} trailing',
        b'{"tree_size": NaN}',
        b"[" * 100_000,
        json.dumps({**PROOF, "extra": 1}).encode(),
        json.dumps(PROOF).encode()[:-1] + b',"tree_size": 9}',  # a repeated key
        json.dumps(PROOF).encode() + b" " * MAX_PROOF_BYTES,  # over the size bound
        "\ud800".encode("utf-8", "surrogatepass"),
    ],
)
def test_hostile_proof_text_is_a_typed_result(text: bytes) -> None:
    result = _inclusion(text)
    assert result.failed_step == "proof-well-formed"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tree_size", 2**63),
        ("timestamp", 2**64),
        ("timestamp", -1),
        ("root_hash", "00" * 33),
        ("signature", "!" * 88),
        ("signature", base64.b64encode(b"x" * 63).decode()),
        ("log_id", None),
    ],
)
def test_a_malformed_tree_head_is_a_typed_result(field: str, value: Any) -> None:
    head = {**HEAD, field: value}
    assert _inclusion(PROOF, head).failed_step == "head-well-formed"
    assert check_tree_head(head, KEY.verifying_key).failed_step == "head-well-formed"
    result = check_consistency(OLD_HEAD, head, CONSISTENCY, KEY.verifying_key)
    assert result.failed_step == "head-well-formed"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("old_size", 2**63),
        ("new_size", -1),
        ("consistency_path", ["00" * 32] * (MAX_PROOF_HASHES + 1)),
        ("consistency_path", [None]),
    ],
)
def test_a_malformed_consistency_proof_is_a_typed_result(field: str, value: Any) -> None:
    result = check_consistency(OLD_HEAD, HEAD, {**CONSISTENCY, field: value}, KEY.verifying_key)
    assert result.failed_step == "proof-well-formed"


def test_reversed_heads_are_not_consistent() -> None:
    backwards = consistency_proof_document(TREE, KEY.key_id, 4, 9).to_json()
    backwards = {**backwards, "old_size": 9, "new_size": 4}
    result = check_consistency(HEAD, OLD_HEAD, backwards, KEY.verifying_key)
    assert result.failed_step == "sizes-ordered"


def test_padding_an_inclusion_path_is_caught() -> None:
    padded = {**PROOF, "inclusion_path": [*PROOF["inclusion_path"], "00" * 32]}
    assert _inclusion(padded).failed_step == "path-not-too-long"
    assert _inclusion({**PROOF, "leaf_index": 9}).failed_step == "index-below-size"


def test_a_nonempty_path_between_equal_sizes_is_refused() -> None:
    same = {**CONSISTENCY, "old_size": 9, "consistency_path": ["00" * 32]}
    result = check_consistency(HEAD, HEAD, same, KEY.verifying_key)
    assert result.failed_step == "path-empty-when-trivial"


@settings(max_examples=200, deadline=None)
@given(head=st.binary(max_size=300), proof=st.binary(max_size=300), leaf=st.text(max_size=80))
def test_random_documents_never_raise(head: bytes, proof: bytes, leaf: str) -> None:
    assert not check_inclusion(head, proof, leaf, KEY.verifying_key).valid
    assert not check_consistency(head, head, proof, KEY.verifying_key).valid


def test_an_envelope_whose_subject_disagrees_with_its_record_is_refused() -> None:
    target = get_target("native/2048")
    record = playproof.run(target, ScriptedDriver(target.reference[:5]), max_turns=5)
    envelope = sign_record(record, KEY).to_json()
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["seed"] += 1
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    with pytest.raises(FormatError, match="subject does not match"):
        record_document_digest(json.dumps(envelope).encode())
    with pytest.raises(FormatError):
        record_document_digest(b'{"payloadType": "x", "payload": "!!", "signatures": []}')
