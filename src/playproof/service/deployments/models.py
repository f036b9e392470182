"""Tables of the deployments domain: registry targets and owners' deployments."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from playproof.service.db import Base, utc_now

__all__ = ["MAX_TARGET_NAME_CHARS", "Deployment", "Target"]

MAX_TARGET_NAME_CHARS = 128


class Target(Base):
    """A packaged registry target as the service last saw it (refreshed at every start)."""

    __tablename__ = "targets"

    name: Mapped[str] = mapped_column(String(MAX_TARGET_NAME_CHARS), primary_key=True)
    platform: Mapped[str] = mapped_column(String(64))
    build_digest: Mapped[str] = mapped_column(String(64))
    calibration: Mapped[str] = mapped_column(String(24))
    """``separates``, ``does-not-separate`` or ``uncalibrated``."""
    calibrated: Mapped[bool] = mapped_column(Boolean)
    refreshed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class Deployment(Base):
    """An owner's target at a version with a configuration; ``configuration`` is private."""

    __tablename__ = "deployments"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"), index=True)
    target_name: Mapped[str] = mapped_column(ForeignKey("targets.name"), index=True)
    template_version: Mapped[str] = mapped_column(String(64))
    """The target's build digest when the deployment was made."""
    configuration: Mapped[str] = mapped_column(Text)
    configuration_sha256: Mapped[str] = mapped_column(String(64))
    customized: Mapped[bool] = mapped_column(Boolean)
    policy_envelope: Mapped[str | None] = mapped_column(Text)
    trust_label: Mapped[str] = mapped_column(String(48))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
