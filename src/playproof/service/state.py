"""What one running service holds, and the request dependencies that reach it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from fastapi import Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from playproof.service.db import InlineReads, read_only
from playproof.service.log.services import LogCache
from playproof.service.proofs.cache import ProofCache
from playproof.service.runs.tasks import ReplayQueue
from playproof.service.settings import ServiceSettings
from playproof.sign import SigningKey

__all__ = ["ServiceState", "read_session", "service_state"]


@dataclass
class ServiceState:
    """The settings, the database, the replay queue and the log key of one service.

    ``inline`` is the event loop's own connection (anonymous reads of stored
    proof documents); ``log_cache`` and ``proof_cache`` are the in-process Merkle tree and the
    serialized proof documents of finished runs; ``packaged_targets`` spares
    uploads a query for a target already seen packaged.
    """

    settings: ServiceSettings
    engine: Engine
    sessions: sessionmaker[Session]
    queue: ReplayQueue
    log_key: SigningKey | None
    inline: InlineReads = field(default_factory=lambda: InlineReads(None))
    """The event loop's own connection, for anonymous proof reads."""
    log_cache: LogCache = field(default_factory=LogCache)
    proof_cache: ProofCache = field(default_factory=ProofCache)
    packaged_targets: dict[str, bool] = field(default_factory=dict)
    """Targets the database is known to package, with whether each is calibrated (a row in
    ``targets`` is never removed, and is refreshed only when the service starts)."""


def service_state(request: Request) -> ServiceState:
    """The state of the app serving ``request``."""
    state = request.app.state.service
    assert isinstance(state, ServiceState)
    return state


def read_session(request: Request) -> Iterator[Session]:
    """A session for routes that only read: it is always rolled back, never committed."""
    with read_only(service_state(request).sessions) as session:
        yield session
