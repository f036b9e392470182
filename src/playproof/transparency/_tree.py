"""An append-only RFC 9162 Merkle tree that answers proofs in O(log n) node hashes.

The tree keeps the hash of every complete subtree: level 0 holds the leaf
hashes, level ``k`` the hash of each aligned run of ``2**k`` leaves, each
level one contiguous ``bytearray`` (32 bytes a hash, about 64 bytes a leaf in
all). Appending a leaf adds one hash to level 0 and one to each level whose
new node it completes: one node hash per append on average, like carrying in
a binary counter.

Every subtree an RFC 9162 proof names (section 2.1.3.1 and 2.1.4.1) is
either complete and aligned, so read from its level, or runs up to the right
edge of the requested tree size, and at most one such ragged subtree is
hashed per proof (O(log n) node hashes). Proofs and roots can be asked for
any earlier tree size as well: an aligned complete subtree never changes.

>>> from playproof.transparency import leaf_hash, verify_inclusion
>>> tree = MerkleTree(leaf_hash(bytes([i])) for i in range(5))
>>> path = tree.inclusion_proof(3)
>>> verify_inclusion(leaf_hash(bytes([3])), 3, 5, path, tree.root()).valid
True
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import sha256 as _sha256

from playproof.errors import LogError
from playproof.transparency._hashing import (
    EMPTY_ROOT,
    HASH_BYTES,
    NODE_PREFIX,
    node_hash,
    split_point,
)

__all__ = ["MerkleTree"]


class MerkleTree:
    """An append-only list of leaf hashes with its Merkle Tree Hash and proofs."""

    __slots__ = ("_levels",)

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        self._levels: list[bytearray] = [bytearray()]
        self.extend(leaf_hashes)

    @property
    def size(self) -> int:
        """How many leaves the tree holds."""
        return len(self._levels[0]) // HASH_BYTES

    def __len__(self) -> int:
        return self.size

    def append(self, leaf_hash: bytes) -> int:
        """Add one leaf hash (see :func:`~playproof.transparency.leaf_hash`); its index."""
        if not isinstance(leaf_hash, bytes) or len(leaf_hash) != HASH_BYTES:
            raise LogError(f"a leaf hash is {HASH_BYTES} bytes; hash the leaf data first")
        levels = self._levels
        index = len(levels[0]) // HASH_BYTES
        levels[0] += leaf_hash
        current, position, level = leaf_hash, index, 0
        # A node at an odd position is a right child: its parent is now complete.
        while position & 1:
            row = levels[level]
            start = (position - 1) * HASH_BYTES
            current = _sha256(NODE_PREFIX + row[start : start + HASH_BYTES] + current).digest()
            level += 1
            position >>= 1
            if level == len(levels):
                levels.append(bytearray())
            levels[level] += current
        return index

    def extend(self, leaf_hashes: Iterable[bytes]) -> None:
        """Append every leaf hash of ``leaf_hashes`` in order (a whole log loads this way).

        Level by level rather than leaf by leaf: the new leaves are added to
        level 0, then each level's newly completed pairs are hashed into the
        level above, stopping at the first level that completes nothing new.
        The levels are the ones :meth:`append` would have built. If any leaf
        hash is not 32 bytes, nothing is added.
        """
        items = list(leaf_hashes)
        refusal = f"a leaf hash is {HASH_BYTES} bytes; hash the leaf data first"
        try:
            added = b"".join(items)  # refuses anything that is not bytes-like
        except TypeError:
            raise LogError(refusal) from None
        if not set(map(len, items)) <= {HASH_BYTES} or len(added) != HASH_BYTES * len(items):
            raise LogError(refusal)
        levels = self._levels
        levels[0] += added
        level, pair = 0, 2 * HASH_BYTES
        while True:
            row = levels[level]
            complete = len(row) // pair
            if level + 1 == len(levels):
                if complete == 0:
                    return
                levels.append(bytearray())
            above = levels[level + 1]
            known = len(above) // HASH_BYTES
            if known == complete:
                return
            above += b"".join(
                _sha256(NODE_PREFIX + row[i * pair : (i + 1) * pair]).digest()
                for i in range(known, complete)
            )
            level += 1

    def leaf_hash(self, index: int) -> bytes:
        """The leaf hash at ``index``."""
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < self.size:
            raise LogError(f"leaf index {index} is out of range: the log holds {self.size} leaves")
        return self._node(0, index)

    def root(self, size: int | None = None) -> bytes:
        """The Merkle Tree Hash of the first ``size`` leaves (default: all of them)."""
        size = self.size if size is None else size
        self._check_size(size, "tree size")
        return EMPTY_ROOT if size == 0 else self._subtree(0, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """The audit path of leaf ``index`` in the tree of the first ``size`` leaves.

        The path runs from the leaf's sibling up to the root's other child, the
        order RFC 9162 section 2.1.3.1 gives.
        """
        size = self.size if size is None else size
        self._check_size(size, "tree size")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size:
            raise LogError(f"leaf index {index} is not below the tree size {size}")
        siblings: list[bytes] = []
        start, end = 0, size
        while end - start > 1:
            half = split_point(end - start)
            if index < start + half:
                siblings.append(self._subtree(start + half, end))
                end = start + half
            else:
                siblings.append(self._subtree(start, start + half))
                start += half
        siblings.reverse()
        return siblings

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """The hashes proving the first ``old_size`` leaves are a prefix of the first ``new_size``.

        RFC 9162 section 2.1.4.1; empty when ``old_size`` is 0 or equals ``new_size``.
        """
        new_size = self.size if new_size is None else new_size
        self._check_size(new_size, "new tree size")
        self._check_size(old_size, "old tree size")
        if old_size > new_size:
            raise LogError(f"old tree size {old_size} is larger than the new size {new_size}")
        if old_size in (0, new_size):
            return []
        later: list[bytes] = []
        start, end, known, whole = 0, new_size, old_size, True
        while known != end - start:
            half = split_point(end - start)
            if known <= half:
                later.append(self._subtree(start + half, end))
                end = start + half
            else:
                later.append(self._subtree(start, start + half))
                start += half
                known -= half
                whole = False
        # The old tree's own root is left out when the walk never left its left edge.
        first = [] if whole else [self._subtree(start, end)]
        later.reverse()
        return first + later

    def _check_size(self, size: object, what: str) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= self.size:
            raise LogError(f"{what} {size} is out of range: the log holds {self.size} leaves")

    def _node(self, level: int, position: int) -> bytes:
        start = position * HASH_BYTES
        return bytes(self._levels[level][start : start + HASH_BYTES])

    def _subtree(self, start: int, end: int) -> bytes:
        """The Merkle Tree Hash of the leaves ``start`` to ``end`` (exclusive)."""
        size = end - start
        if size & (size - 1) == 0 and start % size == 0:
            level = size.bit_length() - 1
            return self._node(level, start >> level)
        half = split_point(size)
        return node_hash(self._subtree(start, start + half), self._subtree(start + half, end))
