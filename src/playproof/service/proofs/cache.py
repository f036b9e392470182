"""Serialized proof documents of finished runs: stored with the verdict, kept in the process.

A run's proof document changes only when the run does (its verdict, its
label, its deployment) and, for a logged run, when the transparency log
grows (the inclusion proof is against the newest head). So the document is
kept as JSON bytes *without* its transparency block, under a key made from
the run row's verdict columns, and the block is attached per request for the
tree size the request's session sees. A run whose row changed (a pending run
that got its verdict, a relabelled run) has a new key and is rebuilt, so a
kept verdict is never served after the row moved on.

Two places keep documents: the run row itself (``runs.proof_document``,
rendered in the transaction that stores the verdict, so every process and
every restart serves it at once), and an in-process least-recently-used
cache for runs whose stored document is missing (runs finished before the
column existed) or stale (built by another verifier version). Pending runs
are kept nowhere: their document is about to change.

Serving a stored document costs one query: the row's narrow columns, the
stored document, the run's log leaf and the log's size, read together.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, select
from sqlalchemy.orm import Session

from playproof.core.record import RunRecord
from playproof.service.deployments.services import require_read
from playproof.service.log.models import LogLeaf
from playproof.service.log.services import LogCache, as_utc, leaf_of
from playproof.service.problems import Problem
from playproof.service.proofs.models import TransparencyBlock
from playproof.service.proofs.services import proof_document, verifier_version
from playproof.service.runs.models import Run, RunStatus
from playproof.service.runs.services import RUN_ID
from playproof.sign import SigningKey

__all__ = [
    "MAX_CACHED_PROOFS",
    "CachedProof",
    "LogBehind",
    "ProofCache",
    "RowState",
    "proof_bytes",
    "render_proof",
    "run_fingerprint",
    "stored_proof",
]

MAX_CACHED_PROOFS = 20_000
"""Documents kept at most (least recently used ones go first); a few KiB each."""
_OPEN_TAIL = b'"transparency":null}'
"""How a document built without its transparency block ends (the block is the last field)."""

Fingerprint = tuple[object, ...]


class LogBehind(Exception):
    """The process's copy of the log is further behind the database than a read may catch up."""


@dataclass(frozen=True)
class RowState:
    """The columns of a run row that its proof document depends on (and read access needs)."""

    id: str
    owner_id: int
    status: str
    report: str | None
    finished_at: datetime | None
    trust_label: str
    deployment_id: str | None
    attempts: int
    error_kind: str | None
    record_digest: str
    envelope_sha256: str


_STATE_COLUMNS = tuple(RowState.__dataclass_fields__)


def run_fingerprint(run: Run | RowState) -> Fingerprint | None:
    """What a run's kept document depends on in its row; None: do not keep it (pending)."""
    if run.status == RunStatus.PENDING.value:
        return None
    report = hashlib.sha256(run.report.encode("utf-8")).digest() if run.report else None
    return (
        run.status,
        report,
        as_utc(run.finished_at).isoformat() if run.finished_at else None,
        run.trust_label,
        run.deployment_id,
        run.attempts,
        run.error_kind,
        run.record_digest,
        run.envelope_sha256,
    )


def proof_key(fingerprint: Fingerprint) -> str:
    """The stored key of a document built from a row with ``fingerprint`` by this version."""
    text = repr((verifier_version(), *fingerprint)).encode("utf-8")
    return hashlib.sha256(text).hexdigest()


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


def render_proof(
    session: Session, run: Run, record: RunRecord | None = None
) -> tuple[bytes, str] | None:
    """A finished run's document without its transparency value, and its key, for storing.

    ``record``: the run's signed record, already parsed from its envelope
    (None: parsed here). None for a pending run, or a document that does not
    end as expected.
    """
    fingerprint = run_fingerprint(run)
    if fingerprint is None:
        return None
    document = proof_document(session, run, None, record=record)
    head = split_document(document.model_dump_json().encode("utf-8"))
    return None if head is None else (head, proof_key(fingerprint))


def _transparency_bytes(
    session: Session | Connection,
    leaf_index: int,
    log_key: SigningKey,
    log_cache: LogCache,
    stored: int | None = None,
) -> bytes:
    head, proof = log_cache.inclusion(session, leaf_index, log_key, stored=stored)
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


def _row_query() -> Any:
    newest = select(func.max(LogLeaf.leaf_index)).scalar_subquery()
    return (
        select(
            *(getattr(Run, name) for name in _STATE_COLUMNS),
            Run.proof_document,
            Run.proof_key,
            LogLeaf.leaf_index,
            newest.label("newest_leaf"),
        )
        .outerjoin(LogLeaf, LogLeaf.run_id == Run.id)
        .where(Run.id == bindparam("run_id"))
    )


_ROW_QUERY = _row_query()
"""Built once: building a statement cost more than running it."""


def stored_proof(
    connection: Connection,
    run_id: str,
    viewer: int | None,
    log_key: SigningKey | None,
    log_cache: LogCache,
    *,
    catch_up: int | None = None,
) -> bytes | None:
    """The stored proof document of ``run_id`` with its transparency block, for ``viewer``.

    One query: the row's verdict columns, the stored document, the run's log
    leaf and the log's size. None when the run has no stored document that
    still matches its row (then :func:`proof_bytes` gives it). A 404 for an
    unknown run and the read rules of its trust label come first either way.
    ``catch_up``: the most leaves ``log_cache`` may read to reach the stored
    log (None: all); :class:`LogBehind` when it is further behind.
    """
    # An id that is not one (a NUL byte, a megabyte) is unknown without asking the database.
    found = RUN_ID.fullmatch(run_id)
    row = connection.execute(_ROW_QUERY, {"run_id": run_id}).first() if found else None
    if row is None:
        raise Problem(404, "unknown-run", f"no run with id {run_id[:64]!r}")
    values = row._mapping
    state = RowState(**{name: values[name] for name in _STATE_COLUMNS})
    require_read(state.trust_label, state.owner_id, viewer, f"run {state.id}")
    fingerprint = run_fingerprint(state)
    stored = values["proof_document"]
    if fingerprint is None or stored is None or values["proof_key"] != proof_key(fingerprint):
        return None
    leaf_index = values["leaf_index"]
    newest = values["newest_leaf"]
    entry = CachedProof(fingerprint=fingerprint, head=bytes(stored), leaf_index=leaf_index)
    if leaf_index is None or log_key is None:
        return entry.with_transparency(None)
    size = 0 if newest is None else int(newest) + 1
    if catch_up is not None and size - log_cache.size > catch_up:
        raise LogBehind(f"{size - log_cache.size} leaves to read")
    block = _transparency_bytes(connection, leaf_index, log_key, log_cache, stored=size)
    return entry.with_transparency(block)
