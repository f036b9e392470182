"""HTTP side of the owners domain: bearer-token authentication."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from playproof.service.db import read_only
from playproof.service.owners.services import MAX_TOKEN_CHARS, owner_for_token
from playproof.service.problems import Problem
from playproof.service.state import service_state

__all__ = ["AuthenticatedOwner", "authenticated_owner"]


@dataclass(frozen=True)
class AuthenticatedOwner:
    """The owner a request's bearer token belongs to."""

    id: int
    name: str


def authenticated_owner(request: Request) -> AuthenticatedOwner:
    """The owner of the request's ``Authorization: Bearer`` token; 401 otherwise."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem(401, "unauthenticated", "send an API token as Authorization: Bearer TOKEN")
    token = token.strip()
    if len(token) > MAX_TOKEN_CHARS:
        raise Problem(401, "unauthenticated", "the API token is not valid")
    with read_only(service_state(request).sessions) as session:
        owner = owner_for_token(session, token)
        if owner is None:
            raise Problem(401, "unauthenticated", "the API token is not valid")
        return AuthenticatedOwner(id=owner.id, name=owner.name)
