"""HTTP side of the owners domain: bearer-token authentication."""

from __future__ import annotations

from fastapi import Request

from playproof.service.db import read_connection
from playproof.service.owners.services import MAX_TOKEN_CHARS, TokenOwner, owner_for_token
from playproof.service.problems import Problem
from playproof.service.state import service_state

__all__ = [
    "AuthenticatedOwner",
    "admin_owner",
    "authenticated_owner",
    "authenticated_uploader",
    "optional_owner",
]


AuthenticatedOwner = TokenOwner
"""The owner a request's bearer token belongs to."""


def _owner(request: Request, *, keys: bool) -> AuthenticatedOwner:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem(401, "unauthenticated", "send an API token as Authorization: Bearer TOKEN")
    token = token.strip()
    if len(token) > MAX_TOKEN_CHARS:
        raise Problem(401, "unauthenticated", "the API token is not valid")
    with read_connection(service_state(request).engine) as connection:
        owner = owner_for_token(connection, token, keys=keys)
    if owner is None:
        raise Problem(401, "unauthenticated", "the API token is not valid")
    return owner


def authenticated_owner(request: Request) -> AuthenticatedOwner:
    """The owner of the request's ``Authorization: Bearer`` token; 401 otherwise."""
    return _owner(request, keys=False)


def authenticated_uploader(request: Request) -> AuthenticatedOwner:
    """As :func:`authenticated_owner`, with the owner's signer keys read in the same query."""
    return _owner(request, keys=True)


def optional_owner(request: Request) -> AuthenticatedOwner | None:
    """The owner of the request's bearer token, None without one; 401 for a bad token."""
    if not request.headers.get("authorization"):
        return None
    return authenticated_owner(request)


def admin_owner(request: Request) -> AuthenticatedOwner:
    """An administrator's token; 401 without a valid token, 403 for an owner who is not one."""
    owner = authenticated_owner(request)
    if not owner.admin:
        raise Problem(403, "admin-only", "only an administrator may do this")
    return owner
