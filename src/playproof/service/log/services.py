"""The transparency log of the service: verified record digests appended as leaves.

The Merkle tree, the signed tree heads and the proofs are
:mod:`playproof.transparency`; this domain keeps the leaves in the database
(append only, the leaf index is the primary key) and signs heads with the
log's key when a proof is asked for. A head's timestamp is the time its
newest leaf was appended, so reading never changes what is served.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Connection, Table, bindparam, func, insert, select
from sqlalchemy.orm import Session

from playproof.service.db import utc_now
from playproof.service.log.models import LogLeaf
from playproof.service.problems import Problem
from playproof.sign import SigningKey
from playproof.transparency import (
    ConsistencyProof,
    InclusionProof,
    MerkleTree,
    TreeHead,
    consistency_proof_document,
    inclusion_proof_document,
    record_leaf_hash,
    sign_tree_head,
)

__all__ = [
    "LOAD_BATCH",
    "MAX_SIGNED_HEADS",
    "LogCache",
    "append_verified",
    "as_utc",
    "inclusion",
    "leaf_of",
    "load_log_key",
    "tree_head",
]

LOAD_BATCH = 10_000
"""Leaves read from the database per query when the cached tree catches up."""
MAX_SIGNED_HEADS = 64
"""Signed tree heads kept per process (the newest sizes); a head is signed once per size."""


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC: SQLite hands back naive times, which are UTC here, and a time in
    another zone is converted (SQLite would store its wall clock and drop the offset)."""
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def load_log_key(path: Path) -> SigningKey:
    """The log's signing key at ``path``, created (mode 0600) on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        SigningKey.generate().save(path)
    return SigningKey.load(path)


NEWEST_LEAF = select(func.max(LogLeaf.leaf_index))
"""The newest leaf's index (None: an empty log); built once."""
_LEAVES: Table = LogLeaf.__table__  # type: ignore[assignment]
_ADD_LEAF = insert(_LEAVES).values(
    leaf_index=bindparam("leaf_index"),
    run_id=bindparam("run_id"),
    record_digest=bindparam("record_digest"),
    created_at=bindparam("at"),
)
"""A leaf, inserted on the table (the unit of work's flush costs more than the insert)."""


def append_verified(session: Session, run_id: str, record_digest: str) -> int:
    """Append a verified run's record digest as the next leaf; its index (caller commits).

    Two appenders racing for one index collide on the primary key; the loser's
    transaction fails and is retried by the caller.
    """
    # The newest index, not a count (a full scan on PostgreSQL): indices have
    # no gaps, so the next one is the newest plus one.
    newest = session.scalar(NEWEST_LEAF)
    size = 0 if newest is None else int(newest) + 1
    session.execute(
        _ADD_LEAF,
        {"leaf_index": size, "run_id": run_id, "record_digest": record_digest, "at": utc_now()},
    )
    return size


def leaf_of(session: Session, run_id: str) -> LogLeaf | None:
    """The run's leaf, if it is in the log."""
    return session.scalar(select(LogLeaf).where(LogLeaf.run_id == run_id))


