"""Properties of random trees: every honest proof verifies, and any one flipped bit breaks it.

The RFC 9162 algorithms bind the leaf, its index, the path and the roots; the
tree size only through the root (leaf 0 has the same path shape in every tree
of 5 to 8 leaves). The size is bound by the signed tree head, so flipped size
bits are tested on the documents, where the proof's size must be the head's.
"""

import hashlib

import pytest
import rfc9162_reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.errors import LogError
from playproof.sign import SigningKey
from playproof.transparency import (
    MerkleTree,
    check_consistency,
    check_inclusion,
    consistency_proof_document,
    inclusion_proof_document,
    leaf_hash,
    record_leaf_hash,
    sign_tree_head,
    verify_consistency,
    verify_inclusion,
)

LOG_KEY = SigningKey.generate()

SIZES = st.integers(min_value=1, max_value=300)


def _leaves(size: int, salt: int) -> list[bytes]:
    """``size`` distinct leaf hashes (equal leaves could make a swapped order verify)."""
    return [leaf_hash(hashlib.sha256(b"%d/%d" % (salt, i)).digest()) for i in range(size)]


def _flip(value: bytes, bit: int) -> bytes:
    flipped = bytearray(value)
    flipped[bit // 8 % len(value)] ^= 1 << (bit % 8)
    return bytes(flipped)


@settings(max_examples=60, deadline=None)
@given(size=SIZES, salt=st.integers(0, 2**16))
def test_every_inclusion_proof_of_a_random_tree_verifies(size: int, salt: int) -> None:
    leaves = _leaves(size, salt)
    tree = MerkleTree(leaves)
    root = tree.root()
    assert root == ref.mth(leaves)
    for index in range(size):
        path = tree.inclusion_proof(index)
        result = verify_inclusion(leaves[index], index, size, path, root)
        assert result.valid, (index, result)


@settings(max_examples=60, deadline=None)
@given(size=SIZES, salt=st.integers(0, 2**16), data=st.data())
def test_every_consistency_proof_between_random_sizes_verifies(
    size: int, salt: int, data: st.DataObject
) -> None:
    tree = MerkleTree(_leaves(size, salt))
    for _ in range(20):
        old = data.draw(st.integers(0, size))
        new = data.draw(st.integers(old, size))
        proof = tree.consistency_proof(old, new)
        result = verify_consistency(old, new, tree.root(old), tree.root(new), proof)
        assert result.valid, (old, new, result)


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 200),
    salt=st.integers(0, 2**16),
    data=st.data(),
    bit=st.integers(0, 255),
)
def test_a_flipped_bit_in_an_inclusion_proof_fails(
    size: int, salt: int, data: st.DataObject, bit: int
) -> None:
    leaves = _leaves(size, salt)
    tree = MerkleTree(leaves)
    index = data.draw(st.integers(0, size - 1))
    path, root, leaf = tree.inclusion_proof(index), tree.root(), leaves[index]
    assert verify_inclusion(leaf, index, size, path, root).valid
    where = data.draw(st.sampled_from(["path", "root", "leaf", "index"]))
    if where == "path" and not path:
        where = "root"
    if where == "path":
        at = data.draw(st.integers(0, len(path) - 1))
        path = [*path[:at], _flip(path[at], bit), *path[at + 1 :]]
    elif where == "root":
        root = _flip(root, bit)
    elif where == "leaf":
        leaf = _flip(leaf, bit)
    else:
        index ^= 1 << (bit % 60)
    result = verify_inclusion(leaf, index, size, path, root)
    assert not result.valid, (where, result)
    assert result.failed_step is not None


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(2, 200),
    salt=st.integers(0, 2**16),
    data=st.data(),
    bit=st.integers(0, 255),
)
def test_a_flipped_bit_in_a_consistency_proof_fails(
    size: int, salt: int, data: st.DataObject, bit: int
) -> None:
    tree = MerkleTree(_leaves(size, salt))
    old = data.draw(st.integers(1, size - 1))
    new = data.draw(st.integers(old + 1, size))
    proof, old_root, new_root = tree.consistency_proof(old, new), tree.root(old), tree.root(new)
    assert verify_consistency(old, new, old_root, new_root, proof).valid
    where = data.draw(st.sampled_from(["path", "old root", "new root"]))
    if where == "path":
        at = data.draw(st.integers(0, len(proof) - 1))
        proof = [*proof[:at], _flip(proof[at], bit), *proof[at + 1 :]]
    elif where == "old root":
        old_root = _flip(old_root, bit)
    else:
        new_root = _flip(new_root, bit)
    result = verify_consistency(old, new, old_root, new_root, proof)
    assert not result.valid, (where, result)


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 200), salt=st.integers(0, 2**16), data=st.data())
def test_a_shortened_or_lengthened_path_fails(size: int, salt: int, data: st.DataObject) -> None:
    leaves = _leaves(size, salt)
    tree = MerkleTree(leaves)
    index = data.draw(st.integers(0, size - 1))
    path, root = tree.inclusion_proof(index), tree.root()
    longer = verify_inclusion(leaves[index], index, size, [*path, root], root)
    assert longer.failed_step == "path-not-too-long"
    if path:
        shorter = verify_inclusion(leaves[index], index, size, path[:-1], root)
        assert shorter.failed_step == "path-not-too-short"


