"""Checking inclusion and consistency proofs, step by step as RFC 9162 says (2.1.3.2, 2.1.4.2).

Each function walks the spec's numbered steps over the index and the tree
sizes and returns a :class:`ProofResult`; it never raises, whatever it is
given (hashes of the wrong length or type, negative or huge sizes, an index
past the end, a path too long or too short). A failed result names the step
that failed, from a small fixed vocabulary (:data:`PROOF_STEPS`).

>>> from playproof.transparency import leaf_hash, node_hash
>>> a, b = leaf_hash(b"a"), leaf_hash(b"b")
>>> verify_inclusion(a, 0, 2, [b], node_hash(a, b)).valid
True
>>> verify_inclusion(a, 2, 2, [b], node_hash(a, b)).failed_step
'index-below-size'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from playproof.transparency._hashing import EMPTY_ROOT, HASH_BYTES, node_hash

__all__ = [
    "MAX_PROOF_HASHES",
    "MAX_TREE_SIZE",
    "PROOF_STEPS",
    "ProofResult",
    "verify_consistency",
    "verify_inclusion",
]

MAX_TREE_SIZE: Final = 2**53 - 1
"""The largest tree size playproof accepts: tree heads are signed as RFC 8785 JSON,
whose integers stay below 2**53."""
MAX_PROOF_HASHES: Final = 64
"""The most hashes a proof may carry; a tree below 2**53 leaves never needs more than 54."""

HASHES_WELL_FORMED = "hashes-well-formed"
SIZES_IN_RANGE = "sizes-in-range"
INDEX_BELOW_SIZE = "index-below-size"
SIZES_ORDERED = "sizes-ordered"
PATH_EMPTY_WHEN_TRIVIAL = "path-empty-when-trivial"
PATH_NOT_EMPTY = "path-not-empty"
PATH_NOT_TOO_LONG = "path-not-too-long"
PATH_NOT_TOO_SHORT = "path-not-too-short"
ROOT_MATCHES = "root-matches"
OLD_ROOT_MATCHES = "old-root-matches"
NEW_ROOT_MATCHES = "new-root-matches"

PROOF_STEPS: Final = (
    HASHES_WELL_FORMED,
    SIZES_IN_RANGE,
    INDEX_BELOW_SIZE,
    SIZES_ORDERED,
    PATH_EMPTY_WHEN_TRIVIAL,
    PATH_NOT_EMPTY,
    PATH_NOT_TOO_LONG,
    PATH_NOT_TOO_SHORT,
    ROOT_MATCHES,
    OLD_ROOT_MATCHES,
    NEW_ROOT_MATCHES,
)
"""Every step id a proof check can fail at (docs/transparency.md explains each)."""


class ProofResult(BaseModel):
    """Whether a proof holds; when it does not, the step that failed and why, in one line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    valid: bool
    failed_step: str | None = None
    reason: str

    @classmethod
    def holds(cls, reason: str) -> ProofResult:
        """A result saying the proof holds."""
        return cls(valid=True, reason=reason)

    @classmethod
    def fails(cls, step: str, reason: str) -> ProofResult:
        """A result saying the proof failed at ``step``."""
        return cls(valid=False, failed_step=step, reason=reason)


def _is_hash(value: object) -> bool:
    return isinstance(value, bytes) and len(value) == HASH_BYTES


