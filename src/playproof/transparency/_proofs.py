"""Proof documents, and checking them against signed tree heads with the log key.

An inclusion proof document says that a leaf sits at ``leaf_index`` in the
tree of ``tree_size`` leaves of log ``log_id``; a consistency proof document
that the tree of ``old_size`` leaves is a prefix of the tree of
``new_size``. Hashes are 64 lower-case hex characters. The check functions
take the documents as bytes, parsed JSON or models, and never raise: each
returns a :class:`~playproof.transparency.ProofResult` naming the first step
that failed (the steps are listed in :data:`CHECK_STEPS`).
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.canonical import parse_model
from playproof.errors import FormatError
from playproof.sign import VerifyingKey
from playproof.transparency._hashing import leaf_data, leaf_hash
from playproof.transparency._heads import (
    HEAD_STEPS,
    HEAD_WELL_FORMED,
    HexHash,
    TreeHead,
    _check_parsed_head,
    parse_tree_head,
)
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
    "MAX_PROOF_BYTES",
    "ConsistencyProof",
    "InclusionProof",
    "check_consistency",
    "check_inclusion",
    "consistency_proof_document",
    "inclusion_proof_document",
    "parse_consistency_proof",
    "parse_inclusion_proof",
]

MAX_PROOF_BYTES: Final = 16384
"""The largest proof document read; 64 hex hashes and the rest fit in about 4.5 KiB."""

PROOF_WELL_FORMED = "proof-well-formed"
LEAF_WELL_FORMED = "leaf-well-formed"
PROOF_MATCHES_HEAD = "proof-matches-head"
DOCUMENT_STEPS: Final = (HEAD_WELL_FORMED, PROOF_WELL_FORMED, LEAF_WELL_FORMED)
"""The steps that fail when an input is not the document it should be (bad input, not a lie)."""
CHECK_STEPS: Final = (
    *DOCUMENT_STEPS,
    *HEAD_STEPS[1:],
    PROOF_MATCHES_HEAD,
    *PROOF_STEPS,
)
"""Every step id a document check can fail at: the documents, the heads, then the RFC steps."""

ProofPath = Annotated[list[HexHash], Field(max_length=MAX_PROOF_HASHES)]


class InclusionProof(BaseModel):
    """An inclusion proof: the audit path of leaf ``leaf_index`` in the tree of ``tree_size``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    log_id: HexHash
    leaf_index: Annotated[int, Field(ge=0, lt=MAX_TREE_SIZE)]
    tree_size: Annotated[int, Field(ge=1, le=MAX_TREE_SIZE)]
    inclusion_path: ProofPath

    def to_json(self) -> dict[str, Any]:
        """The proof as a JSON object."""
        return self.model_dump(mode="json")