def test_historical_sizes_agree_with_a_tree_of_that_size() -> None:
    leaves = _leaves(70, 7)
    whole = MerkleTree(leaves)
    for size in range(71):
        prefix = MerkleTree(leaves[:size])
        assert whole.root(size) == prefix.root()
        for index in range(size):
            assert whole.inclusion_proof(index, size) == prefix.inclusion_proof(index)
        for old in range(size + 1):
            assert whole.consistency_proof(old, size) == ref.proof(old, leaves[:size])


def test_the_raw_algorithm_does_not_bind_the_size_without_the_root() -> None:
    """Why sizes are checked against the signed head: this is the RFC's own behaviour."""
    leaves = _leaves(5, 1)
    tree = MerkleTree(leaves)
    path = tree.inclusion_proof(0)
    assert verify_inclusion(leaves[0], 0, 7, path, tree.root()).valid


def _flip_size(document: dict[str, object], key: str, bit: int) -> dict[str, object]:
    value = document[key]
    assert isinstance(value, int)
    return {**document, key: value ^ (1 << (bit % 64))}


@settings(max_examples=150, deadline=None)
@given(size=st.integers(1, 150), data=st.data(), bit=st.integers(0, 63))
def test_a_flipped_size_bit_in_an_inclusion_document_fails(
    size: int, data: st.DataObject, bit: int
) -> None:
    digests = [hashlib.sha256(b"%d" % i).hexdigest() for i in range(size)]
    tree = MerkleTree(record_leaf_hash(d) for d in digests)
    index = data.draw(st.integers(0, size - 1))
    head = sign_tree_head(LOG_KEY, tree_size=size, root_hash=tree.root(), timestamp=1).to_json()
    proof = inclusion_proof_document(tree, LOG_KEY.key_id, index, size).to_json()
    public = LOG_KEY.verifying_key
    assert check_inclusion(head, proof, digests[index], public).valid
    if data.draw(st.booleans()):
        head = _flip_size(head, "tree_size", bit)
    else:
        proof = _flip_size(proof, data.draw(st.sampled_from(["tree_size", "leaf_index"])), bit)
    assert not check_inclusion(head, proof, digests[index], public).valid


@settings(max_examples=150, deadline=None)
@given(size=st.integers(2, 150), data=st.data(), bit=st.integers(0, 63))
def test_a_flipped_size_bit_in_a_consistency_document_fails(
    size: int, data: st.DataObject, bit: int
) -> None:
    tree = MerkleTree(_leaves(size, 3))
    old = data.draw(st.integers(0, size))
    new = data.draw(st.integers(old, size))
    heads = [
        sign_tree_head(LOG_KEY, tree_size=n, root_hash=tree.root(n), timestamp=n).to_json()
        for n in (old, new)
    ]
    proof = consistency_proof_document(tree, LOG_KEY.key_id, old, new).to_json()
    public = LOG_KEY.verifying_key
    assert check_consistency(heads[0], heads[1], proof, public).valid
    choice = data.draw(st.sampled_from(["old head", "new head", "old_size", "new_size"]))
    if choice == "old head":
        heads[0] = _flip_size(heads[0], "tree_size", bit)
    elif choice == "new head":
        heads[1] = _flip_size(heads[1], "tree_size", bit)
    else:
        proof = _flip_size(proof, choice, bit)
    assert not check_consistency(heads[0], heads[1], proof, public).valid


@settings(max_examples=100, deadline=None)
@given(
    chunks=st.lists(st.integers(0, 40), max_size=8),
    salt=st.integers(0, 2**16),
)
def test_extending_in_chunks_builds_the_tree_appending_builds(chunks: list[int], salt: int) -> None:
    leaves = _leaves(sum(chunks), salt)
    one_by_one, mixed = MerkleTree(), MerkleTree()
    for leaf in leaves:
        one_by_one.append(leaf)
    start = 0
    for number, size in enumerate(chunks):
        chunk = leaves[start : start + size]
        start += size
        if number % 2:
            for leaf in chunk:
                mixed.append(leaf)
        else:
            mixed.extend(chunk)
    # The stored subtree hashes are the same, not just the root.
    assert mixed._levels == one_by_one._levels
    assert mixed.root() == ref.mth(leaves)


def test_a_bad_leaf_hash_in_a_batch_adds_nothing() -> None:
    tree = MerkleTree(_leaves(3, 0))
    for bad in (b"short", b"x" * 33, "x" * 32, None):
        with pytest.raises(LogError):
            tree.extend([*_leaves(2, 1), bad])  # type: ignore[list-item]
    assert tree.size == 3
    assert tree.root() == ref.mth(_leaves(3, 0))