def _is_size(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_TREE_SIZE


def _path_problem(path: object) -> ProofResult | None:
    """A failure when ``path`` is not a short enough list of 32-byte hashes."""
    if not isinstance(path, list | tuple):
        return ProofResult.fails(HASHES_WELL_FORMED, "the proof path is not a list of hashes")
    if len(path) > MAX_PROOF_HASHES:
        return ProofResult.fails(
            PATH_NOT_TOO_LONG,
            f"the path has {len(path)} hashes; no proof needs more than {MAX_PROOF_HASHES}",
        )
    for number, item in enumerate(path):
        if not _is_hash(item):
            return ProofResult.fails(
                HASHES_WELL_FORMED, f"path hash {number} is not {HASH_BYTES} bytes"
            )
    return None


def _shift_while_even(first: int, second: int) -> tuple[int, int]:
    """Right-shift both until ``first`` is odd or zero (RFC 9162 2.1.3.2 step 4b ii)."""
    while first and not first & 1:
        first >>= 1
        second >>= 1
    return first, second


def verify_inclusion(
    leaf_hash: bytes,
    leaf_index: int,
    tree_size: int,
    inclusion_path: Sequence[bytes],
    root_hash: bytes,
) -> ProofResult:
    """Check ``leaf_hash`` is leaf ``leaf_index`` of the ``tree_size`` tree with ``root_hash``.

    RFC 9162 section 2.1.3.2, one step at a time; never raises.
    """
    if not _is_hash(leaf_hash) or not _is_hash(root_hash):
        return ProofResult.fails(HASHES_WELL_FORMED, f"leaf and root are {HASH_BYTES}-byte hashes")
    problem = _path_problem(inclusion_path)
    if problem is not None:
        return problem
    if not _is_size(leaf_index) or not _is_size(tree_size):
        return ProofResult.fails(
            SIZES_IN_RANGE, f"index and size are integers from 0 to {MAX_TREE_SIZE}"
        )
    # Step 1.
    if leaf_index >= tree_size:
        return ProofResult.fails(
            INDEX_BELOW_SIZE, f"leaf index {leaf_index} is not below the tree size {tree_size}"
        )
    # Steps 2 and 3.
    fn, sn = leaf_index, tree_size - 1
    result = leaf_hash
    # Step 4.
    for sibling in inclusion_path:
        if sn == 0:
            return ProofResult.fails(
                PATH_NOT_TOO_LONG,
                f"the path has more than the hashes leaf {leaf_index} of {tree_size} needs",
            )
        if fn & 1 or fn == sn:
            result = node_hash(sibling, result)
            if not fn & 1:
                fn, sn = _shift_while_even(fn, sn)
        else:
            result = node_hash(result, sibling)
        fn >>= 1
        sn >>= 1
    # Step 5.
    if sn != 0:
        return ProofResult.fails(
            PATH_NOT_TOO_SHORT,
            f"the path has fewer than the hashes leaf {leaf_index} of {tree_size} needs",
        )
    if result != root_hash:
        return ProofResult.fails(
            ROOT_MATCHES, "the path leads to another root than the tree head's: not included"
        )
    return ProofResult.holds(f"leaf {leaf_index} is in the tree of size {tree_size}")


def verify_consistency(
    old_size: int,
    new_size: int,
    old_root: bytes,
    new_root: bytes,
    consistency_path: Sequence[bytes],
) -> ProofResult:
    """Check that the tree of ``old_size`` with ``old_root`` is a prefix of the one of ``new_size``.

    RFC 9162 section 2.1.4.2, one step at a time; never raises. Two cases the
    RFC leaves to the caller are settled here: equal sizes need an empty path
    and equal roots, and an empty old tree (whose root must be the empty
    tree's hash) is a prefix of every tree, with an empty path.
    """
    if not _is_hash(old_root) or not _is_hash(new_root):
        return ProofResult.fails(HASHES_WELL_FORMED, f"both roots are {HASH_BYTES}-byte hashes")
    problem = _path_problem(consistency_path)
    if problem is not None:
        return problem
    if not _is_size(old_size) or not _is_size(new_size):
        return ProofResult.fails(SIZES_IN_RANGE, f"sizes are integers from 0 to {MAX_TREE_SIZE}")
    if old_size > new_size:
        return ProofResult.fails(
            SIZES_ORDERED, f"the old size {old_size} is larger than the new size {new_size}"
        )
    if old_size in (0, new_size):
        return _trivial_consistency(old_size, new_size, old_root, new_root, consistency_path)
    # Step 1.
    if not consistency_path:
        return ProofResult.fails(PATH_NOT_EMPTY, "the path is empty, so it proves nothing")
    # Step 2.
    path = list(consistency_path)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    # Steps 3 and 4.
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    # Step 5.
    old_result = new_result = path[0]
    # Step 6.
    for hash_ in path[1:]:
        if sn == 0:
            return ProofResult.fails(
                PATH_NOT_TOO_LONG, f"the path has more hashes than {old_size} to {new_size} needs"
            )
        if fn & 1 or fn == sn:
            old_result = node_hash(hash_, old_result)
            new_result = node_hash(hash_, new_result)
            if not fn & 1:
                fn, sn = _shift_while_even(fn, sn)
        else:
            new_result = node_hash(new_result, hash_)
        fn >>= 1
        sn >>= 1
    # Step 7.
    if sn != 0:
        return ProofResult.fails(
            PATH_NOT_TOO_SHORT, f"the path has fewer hashes than {old_size} to {new_size} needs"
        )
    if old_result != old_root:
        return ProofResult.fails(
            OLD_ROOT_MATCHES, "the path does not lead to the old tree head's root"
        )
    if new_result != new_root:
        return ProofResult.fails(
            NEW_ROOT_MATCHES, "the path does not lead to the new tree head's root: not an append"
        )
    return ProofResult.holds(f"the tree of size {old_size} is a prefix of the one of {new_size}")


def _trivial_consistency(
    old_size: int,
    new_size: int,
    old_root: bytes,
    new_root: bytes,
    path: Sequence[bytes],
) -> ProofResult:
    """Equal sizes, or an empty old tree: nothing to prove, so the path must be empty."""
    if path:
        return ProofResult.fails(
            PATH_EMPTY_WHEN_TRIVIAL,
            f"from {old_size} to {new_size} leaves the path must be empty, not {len(path)} hashes",
        )
    if old_size == 0 and old_root != EMPTY_ROOT:
        return ProofResult.fails(OLD_ROOT_MATCHES, "an empty tree's root is SHA-256 of nothing")
    if old_size == new_size and old_root != new_root:
        return ProofResult.fails(
            NEW_ROOT_MATCHES, f"two tree heads of size {new_size} disagree on the root"
        )
    return ProofResult.holds(f"the tree of size {old_size} is a prefix of the one of {new_size}")
