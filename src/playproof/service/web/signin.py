"""Owner sign-in for the web pages: an API token buys a signed session cookie; CSRF tokens.

The session cookie holds the owner's id, an expiry and a keyed digest of the
token that signed in, all under an HMAC with the service's session key; the
token itself is never stored. Every request re-checks that the token still
exists, so deleting a token ends the sessions it opened.

Every form carries a CSRF token: a random nonce and its HMAC, also sent as a
cookie; a post whose form field is missing, forged or different from the
cookie is refused (double submit, with a keyed token that another site
cannot mint).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from playproof._bounded import read_bounded
from playproof.errors import ServiceError
from playproof.service.owners.models import ApiToken, Owner
from playproof.service.owners.services import MAX_TOKEN_CHARS, owner_for_token, token_digest

__all__ = [
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "SESSION_COOKIE",
    "SESSION_LIFETIME_S",
    "SessionKeys",
    "Viewer",
    "load_session_key",
]

SESSION_COOKIE = "pp_session"
CSRF_COOKIE = "pp_csrf"
CSRF_FIELD = "csrf"
SESSION_LIFETIME_S = 12 * 3600
"""A web session lasts twelve hours; then the owner signs in again."""
SESSION_KEY_BYTES = 32
MAX_COOKIE_CHARS = 512
"""A cookie value longer than this is not one of ours and is ignored unread."""


@dataclass(frozen=True)
class Viewer:
    """The owner a web session belongs to."""

    id: int
    name: str


def load_session_key(path: Path) -> bytes:
    """The HMAC key of web sessions at ``path``, created (mode 0600) on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under another name, then linked into place: a worker
        # that loses the race reads the winner's key, never a part-written file.
        draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(secrets.token_bytes(SESSION_KEY_BYTES))
            with contextlib.suppress(FileExistsError):  # another worker's key stands
                os.link(draft, path)
        finally:
            draft.unlink()
    key = read_bounded(path, 1024, "session key")
    if len(key) != SESSION_KEY_BYTES:
        raise ServiceError(f"{path} is not a web session key: delete it to make a new one")
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SessionKeys:
    """Mints and checks session cookies and CSRF tokens with one secret key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, purpose: str, data: bytes) -> str:
        return _b64(hmac.new(self._key, purpose.encode() + b"\0" + data, hashlib.sha256).digest())

    # -- CSRF ------------------------------------------------------------

    def new_csrf(self) -> str:
        """A fresh CSRF token: a nonce and its keyed digest."""
        nonce = _b64(secrets.token_bytes(18))
        return f"{nonce}.{self._mac('csrf', nonce.encode())}"

    def csrf_valid(self, token: str | None) -> bool:
        """True for a token this service minted."""
        if not token or len(token) > MAX_COOKIE_CHARS or not token.isascii():
            return False
        nonce, _, mac = token.partition(".")
        return bool(nonce) and hmac.compare_digest(mac, self._mac("csrf", nonce.encode()))

    def csrf_matches(self, field: str | None, cookie: str | None) -> bool:
        """True when the form's token is the cookie's and this service minted it."""
        if not field or not cookie or not self.csrf_valid(cookie):
            return False
        return hmac.compare_digest(field.encode(), cookie.encode())

    # -- sessions --------------------------------------------------------

    def _token_tag(self, token_sha256: str) -> str:
        return self._mac("token", token_sha256.encode())

    def sign_in(self, session: Session, token: str) -> tuple[Viewer, str] | None:
        """The viewer and a session cookie value for a valid API token, else None."""
        token = token.strip()
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        owner = owner_for_token(session, token)
        if owner is None:
            return None
        payload = json.dumps(
            {
                "o": owner.id,
                "e": int(time.time()) + SESSION_LIFETIME_S,
                "t": self._token_tag(token_digest(token)),
            },
            separators=(",", ":"),
        ).encode()
        cookie = f"{_b64(payload)}.{self._mac('session', payload)}"
        return Viewer(id=owner.id, name=owner.name), cookie

    def viewer(self, session: Session, cookie: str | None) -> Viewer | None:
        """The owner of a session cookie that is genuine, unexpired and whose token still exists."""
        if not cookie or len(cookie) > MAX_COOKIE_CHARS or not cookie.isascii():
            return None
        encoded, _, mac = cookie.partition(".")
        try:
            payload = _unb64(encoded)
        except ValueError:
            return None
        if not hmac.compare_digest(mac, self._mac("session", payload)):
            return None
        try:
            fields = json.loads(payload)
            owner_id, expires, tag = int(fields["o"]), int(fields["e"]), str(fields["t"])
        except (ValueError, KeyError, TypeError):
            return None
        if expires < time.time():
            return None
        digests = session.scalars(
            select(ApiToken.token_sha256).where(ApiToken.owner_id == owner_id)
        )
        if not any(hmac.compare_digest(self._token_tag(d), tag) for d in digests):
            return None
        owner = session.get(Owner, owner_id)
        return Viewer(id=owner.id, name=owner.name) if owner is not None else None
