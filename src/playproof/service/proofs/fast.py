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
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Receive, Scope, Send

from playproof.service.db import read_connection
from playproof.service.problems import Problem
from playproof.service.proofs.cache import stored_proof
from playproof.service.runs.services import RUN_ID
from playproof.service.state import ServiceState

__all__ = ["PROOF_PATH", "StoredProofReads"]

PROOF_PATH = "/api/v1/verifier/runs/"
"""Where the public proof documents are (the route's path without its run id)."""


def _read(state: ServiceState, run_id: str) -> bytes | Problem | None:
    """The stored document of ``run_id`` for an anonymous reader, a refusal, or None."""
    try:
        with read_connection(state.engine) as connection:
            return stored_proof(connection, run_id, None, state.log_key, state.log_cache)
    except Problem as problem:  # unknown run, or not public: answered as the route does
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
        found = await asyncio.get_running_loop().run_in_executor(None, _read, state, run_id)
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