class LogCache:
    """The log's Merkle tree, kept in the process and extended with new leaves only.

    The log is append only, so the cached tree is always a prefix of the
    stored one. Each read counts the stored leaves in the caller's session;
    when the database is ahead (this process or another one appended), only
    the missing leaves are read and appended. Proofs and heads are then
    served for the size the caller's session sees, which the cached tree
    answers for any size up to its own. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tree = MerkleTree()
        self._stamps: list[int] = []
        """For each size ``n`` > 0, the head timestamp: the newest append among the first n."""
        self._heads: dict[tuple[str, int], TreeHead] = {}
        """Signed heads by (log key id, size), oldest first."""

    @property
    def size(self) -> int:
        """How many leaves are cached."""
        return self._tree.size

    def sync(self, session: Session | Connection, stored: int | None = None) -> int:
        """Catch up with the leaves ``session`` sees; the stored size.

        ``stored``: the size, when the caller read it in ``session`` already.
        """
        if stored is None:
            # The newest index, not a count: an index lookup on both databases
            # (indices have no gaps: each is the count when it was appended).
            newest = session.scalar(NEWEST_LEAF)
            stored = 0 if newest is None else int(newest) + 1
        with self._lock:
            while self._tree.size < stored:
                start = self._tree.size
                rows = session.execute(
                    select(LogLeaf.leaf_index, LogLeaf.record_digest, LogLeaf.created_at)
                    .where(LogLeaf.leaf_index >= start, LogLeaf.leaf_index < stored)
                    .order_by(LogLeaf.leaf_index)
                    .limit(LOAD_BATCH)
                ).all()
                if not rows or [r[0] for r in rows] != list(range(start, start + len(rows))):
                    raise Problem(409, "log-damaged", "the stored log has a gap; it is damaged")
                self._tree.extend(record_leaf_hash(r[1]) for r in rows)
                newest = self._stamps[-1] if self._stamps else 0
                for row in rows:
                    newest = max(newest, int(as_utc(row[2]).timestamp() * 1000))
                    self._stamps.append(newest)
        return stored

    def _size(
        self, session: Session | Connection, size: int | None, stored: int | None = None
    ) -> int:
        stored = self.sync(session, stored)
        if size is None:
            return stored
        if not 0 <= size <= stored:
            raise Problem(404, "unknown-tree-size", f"the log holds {stored} leaves, not {size}")
        return size

    def head(self, session: Session, key: SigningKey, size: int | None = None) -> TreeHead:
        """The signed head of the first ``size`` leaves (default: all the session sees).

        The same size always gets the same head: its timestamp is the time
        the newest of its leaves was appended.
        """
        return self._signed_head(key, self._size(session, size))

    def _signed_head(self, key: SigningKey, size: int) -> TreeHead:
        # A size's head never changes (its timestamp is its newest leaf's), so
        # each is signed once; only the newest few sizes are kept.
        with self._lock:
            found = self._heads.get((key.key_id, size))
            if found is not None:
                return found
            root = self._tree.root(size)
            stamp = self._stamps[size - 1] if size else 0
        head = sign_tree_head(key, tree_size=size, root_hash=root, timestamp=stamp)
        with self._lock:
            self._heads[(key.key_id, size)] = head
            while len(self._heads) > MAX_SIGNED_HEADS:
                del self._heads[next(iter(self._heads))]
        return head

    def inclusion(
        self,
        session: Session | Connection,
        leaf_index: int,
        key: SigningKey,
        size: int | None = None,
        *,
        stored: int | None = None,
    ) -> tuple[TreeHead, InclusionProof]:
        """The signed head of ``size`` leaves and the inclusion proof of ``leaf_index`` in it.

        ``stored``: the log's size as ``session`` sees it, when already read.
        """
        size = self._size(session, size, stored)
        if not 0 <= leaf_index < size:
            raise Problem(
                404, "unknown-leaf", f"leaf {leaf_index} is not in a tree of {size} leaves"
            )
        head = self._signed_head(key, size)
        with self._lock:
            proof = inclusion_proof_document(self._tree, key.key_id, leaf_index, size)
        return head, proof

    def consistency(
        self, session: Session, key: SigningKey, first: int, second: int
    ) -> ConsistencyProof:
        """The consistency proof from the tree of ``first`` leaves to the tree of ``second``."""
        stored = self.sync(session)
        if not 0 <= first <= second <= stored:
            raise Problem(
                404,
                "unknown-tree-size",
                f"need 0 <= first <= second <= {stored} (the log's size), "
                f"got first={first}, second={second}",
            )
        with self._lock:
            return consistency_proof_document(self._tree, key.key_id, first, second)


def tree_head(session: Session, key: SigningKey, cache: LogCache | None = None) -> TreeHead:
    """The signed head of the whole log now."""
    return (cache or LogCache()).head(session, key)


def inclusion(session: Session, leaf: LogLeaf, key: SigningKey) -> tuple[TreeHead, InclusionProof]:
    """The current signed head and the inclusion proof of ``leaf`` in it."""
    return LogCache().inclusion(session, leaf.leaf_index, key)