class ConsistencyProof(BaseModel):
    """A consistency proof: the tree of ``old_size`` leaves is a prefix of the ``new_size`` one."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    log_id: HexHash
    old_size: Annotated[int, Field(ge=0, le=MAX_TREE_SIZE)]
    new_size: Annotated[int, Field(ge=0, le=MAX_TREE_SIZE)]
    consistency_path: ProofPath

    def to_json(self) -> dict[str, Any]:
        """The proof as a JSON object."""
        return self.model_dump(mode="json")


def parse_inclusion_proof(data: bytes | str | Any) -> InclusionProof:
    """Read an inclusion proof strictly from JSON text or parsed JSON; raises FormatError only."""
    if isinstance(data, InclusionProof):
        return data
    return parse_model(InclusionProof, data, limit=MAX_PROOF_BYTES, what="inclusion proof")


def parse_consistency_proof(data: bytes | str | Any) -> ConsistencyProof:
    """Read a consistency proof strictly from JSON text or parsed JSON; raises FormatError only."""
    if isinstance(data, ConsistencyProof):
        return data
    return parse_model(ConsistencyProof, data, limit=MAX_PROOF_BYTES, what="consistency proof")


def inclusion_proof_document(
    tree: MerkleTree, log_id: str, leaf_index: int, tree_size: int
) -> InclusionProof:
    """The inclusion proof of leaf ``leaf_index`` in the first ``tree_size`` leaves of ``tree``."""
    path = tree.inclusion_proof(leaf_index, tree_size)
    return InclusionProof(
        log_id=log_id,
        leaf_index=leaf_index,
        tree_size=tree_size,
        inclusion_path=[h.hex() for h in path],
    )


def consistency_proof_document(
    tree: MerkleTree, log_id: str, old_size: int, new_size: int
) -> ConsistencyProof:
    """The consistency proof document from ``old_size`` to ``new_size`` leaves of ``tree``."""
    path = tree.consistency_proof(old_size, new_size)
    return ConsistencyProof(
        log_id=log_id,
        old_size=old_size,
        new_size=new_size,
        consistency_path=[h.hex() for h in path],
    )


def _head(data: object, what: str) -> TreeHead | ProofResult:
    try:
        return parse_tree_head(data)
    except FormatError as exc:
        return ProofResult.fails(HEAD_WELL_FORMED, f"{what}: {exc}")


def check_inclusion(
    head: TreeHead | bytes | str | Any,
    proof: InclusionProof | bytes | str | Any,
    record_digest: str,
    log_key: VerifyingKey,
) -> ProofResult:
    """Check that the run record with ``record_digest`` is in the log as of the signed ``head``.

    The head must be signed by ``log_key``, the proof must be for that head's
    log and size, and the audit path must lead from the record's leaf to the
    head's root. Never raises.
    """
    parsed_head = _head(head, "tree head")
    if isinstance(parsed_head, ProofResult):
        return parsed_head
    try:
        parsed = parse_inclusion_proof(proof)
    except FormatError as exc:
        return ProofResult.fails(PROOF_WELL_FORMED, str(exc))
    try:
        leaf = leaf_hash(leaf_data(record_digest))
    except FormatError as exc:
        return ProofResult.fails(LEAF_WELL_FORMED, str(exc))
    signed = _check_parsed_head(parsed_head, log_key)
    if not signed.valid:
        return signed
    if parsed.log_id != parsed_head.log_id or parsed.tree_size != parsed_head.tree_size:
        return ProofResult.fails(
            PROOF_MATCHES_HEAD,
            f"the proof is for a tree of size {parsed.tree_size}, the head's tree has "
            f"{parsed_head.tree_size} leaves (or the logs differ); "
            "ask the log for a matching proof",
        )
    path = [bytes.fromhex(h) for h in parsed.inclusion_path]
    result = verify_inclusion(leaf, parsed.leaf_index, parsed.tree_size, path, parsed_head.root)
    if not result.valid:
        return result
    return ProofResult.holds(
        f"record {record_digest[:16]}... is leaf {parsed.leaf_index} of the log's "
        f"{parsed_head.tree_size} leaves"
    )


def check_consistency(
    old_head: TreeHead | bytes | str | Any,
    new_head: TreeHead | bytes | str | Any,
    proof: ConsistencyProof | bytes | str | Any,
    log_key: VerifyingKey,
) -> ProofResult:
    """Check that the log of signed ``new_head`` only appended to the log of ``old_head``.

    Both heads must be signed by ``log_key`` and the proof must be for their
    sizes; then the path must lead to both roots. Never raises.
    """
    old = _head(old_head, "old tree head")
    if isinstance(old, ProofResult):
        return old
    new = _head(new_head, "new tree head")
    if isinstance(new, ProofResult):
        return new
    try:
        parsed = parse_consistency_proof(proof)
    except FormatError as exc:
        return ProofResult.fails(PROOF_WELL_FORMED, str(exc))
    for which, head in (("old", old), ("new", new)):
        signed = _check_parsed_head(head, log_key)
        if not signed.valid:
            return signed.model_copy(update={"reason": f"{which} tree head: {signed.reason}"})
    if (
        parsed.log_id != old.log_id
        or parsed.old_size != old.tree_size
        or parsed.new_size != new.tree_size
    ):
        return ProofResult.fails(
            PROOF_MATCHES_HEAD,
            f"the proof is from size {parsed.old_size} to {parsed.new_size}, the heads are of "
            f"sizes {old.tree_size} and {new.tree_size} (or the logs differ); "
            "ask the log for a matching proof",
        )
    path = [bytes.fromhex(h) for h in parsed.consistency_path]
    return verify_consistency(old.tree_size, new.tree_size, old.root, new.root, path)
