"""Tables of the leaderboards domain: challenges."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Float, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from playproof.service.db import Base, utc_now

__all__ = ["Challenge"]


class Challenge(Base):
    """A target, a set of seeds, a budget and a submission window."""

    __tablename__ = "challenges"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    target_name: Mapped[str] = mapped_column(ForeignKey("targets.name"), index=True)
    seeds: Mapped[str] = mapped_column(Text)
    """The seed set as a JSON list of integers, sorted."""
    budget_usd: Mapped[float] = mapped_column(Float)
    opens_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    closes_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
