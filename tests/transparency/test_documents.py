"""Signed tree heads and proof documents, checked against the log key."""

import base64
import json

import pytest

import playproof
from playproof.drivers import ScriptedDriver
from playproof.errors import FormatError, LogError
from playproof.sign import SigningKey, record_digest, sign_record
from playproof.targets import get_target
from playproof.transparency import (
    CHECK_STEPS,
    EMPTY_ROOT,
    TREE_HEAD_TYPE,
    MerkleTree,
    check_consistency,
    check_inclusion,
    check_tree_head,
    consistency_proof_document,
    inclusion_proof_document,
    parse_tree_head,
    record_document_digest,
    record_leaf_hash,
    sign_tree_head,
    tree_head_bytes,
)

KEY = SigningKey.generate()
DIGESTS = [f"{i:064x}" for i in range(1, 12)]


@pytest.fixture(scope="module")
def tree() -> MerkleTree:
    return MerkleTree(record_leaf_hash(d) for d in DIGESTS)


def _head(tree: MerkleTree, size: int, key: SigningKey = KEY) -> dict[str, object]:
    return sign_tree_head(
        key, tree_size=size, root_hash=tree.root(size), timestamp=1_700_000
    ).to_json()


def test_the_signed_bytes_are_canonical_json_with_the_format_type(tree: MerkleTree) -> None:
    head = parse_tree_head(_head(tree, 3))
    root = tree.root(3).hex()
    expected = (
        f'{{"log_id":"{KEY.key_id}","root_hash":"{root}","timestamp":1700000,'
        f'"tree_size":3,"type":"{TREE_HEAD_TYPE}"}}'
    ).encode()
    assert head.signed_bytes() == expected
    assert tree_head_bytes(head.log_id, 3, head.root_hash, 1_700_000) == expected
    assert KEY.verifying_key.verify(base64.b64decode(head.signature), expected)


def test_a_head_signed_by_another_key_is_refused(tree: MerkleTree) -> None:
    other = SigningKey.generate()
    forged = _head(tree, 5, other)
    result = check_tree_head(forged, KEY.verifying_key)
    assert result.failed_step == "log-id-matches"
    # Claiming the log's id does not help: the signature is the other key's.
    relabelled = {**forged, "log_id": KEY.key_id}
    assert check_tree_head(relabelled, KEY.verifying_key).failed_step == "head-signature-valid"
    proof = inclusion_proof_document(tree, KEY.key_id, 2, 5).to_json()
    assert check_inclusion(relabelled, proof, DIGESTS[2], KEY.verifying_key).failed_step == (
        "head-signature-valid"
    )


@pytest.mark.parametrize("field", ["tree_size", "timestamp", "root_hash"])
def test_any_change_to_a_signed_head_breaks_its_signature(tree: MerkleTree, field: str) -> None:
    head = _head(tree, 4)
    changed = {
        "tree_size": 5,
        "timestamp": 1_700_001,
        "root_hash": tree.root(5).hex(),
    }[field]
    result = check_tree_head({**head, field: changed}, KEY.verifying_key)
    assert result.failed_step == "head-signature-valid"


def test_every_leaf_of_every_size_is_proven_included(tree: MerkleTree) -> None:
    for size in range(1, tree.size + 1):
        head = _head(tree, size)
        for index in range(size):
            proof = inclusion_proof_document(tree, KEY.key_id, index, size)
            result = check_inclusion(head, proof.to_json(), DIGESTS[index], KEY.verifying_key)
            assert result.valid, result
            # Another record is not included under that proof.
            other = DIGESTS[(index + 1) % tree.size]
            if size > 1:
                wrong = check_inclusion(head, proof, other, KEY.verifying_key)
                assert wrong.failed_step == "root-matches"


def test_every_pair_of_sizes_is_proven_consistent(tree: MerkleTree) -> None:
    for new in range(tree.size + 1):
        for old in range(new + 1):
            proof = consistency_proof_document(tree, KEY.key_id, old, new)
            result = check_consistency(
                _head(tree, old), _head(tree, new), json.dumps(proof.to_json()), KEY.verifying_key
            )
            assert result.valid, (old, new, result)


