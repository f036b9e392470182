"""Tables of the log domain: one leaf per verified run, in append order."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from playproof.service.db import Base, utc_now

__all__ = ["LogLeaf"]


class LogLeaf(Base):
    """A verified run's record digest at its place in the transparency log."""

    __tablename__ = "log_leaves"

    leaf_index: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id"), unique=True)
    record_digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
