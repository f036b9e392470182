"""Anonymous reads of stored proof documents, answered before the framework's routing.

The proof document is the service's hottest read: anyone may fetch a public
run's, and a finished run's document is stored with its verdict
(:mod:`playproof.service.proofs.cache`), so serving it is one query and a
byte concatenation; the framework's routing, dependency solving, thread hop
and response classes cost more than that (with 8 clients reading, skipping
them took about a quarter off the server's CPU per read). This middleware
answers exactly one kind of request itself: a
``GET`` of ``/api/v1/verifier/runs/{id}`` without credentials, for a run
whose stored document is current. It reads through the same function as the
route (:func:`~playproof.service.proofs.cache.stored_proof`), so the answer
is the route's, byte for byte; everything else (a token, a run without a
stored document, a refusal, another path or method) goes to the app, which
decides as it always did.

On PostgreSQL the read is made on the event loop's own thread when it can
be, on a connection of its own (:class:`~playproof.service.db.InlineReads`;
SQLite reads stay on worker threads). Handing it to a worker thread cost
more than the read: with 8 clients on 2 cores, the worker threads
queued for the interpreter lock behind the loop, which added up to a switch
interval (5 ms) to a read's latency, and the hops themselves cost about a
quarter of the server's CPU per read. A read on the loop blocks it for one
indexed query: the connection's statements are cancelled after
``INLINE_STATEMENT_TIMEOUT_MS``, it is used only while open and idle (it is
opened on a worker thread), at most a few missing log leaves are read on
the loop, and after any database error reads go to worker threads for
``INLINE_REST_S``.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Receive, Scope, Send

from playproof.service.db import read_connection
from playproof.service.problems import Problem
from playproof.service.proofs.cache import LogBehind, stored_proof
from playproof.service.runs.services import RUN_ID
from playproof.service.state import ServiceState

__all__ = ["INLINE_CATCH_UP", "PROOF_PATH", "StoredProofReads"]

PROOF_PATH = "/api/v1/verifier/runs/"
"""Where the public proof documents are (the route's path without its run id)."""
INLINE_CATCH_UP = 64
"""The most new log leaves a read on the loop may load (the process's copy of the log is
further behind after a restart: that read goes to a worker thread)."""


def _read(state: ServiceState, run_id: str) -> bytes | Problem | None:
    """The stored document of ``run_id`` for an anonymous reader, a refusal, or None."""
    try:
        with read_connection(state.engine) as connection:
            return stored_proof(connection, run_id, None, state.log_key, state.log_cache)
    except Problem as problem:  # unknown run, or not public: answered as the route does
        return problem


def _read_inline(state: ServiceState, run_id: str) -> bytes | Problem | None:
    """:func:`_read` on the loop's own connection.

    Raises :class:`LogBehind` when the read is for a worker thread (the
    connection is not ready, or the log has too much to catch up), and
    :class:`~sqlalchemy.exc.SQLAlchemyError` when the read failed.
    """
    engine = state.inline.usable()
    if engine is None:
        raise LogBehind("the loop's connection is not ready")
    with engine.connect() as connection:
        try:
            return stored_proof(
                connection, run_id, None, state.log_key, state.log_cache, catch_up=INLINE_CATCH_UP
            )
        except Problem as problem:
            return problem


class StoredProofReads:
    """ASGI middleware serving anonymous ``GET``s of stored proof documents (see module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if (
            scope.get("method") != "GET"
            or not path.startswith(PROOF_PATH)
            or any(name == b"authorization" for name, _ in scope["headers"])
        ):
            await self.app(scope, receive, send)
            return
        state = getattr(getattr(scope.get("app"), "state", None), "service", None)
        if not isinstance(state, ServiceState):  # not started: the app answers
            await self.app(scope, receive, send)
            return
        run_id = path[len(PROOF_PATH) :]
        if not RUN_ID.fullmatch(run_id):  # not a run id (or another path): the app answers
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        try:
            found = _read_inline(state, run_id)
        except (LogBehind, SQLAlchemyError) as exc:
            if isinstance(exc, SQLAlchemyError):
                state.inline.failed()
            if state.inline.needs_opening():
                loop.run_in_executor(None, state.inline.open)
            found = await loop.run_in_executor(None, _read, state, run_id)
        if found is None:  # no current stored document: the route builds it
            await self.app(scope, receive, send)
        elif isinstance(found, Problem):
            await found.response()(scope, receive, send)
        else:
            headers = [
                (b"content-length", str(len(found)).encode("ascii")),
                (b"content-type", b"application/json"),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": found})