def test_a_rewritten_log_is_not_consistent(tree: MerkleTree) -> None:
    rewritten = MerkleTree(record_leaf_hash(d) for d in [*DIGESTS[:3], "f" * 64, *DIGESTS[4:]])
    old = _head(tree, 6)
    new = sign_tree_head(KEY, tree_size=11, root_hash=rewritten.root(), timestamp=2).to_json()
    proof = consistency_proof_document(rewritten, KEY.key_id, 6, 11)
    result = check_consistency(old, new, proof, KEY.verifying_key)
    assert not result.valid
    assert result.failed_step == "old-root-matches"


def test_a_proof_for_another_size_is_named_as_such(tree: MerkleTree) -> None:
    proof = inclusion_proof_document(tree, KEY.key_id, 1, 8)
    result = check_inclusion(_head(tree, 9), proof, DIGESTS[1], KEY.verifying_key)
    assert result.failed_step == "proof-matches-head"
    consistency = consistency_proof_document(tree, KEY.key_id, 2, 8)
    result = check_consistency(_head(tree, 3), _head(tree, 8), consistency, KEY.verifying_key)
    assert result.failed_step == "proof-matches-head"


def test_an_empty_log_head_and_consistency_from_it(tree: MerkleTree) -> None:
    empty = sign_tree_head(KEY, tree_size=0, root_hash=EMPTY_ROOT, timestamp=0).to_json()
    assert check_tree_head(empty, KEY.verifying_key).valid
    proof = consistency_proof_document(tree, KEY.key_id, 0, 4)
    assert check_consistency(empty, _head(tree, 4), proof, KEY.verifying_key).valid
    lying = sign_tree_head(KEY, tree_size=0, root_hash=tree.root(1), timestamp=0).to_json()
    result = check_consistency(lying, _head(tree, 4), proof, KEY.verifying_key)
    assert result.failed_step == "old-root-matches"


def test_every_failed_step_is_in_the_documented_vocabulary(tree: MerkleTree) -> None:
    head, proof = _head(tree, 5), inclusion_proof_document(tree, KEY.key_id, 1, 5).to_json()
    cases = [
        check_inclusion(b"{", proof, DIGESTS[1], KEY.verifying_key),
        check_inclusion(head, b"[]", DIGESTS[1], KEY.verifying_key),
        check_inclusion(head, proof, "xyz", KEY.verifying_key),
        check_inclusion(head, {**proof, "inclusion_path": []}, DIGESTS[1], KEY.verifying_key),
    ]
    assert [c.failed_step for c in cases] == [
        "head-well-formed",
        "proof-well-formed",
        "leaf-well-formed",
        "path-not-too-short",
    ]
    assert all(c.failed_step in CHECK_STEPS for c in cases)


def test_asking_the_tree_for_what_it_does_not_hold_is_a_log_error(tree: MerkleTree) -> None:
    with pytest.raises(LogError):
        tree.inclusion_proof(11)
    with pytest.raises(LogError):
        tree.inclusion_proof(0, 12)
    with pytest.raises(LogError):
        tree.consistency_proof(5, 4)
    with pytest.raises(LogError):
        tree.root(-1)
    with pytest.raises(LogError):
        MerkleTree().append(b"short")
    for index in (-1, 11, True):
        with pytest.raises(LogError):
            tree.leaf_hash(index)
    assert tree.leaf_hash(10) == record_leaf_hash(DIGESTS[10])


def test_a_signed_record_and_its_bare_record_give_the_same_leaf() -> None:
    target = get_target("native/2048")
    record = playproof.run(target, ScriptedDriver(target.reference[:20]), max_turns=20)
    envelope = sign_record(record, KEY)
    from_envelope = record_document_digest(envelope.to_bytes())
    assert from_envelope == record_digest(record)
    assert record_document_digest(json.dumps(record.to_json()).encode()) == from_envelope
    with pytest.raises(FormatError, match="not a playproof run record"):
        record_document_digest(b'{"seed": 1}')
