"""Operations on owners, tokens and signer keys (no HTTP here)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from playproof.errors import ServiceError
from playproof.service.owners.models import (
    MAX_CONTACT_CHARS,
    MAX_OWNER_NAME_CHARS,
    ApiToken,
    Owner,
    SignerKey,
)
from playproof.sign import VerifyingKey

__all__ = [
    "MAX_TOKEN_CHARS",
    "TOKEN_PREFIX",
    "TokenOwner",
    "add_key",
    "add_owner",
    "create_token",
    "find_owner",
    "owner_for_token",
    "owner_keys",
    "revoke_tokens",
    "token_digest",
]

TOKEN_PREFIX = "pp_"
"""Every token starts so, which lets secret scanners recognise one."""
TOKEN_BYTES = 32
MAX_TOKEN_CHARS = 128
"""A bearer value longer than this is not one of ours; it is refused unread."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def token_digest(token: str) -> str:
    """The SHA-256 hex under which a token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def find_owner(session: Session, name: str) -> Owner:
    """The owner called ``name``; ServiceError if there is none."""
    owner = session.scalar(select(Owner).where(Owner.name == name))
    if owner is None:
        raise ServiceError(f"no owner named {name!r}: add one with playproof service owner add")
    return owner


def add_owner(session: Session, name: str, contact: str | None = None) -> Owner:
    """Create an owner; the name is short, plain and unique."""
    if len(name) > MAX_OWNER_NAME_CHARS or not _NAME.match(name):
        raise ServiceError(
            f"owner name {name[:80]!r} is not usable: letters, digits, '.', '_' and '-', "
            f"at most {MAX_OWNER_NAME_CHARS} characters"
        )
    if contact is not None and len(contact) > MAX_CONTACT_CHARS:
        raise ServiceError(f"a contact is at most {MAX_CONTACT_CHARS} characters")
    owner = Owner(name=name, contact=contact)
    session.add(owner)
    try:
        session.flush()
    except IntegrityError as exc:
        session.rollback()
        raise ServiceError(f"an owner named {name!r} exists already") from exc
    return owner


def create_token(session: Session, owner: Owner) -> str:
    """A new API token for ``owner``; only its SHA-256 is stored, so show it now or never."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    session.add(ApiToken(owner_id=owner.id, token_sha256=token_digest(token)))
    session.flush()
    return token


def revoke_tokens(session: Session, owner: Owner) -> int:
    """Delete every API token of ``owner``; how many there were.

    The API refuses them from the next request on, and the web sessions they
    opened end (a session is checked against its token on every request).
    """
    tokens = select(ApiToken.id).where(ApiToken.owner_id == owner.id)
    count = len(session.scalars(tokens).all())
    session.execute(delete(ApiToken).where(ApiToken.owner_id == owner.id))
    session.flush()
    return count


def add_key(session: Session, owner: Owner, key: VerifyingKey) -> SignerKey:
    """Register ``key`` to ``owner``; one key belongs to one owner."""
    existing = session.scalar(select(SignerKey).where(SignerKey.key_id == key.key_id))
    if existing is not None:
        if existing.owner_id == owner.id:
            return existing
        raise ServiceError(f"key {key.key_id[:16]} is registered to another owner")
    signer = SignerKey(owner_id=owner.id, key_id=key.key_id, public_pem=key.to_pem().decode())
    session.add(signer)
    session.flush()
    return signer


@dataclass(frozen=True)
class TokenOwner:
    """The owner an API token belongs to: what a request may know of them.

    ``keys`` are the owner's registered signer keys when the lookup asked for
    them (an upload checks its signature against them), else None.
    """

    id: int
    name: str
    admin: bool
    keys: tuple[VerifyingKey, ...] | None = None


# Built once: building a statement costs more than running it, and every
# authenticated request and every upload asks these.
_TOKEN_QUERY = (
    select(Owner.id, Owner.name, Owner.admin, ApiToken.token_sha256)
    .join(ApiToken, ApiToken.owner_id == Owner.id)
    .where(ApiToken.token_sha256 == bindparam("digest"))
)
_KEYS_QUERY = select(SignerKey.public_pem).where(SignerKey.owner_id == bindparam("owner_id"))
_TOKEN_KEYS_QUERY = (
    select(Owner.id, Owner.name, Owner.admin, ApiToken.token_sha256, SignerKey.public_pem)
    .join(ApiToken, ApiToken.owner_id == Owner.id)
    .outerjoin(SignerKey, SignerKey.owner_id == Owner.id)
    .where(ApiToken.token_sha256 == bindparam("digest"))
    .order_by(SignerKey.id)
)


def owner_for_token(
    reader: Session | Connection, token: str, *, keys: bool = False
) -> TokenOwner | None:
    """The owner whose token this is, or None; with ``keys``, their signer keys too.

    One query either way (the keys joined to the token and its owner).
    """
    if not token or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        return None
    digest = token_digest(token)
    query = _TOKEN_KEYS_QUERY if keys else _TOKEN_QUERY
    rows = reader.execute(query, {"digest": digest}).all()
    # The lookup is by digest; compare again in constant time for good measure.
    if not rows or not hmac.compare_digest(rows[0].token_sha256, digest):
        return None
    found = rows[0]
    signers = (
        tuple(VerifyingKey.from_pem(r.public_pem.encode()) for r in rows if r.public_pem)
        if keys
        else None
    )
    return TokenOwner(id=found.id, name=found.name, admin=bool(found.admin), keys=signers)


def owner_keys(session: Session, owner_id: int) -> list[VerifyingKey]:
    """The public keys registered to an owner."""
    pems = session.scalars(_KEYS_QUERY, {"owner_id": owner_id})
    return [VerifyingKey.from_pem(pem.encode()) for pem in pems]
