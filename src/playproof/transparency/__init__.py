"""The transparency log: an RFC 9162 Merkle tree over verified run records, and its proofs.

Leaves are the digests of verified run records; the log signs tree heads
with its Ed25519 key; inclusion proofs show a record is in the log, and
consistency proofs that a later tree only appended to an earlier one. Pure
code, no I/O: the proof service keeps the leaves, ``playproof log verify``
checks proofs offline. See docs/transparency.md for the formats.

>>> from playproof.sign import SigningKey
>>> key = SigningKey.generate()
>>> tree = MerkleTree()
>>> digests = [format(i, "064x") for i in range(3)]
>>> for d in digests:
...     _ = tree.append(record_leaf_hash(d))
>>> head = sign_tree_head(key, tree_size=tree.size, root_hash=tree.root(), timestamp=0)
>>> proof = inclusion_proof_document(tree, key.key_id, 1, tree.size)
>>> check_inclusion(head, proof, digests[1], key.verifying_key).valid
True
"""

from __future__ import annotations

from playproof.transparency._hashing import (
    EMPTY_ROOT,
    HASH_BYTES,
    leaf_data,
    leaf_hash,
    merkle_root,
    node_hash,
    record_leaf_hash,
)
from playproof.transparency._heads import (
    HEAD_STEPS,
    MAX_TREE_HEAD_BYTES,
    TREE_HEAD_TYPE,
    TreeHead,
    check_tree_head,
    parse_tree_head,
    sign_tree_head,
    tree_head_bytes,
)
from playproof.transparency._proofs import (
    CHECK_STEPS,
    DOCUMENT_STEPS,
    MAX_PROOF_BYTES,
    ConsistencyProof,
    InclusionProof,
    check_consistency,
    check_inclusion,
    consistency_proof_document,
    inclusion_proof_document,
    parse_consistency_proof,
    parse_inclusion_proof,
)
from playproof.transparency._records import record_document_digest
from playproof.transparency._tree import MerkleTree
from playproof.transparency._verify import (
    MAX_PROOF_HASHES,
    MAX_TREE_SIZE,
    PROOF_STEPS,
    ProofResult,
    verify_consistency,
    verify_inclusion,
)

__all__ = [
    "CHECK_STEPS",
    "DOCUMENT_STEPS",
    "EMPTY_ROOT",
    "HASH_BYTES",
    "HEAD_STEPS",
    "MAX_PROOF_BYTES",
    "MAX_PROOF_HASHES",
    "MAX_TREE_HEAD_BYTES",
    "MAX_TREE_SIZE",
    "PROOF_STEPS",
    "TREE_HEAD_TYPE",
    "ConsistencyProof",
    "InclusionProof",
    "MerkleTree",
    "ProofResult",
    "TreeHead",
    "check_consistency",
    "check_inclusion",
    "check_tree_head",
    "consistency_proof_document",
    "inclusion_proof_document",
    "leaf_data",
    "leaf_hash",
    "merkle_root",
    "node_hash",
    "parse_consistency_proof",
    "parse_inclusion_proof",
    "parse_tree_head",
    "record_document_digest",
    "record_leaf_hash",
    "sign_tree_head",
    "tree_head_bytes",
    "verify_consistency",
    "verify_inclusion",
]
