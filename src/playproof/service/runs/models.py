"""Tables of the runs domain."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from playproof.core.record import RunRecord
from playproof.service.db import Base, utc_now
from playproof.service.deployments import models as _deployments  # noqa: F401  (runs name them)

__all__ = ["AGENT_CHARS", "Run", "RunStatus", "agent_of"]

AGENT_CHARS = 769
"""The longest agent: an actor kind (256 characters), a colon and an actor id (512)."""


def agent_of(record: RunRecord) -> str:
    """The agent a board shows and sorts by: the record's actor as ``KIND:ID``.

    A NUL character (valid in a record, refused by PostgreSQL in a text column)
    is shown as U+FFFD, so the same record is stored alike on either database;
    the record itself keeps the actor as signed.
    """
    return f"{record.actor.kind}:{record.actor.id}".replace("\x00", "\ufffd")


class RunStatus(StrEnum):
    """Where the service is with a run: apart from the run's own stop reason."""

    PENDING = "pending"
    """Accepted (signature checked), replay not finished yet."""
    VERIFIED = "verified"
    """The server's replay found the record clean."""
    REJECTED = "rejected"
    """The server's replay found the record not clean; the report says why."""
    FAILED = "failed"
    """The replay itself kept raising (``MAX_REPLAY_ATTEMPTS`` times); ``error_kind`` says how."""


class Run(Base):
    """One uploaded signed record.

    ``envelope`` is the normalized DSSE envelope exactly as it is replayed;
    ``envelope_sha256`` its digest, which makes a repeated upload the same run.
    ``report`` is the verification report's JSON once the replay finished.
    The columns after ``finished_at`` are read from the signed record at
    upload (target, seed, budget, cost: None when a decision was unpriced) or
    from the verified score; leaderboards sort on them without opening
    envelopes.
    """

    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_board", "target_name", "status", "trust_label"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), index=True)
    envelope_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    envelope: Mapped[bytes] = mapped_column(LargeBinary)
    record_digest: Mapped[str] = mapped_column(String(64), index=True)
    key_id: Mapped[str] = mapped_column(String(64))
    decision_count: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True, default=RunStatus.PENDING.value)
    report: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deployment_id: Mapped[str | None] = mapped_column(ForeignKey("deployments.id"), index=True)
    trust_label: Mapped[str] = mapped_column(String(48))
    target_name: Mapped[str | None] = mapped_column(String(128))
    seed: Mapped[int | None] = mapped_column(BigInteger)
    budget_usd: Mapped[float | None] = mapped_column(Float)
    cost_usd: Mapped[float | None] = mapped_column(Float)
    earned: Mapped[int | None] = mapped_column(Integer)
    earnable: Mapped[int | None] = mapped_column(Integer)
    score_ratio: Mapped[float | None] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error_kind: Mapped[str | None] = mapped_column(String(64))
    agent: Mapped[str | None] = mapped_column(String(AGENT_CHARS))
    """The record's actor as ``KIND:ID``; boards sort on it (None: the record was unreadable)."""
    stop_reason: Mapped[str | None] = mapped_column(String(32))
    """The stop reason the record states (None: unreadable, or stored before 0009 filled it)."""
    proof_document: Mapped[bytes | None] = mapped_column(LargeBinary, deferred=True)
    """The public proof document rendered when the verdict was stored, up to (not
    including) its transparency value; served only while ``proof_key`` still matches
    the row (see :mod:`playproof.service.proofs.cache`). The key covers the row's verdict
    columns; a writer that changes what the document says by other means (another
    table, say) must clear it."""
    proof_key: Mapped[str | None] = mapped_column(String(64))
    """What ``proof_document`` was built from (verifier version and verdict columns)."""
