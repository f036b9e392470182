"""Tables of the artifacts domain: content-addressed bytes and the runs that use them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from playproof.service.db import Base, utc_now

__all__ = ["Artifact", "RunArtifact"]


class Artifact(Base):
    """Bytes stored once per SHA-256 digest; ``content`` is private, its digest and size are not."""

    __tablename__ = "artifacts"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    """SHA-256 of ``content`` (lowercase hex)."""
    size: Mapped[int] = mapped_column(Integer)
    media_type: Mapped[str] = mapped_column(String(128))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class RunArtifact(Base):
    """A run's use of an artifact, under a role (``run-events``, ``policy-envelope``, ...)."""

    __tablename__ = "run_artifacts"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(32), primary_key=True)
    digest: Mapped[str] = mapped_column(ForeignKey("artifacts.digest"), index=True)
