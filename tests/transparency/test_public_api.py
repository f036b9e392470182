"""The public names of playproof.transparency are exactly the intended ones."""

from playproof import transparency

EXPECTED = {
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
}


def test_exported_names() -> None:
    assert set(transparency.__all__) == EXPECTED
    for name in transparency.__all__:
        assert hasattr(transparency, name), name


def test_the_step_vocabularies_have_no_repeats() -> None:
    assert len(set(transparency.CHECK_STEPS)) == len(transparency.CHECK_STEPS)
    assert set(transparency.PROOF_STEPS) <= set(transparency.CHECK_STEPS)
    assert set(transparency.HEAD_STEPS) <= set(transparency.CHECK_STEPS)
    assert set(transparency.DOCUMENT_STEPS) <= set(transparency.CHECK_STEPS)
