"""The transparency log of the service: verified record digests appended as leaves.

The Merkle tree, the signed tree heads and the proofs are
:mod:`playproof.transparency`; this domain keeps the leaves in the database
(append only, the leaf index is the primary key) and signs heads with the
log's key when a proof is asked for. A head's timestamp is the time its
newest leaf was appended, so reading never changes what is served.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from playproof.service.log.models import LogLeaf
from playproof.sign import SigningKey
from playproof.transparency import (
    InclusionProof,
    MerkleTree,
    TreeHead,
    inclusion_proof_document,
    record_leaf_hash,
    sign_tree_head,
)

__all__ = ["append_verified", "as_utc", "leaf_of", "load_log_key", "tree_head", "inclusion"]


def as_utc(moment: datetime) -> datetime:
    """``moment`` with its zone: SQLite hands back naive times, which are UTC here."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def load_log_key(path: Path) -> SigningKey:
    """The log's signing key at ``path``, created (mode 0600) on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        SigningKey.generate().save(path)
    return SigningKey.load(path)


def append_verified(session: Session, run_id: str, record_digest: str) -> int:
    """Append a verified run's record digest as the next leaf; its index (caller commits).

    Two appenders racing for one index collide on the primary key; the loser's
    transaction fails and is retried by the caller.
    """
    size = session.scalar(select(func.count()).select_from(LogLeaf)) or 0
    session.add(LogLeaf(leaf_index=size, run_id=run_id, record_digest=record_digest))
    session.flush()
    return size


def leaf_of(session: Session, run_id: str) -> LogLeaf | None:
    """The run's leaf, if it is in the log."""
    return session.scalar(select(LogLeaf).where(LogLeaf.run_id == run_id))


def _tree(session: Session) -> tuple[MerkleTree, datetime | None]:
    leaves = list(
        session.execute(
            select(LogLeaf.record_digest, LogLeaf.created_at).order_by(LogLeaf.leaf_index)
        )
    )
    tree = MerkleTree(record_leaf_hash(digest) for digest, _ in leaves)
    newest = max((as_utc(at) for _, at in leaves), default=None)
    return tree, newest


def _head(tree: MerkleTree, newest: datetime | None, key: SigningKey) -> TreeHead:
    stamp = int(newest.timestamp() * 1000) if newest is not None else 0
    return sign_tree_head(key, tree_size=tree.size, root_hash=tree.root(), timestamp=stamp)


def tree_head(session: Session, key: SigningKey) -> TreeHead:
    """The signed head of the whole log now."""
    tree, newest = _tree(session)
    return _head(tree, newest, key)


def inclusion(session: Session, leaf: LogLeaf, key: SigningKey) -> tuple[TreeHead, InclusionProof]:
    """The current signed head and the inclusion proof of ``leaf`` in it."""
    tree, newest = _tree(session)
    proof = inclusion_proof_document(tree, key.key_id, leaf.leaf_index, tree.size)
    return _head(tree, newest, key), proof
