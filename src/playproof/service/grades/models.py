"""Tables of the grades domain."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from playproof.service.db import Base, utc_now

__all__ = ["Grade"]


class Grade(Base):
    """One uploaded signed grade record; ``status`` as for runs.

    The summary columns (``passed`` to ``record_document``) are what the grade
    pages and the proof document show and compare, copied from the record at
    upload (migration 0007 filled them for older rows), so neither the pages
    nor a proof read parse an envelope to list or compare grades. All NULL
    when the stored record does not read.
    """

    __tablename__ = "grades"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), index=True)
    envelope_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    envelope: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    """Up to 16 MiB: read only where the record itself is needed (the server's check, a page)."""
    record_digest: Mapped[str] = mapped_column(String(64))
    key_id: Mapped[str] = mapped_column(String(64))
    corpus_id: Mapped[str] = mapped_column(String(128))
    corpus_digest: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), index=True, default="pending")
    report: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error_kind: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    passed: Mapped[int | None] = mapped_column(Integer)
    denominator: Mapped[int | None] = mapped_column(Integer)
    trust: Mapped[str | None] = mapped_column(String(16))
    build_digest: Mapped[str | None] = mapped_column(String(64))
    command_sha256: Mapped[str | None] = mapped_column(String(64))
    """SHA-256 of the candidate's command line (canonical JSON): a lineage's key, never shown."""
    case_ids: Mapped[str | None] = mapped_column(Text)
    """The record's case ids in its order, as a JSON array (ASCII)."""
    case_ids_sha256: Mapped[str | None] = mapped_column(String(64))
    passing: Mapped[str | None] = mapped_column(Text)
    """Which cases passed: a bitmap over ``case_ids`` (bit 7 of byte 0 first), in hex."""
    record_document: Mapped[str | None] = mapped_column(Text)
    """The proof document's ``record`` block (JSON), so a proof read parses no envelope."""
