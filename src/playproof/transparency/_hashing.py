"""The hashes of an RFC 9162 Merkle tree (section 2.1.1), and what a playproof leaf holds.

A leaf is hashed as ``SHA-256(0x00 || leaf data)`` and an interior node as
``SHA-256(0x01 || left || right)``; the different first byte keeps a leaf
from ever being mistaken for a node. The tree of ``n`` leaves splits at the
largest power of two smaller than ``n``; the empty tree's hash is the SHA-256
of the empty string.

A playproof leaf's data is exactly the 32 raw bytes of a verified run
record's digest (the SHA-256 of the record's RFC 8785 canonical JSON, the
``run-record`` subject of its signed statement). Every leaf is the same
length and says one thing, so no framing is needed.

>>> EMPTY_ROOT.hex()[:16]
'e3b0c44298fc1c14'
>>> leaf_hash(b"").hex()[:16]
'6e340b9cffb37a98'
>>> split_point(5), split_point(8), split_point(9)
(4, 4, 8)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from playproof.errors import FormatError

__all__ = [
    "EMPTY_ROOT",
    "HASH_BYTES",
    "LEAF_PREFIX",
    "NODE_PREFIX",
    "leaf_data",
    "leaf_hash",
    "merkle_root",
    "node_hash",
    "record_leaf_hash",
    "split_point",
]

HASH_BYTES = 32
"""Every hash in the tree is a SHA-256 digest."""
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The Merkle Tree Hash of the empty tree."""

_HEX_DIGITS = frozenset("0123456789abcdef")


def leaf_hash(data: bytes) -> bytes:
    """The hash of a leaf holding ``data``: SHA-256(0x00 || data)."""
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def split_point(size: int) -> int:
    """The largest power of two smaller than ``size`` (``size`` at least 2)."""
    return 1 << ((size - 1).bit_length() - 1)


def merkle_root(leaf_hashes: Sequence[bytes]) -> bytes:
    """The Merkle Tree Hash of a list of leaf hashes, in O(n) node hashes.

    Folds level by level: pairs are joined left to right, and an odd hash out
    at the end of a level is carried up unchanged, which gives the same tree
    as splitting at the largest power of two.
    """
    if not leaf_hashes:
        return EMPTY_ROOT
    level = list(leaf_hashes)
    while len(level) > 1:
        joined = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            joined.append(level[-1])
        level = joined
    return level[0]


def leaf_data(record_digest: str) -> bytes:
    """The data of the leaf for a run record whose digest is ``record_digest`` (64 hex).

    Raises :class:`~playproof.errors.FormatError` unless the digest is 64
    lower-case hex characters.
    """
    if (
        not isinstance(record_digest, str)
        or len(record_digest) != 2 * HASH_BYTES
        or not _HEX_DIGITS.issuperset(record_digest)
    ):
        raise FormatError(
            "a record digest is 64 lower-case hex characters (the SHA-256 of the run record)"
        )
    return bytes.fromhex(record_digest)


def record_leaf_hash(record_digest: str) -> bytes:
    """The leaf hash the log stores for the run record whose digest is ``record_digest``."""
    return leaf_hash(leaf_data(record_digest))
