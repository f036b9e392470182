"""Tables of the owners domain."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from playproof.service.db import Base, utc_now

__all__ = ["MAX_CONTACT_CHARS", "MAX_OWNER_NAME_CHARS", "ApiToken", "Owner", "SignerKey"]

MAX_OWNER_NAME_CHARS = 64
MAX_CONTACT_CHARS = 256


class Owner(Base):
    """Someone who uploads signed records; ``contact`` is private and never served."""

    __tablename__ = "owners"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_OWNER_NAME_CHARS), unique=True)
    contact: Mapped[str | None] = mapped_column(String(MAX_CONTACT_CHARS))
    admin: Mapped[bool] = mapped_column(Boolean, default=False)
    """An administrator may create challenges through the API."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class ApiToken(Base):
    """An owner's API token, stored as the SHA-256 hex of the token text and nothing else."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class SignerKey(Base):
    """An Ed25519 public key registered to an owner; records it signed are theirs."""

    __tablename__ = "signer_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    key_id: Mapped[str] = mapped_column(String(64), unique=True)
    public_pem: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
