"""Serialized proof documents of finished runs, kept in the process.

A run's proof document changes only when the run does (its verdict, its
label, its deployment) and, for a logged run, when the transparency log
grows (the inclusion proof is against the newest head). So the document is
cached as JSON bytes *without* its transparency block, under a fingerprint of
the run row as read for the request; the block is attached per request for
the tree size the request's session sees. A run whose row changed (a pending
run that got its verdict, a relabelled run) has a new fingerprint and is
rebuilt, so a cached verdict is never served after the row moved on.

Pending runs are not cached: their document is about to change.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from sqlalchemy.orm import Session

from playproof.service.log.services import LogCache, leaf_of
from playproof.service.proofs.models import TransparencyBlock
from playproof.service.proofs.services import proof_document
from playproof.service.runs.models import Run, RunStatus
from playproof.sign import SigningKey

__all__ = [
    "MAX_CACHED_PROOFS",
    "CachedProof",
    "ProofCache",
    "proof_bytes",
    "run_fingerprint",
]

MAX_CACHED_PROOFS = 20_000
"""Documents kept at most (least recently used ones go first); a few KiB each."""
_OPEN_TAIL = b'"transparency":null}'
"""How a document built without its transparency block ends (the block is the last field)."""

Fingerprint = tuple[object, ...]


def run_fingerprint(run: Run) -> Fingerprint | None:
    """What a run's cached document depends on in its row; None: do not cache it (pending)."""
    if run.status == RunStatus.PENDING.value:
        return None
    report = hashlib.sha256(run.report.encode("utf-8")).digest() if run.report else None
    return (
        run.status,
        report,
        run.finished_at,
        run.trust_label,
        run.deployment_id,
        run.attempts,
        run.error_kind,
        run.record_digest,
        run.envelope_sha256,
    )


@dataclass(frozen=True)
class CachedProof:
    """A document's bytes up to (not including) its transparency value, and the run's leaf.

    ``leaf_index`` is the run's transparency-log leaf (None: not logged when
    the document was built); leaves never move once appended.
    """

    fingerprint: Fingerprint
    head: bytes
    leaf_index: int | None

    def with_transparency(self, block: bytes | None) -> bytes:
        """The whole document with ``block`` (JSON bytes; None: ``null``) as transparency."""
        return self.head + (block if block is not None else b"null") + b"}"


def split_document(document: bytes) -> bytes | None:
    """The part of a document built without transparency that precedes the value; None if
    the document does not end as expected (then it is not cached)."""
    if not document.endswith(_OPEN_TAIL):
        return None
    return document[: -len(b"null}")]


class ProofCache:
    """Least-recently-used proof documents by run id (thread-safe)."""

    def __init__(self, capacity: int = MAX_CACHED_PROOFS) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[str, CachedProof] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, run_id: str, fingerprint: Fingerprint) -> CachedProof | None:
        """The cached document of ``run_id`` if it was built from a row with ``fingerprint``."""
        with self._lock:
            found = self._items.get(run_id)
            if found is None:
                return None
            if found.fingerprint != fingerprint:
                del self._items[run_id]  # the run moved on: never serve the old document
                return None
            self._items.move_to_end(run_id)
            return found

    def put(self, run_id: str, entry: CachedProof) -> None:
        """Keep ``entry`` as the document of ``run_id`` (the least recent go beyond capacity)."""
        with self._lock:
            self._items[run_id] = entry
            self._items.move_to_end(run_id)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)


def _transparency_bytes(
    session: Session, leaf_index: int, log_key: SigningKey, log_cache: LogCache
) -> bytes:
    head, proof = log_cache.inclusion(session, leaf_index, log_key)
    block = TransparencyBlock(
        log_id=log_key.key_id, leaf_index=leaf_index, tree_head=head, inclusion_proof=proof
    )
    return block.model_dump_json().encode("utf-8")


def proof_bytes(
    session: Session,
    run: Run,
    log_key: SigningKey | None,
    log_cache: LogCache,
    cache: ProofCache,
) -> bytes:
    """The public proof document of ``run`` as JSON bytes, from ``cache`` when it can be.

    The same document :func:`~playproof.service.proofs.services.proof_document`
    builds; a finished run's is built once per version of its row, and its
    inclusion proof is attached for the log as ``session`` sees it now. The
    caller checks read access first.
    """
    fingerprint = run_fingerprint(run)
    entry = cache.get(run.id, fingerprint) if fingerprint is not None else None
    logged = log_key is not None
    if entry is None:
        document = proof_document(session, run, None).model_dump_json().encode("utf-8")
        head = split_document(document)
        if head is None:  # pragma: no cover - the document's last field is transparency
            return proof_document(session, run, log_key, log_cache).model_dump_json().encode()
        leaf = leaf_of(session, run.id) if logged else None
        entry = CachedProof(
            fingerprint=fingerprint or (),
            head=head,
            leaf_index=leaf.leaf_index if leaf is not None else None,
        )
        if fingerprint is not None:
            cache.put(run.id, entry)
        leaf_index = entry.leaf_index
    else:
        leaf_index = entry.leaf_index
        # A verified run cached before its leaf was visible (finish_run appends
        # in the verdict's transaction, so none today) is looked up again.
        if leaf_index is None and logged and run.status == RunStatus.VERIFIED.value:
            found = leaf_of(session, run.id)
            leaf_index = found.leaf_index if found is not None else None
    if leaf_index is None or log_key is None:
        return entry.with_transparency(None)
    return entry.with_transparency(_transparency_bytes(session, leaf_index, log_key, log_cache))
