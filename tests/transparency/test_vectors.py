"""The Certificate Transparency reference tree: published roots, audit paths and consistency proofs.

The eight leaves and the values below are the RFC 6962 / RFC 9162 test
vectors every Certificate Transparency implementation checks itself against.
"""

import pytest
import rfc9162_reference as ref

from playproof.transparency import (
    EMPTY_ROOT,
    MerkleTree,
    leaf_hash,
    merkle_root,
    node_hash,
    verify_consistency,
    verify_inclusion,
)

LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
"""ROOTS[n] is the root of the first n leaves."""

H96A2 = "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7"
H5F08 = "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e"
H6B47 = "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"
HBC1A = "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"
HCA85 = "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0"
H0EBC = "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a"

INCLUSION = [  # (leaf index, tree size, audit path)
    (0, 1, []),
    (0, 8, [H96A2, H5F08, H6B47]),
    (5, 8, [HBC1A, HCA85, ROOTS[4]]),
    (2, 3, [ROOTS[2]]),
    (1, 5, [ROOTS[1], H5F08, HBC1A]),
]
CONSISTENCY = [  # (old size, new size, proof)
    (1, 1, []),
    (1, 8, [H96A2, H5F08, H6B47]),
    (6, 8, [H0EBC, HCA85, ROOTS[4]]),
    (2, 5, [H5F08, HBC1A]),
]


@pytest.fixture(scope="module")
def tree() -> MerkleTree:
    return MerkleTree(leaf_hash(data) for data in LEAVES)


def test_the_empty_tree_hash_is_sha256_of_nothing() -> None:
    assert EMPTY_ROOT.hex() == ROOTS[0]
    assert merkle_root([]).hex() == ROOTS[0]
    assert MerkleTree().root().hex() == ROOTS[0]


@pytest.mark.parametrize("size", range(9))
def test_every_published_root(tree: MerkleTree, size: int) -> None:
    hashes = [leaf_hash(data) for data in LEAVES[:size]]
    assert tree.root(size).hex() == ROOTS[size]
    assert merkle_root(hashes).hex() == ROOTS[size]
    assert ref.mth(hashes).hex() == ROOTS[size]


def test_prefixes_tell_leaves_from_nodes() -> None:
    a, b = leaf_hash(LEAVES[0]), leaf_hash(LEAVES[1])
    assert a.hex() == ROOTS[1]
    assert node_hash(a, b).hex() == ROOTS[2]
    assert node_hash(a, b) != node_hash(b, a)
    assert leaf_hash(a + b) != node_hash(a, b)


@pytest.mark.parametrize(("index", "size", "expected"), INCLUSION)
def test_published_audit_paths(
    tree: MerkleTree, index: int, size: int, expected: list[str]
) -> None:
    made = tree.inclusion_proof(index, size)
    assert [h.hex() for h in made] == expected
    hashes = [leaf_hash(data) for data in LEAVES[:size]]
    assert ref.path(index, hashes) == made
    root = bytes.fromhex(ROOTS[size])
    assert verify_inclusion(leaf_hash(LEAVES[index]), index, size, made, root).valid


@pytest.mark.parametrize(("old", "new", "expected"), CONSISTENCY)
def test_published_consistency_proofs(
    tree: MerkleTree, old: int, new: int, expected: list[str]
) -> None:
    made = tree.consistency_proof(old, new)
    assert [h.hex() for h in made] == expected
    assert ref.proof(old, [leaf_hash(data) for data in LEAVES[:new]]) == made
    roots = bytes.fromhex(ROOTS[old]), bytes.fromhex(ROOTS[new])
    assert verify_consistency(old, new, *roots, made).valid


def test_every_proof_of_the_reference_tree_matches_the_definition(tree: MerkleTree) -> None:
    hashes = [leaf_hash(data) for data in LEAVES]
    for size in range(1, 9):
        for index in range(size):
            assert tree.inclusion_proof(index, size) == ref.path(index, hashes[:size])
        for old in range(size + 1):
            assert tree.consistency_proof(old, size) == ref.proof(old, hashes[:size])
