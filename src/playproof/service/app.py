"""The FastAPI application of the proof service.

>>> from playproof.service.settings import ServiceSettings
>>> app = create_app(ServiceSettings(database_url="sqlite://"))
>>> paths = app.openapi()["paths"]
>>> "/api/v1/runs" in paths and "/api/v1/verifier/runs/{run_id}" in paths
True
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from concurrent.futures import Executor
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from playproof.errors import ServiceError
from playproof.exec import abandon
from playproof.service.db import (
    InlineReads,
    current_revision,
    head_revision,
    make_engine,
    make_inline_engine,
    session_factory,
    upgrade,
)
from playproof.service.deployments import routes as deployment_routes
from playproof.service.deployments.services import registry_targets, sync_targets
from playproof.service.grades import routes as grade_routes
from playproof.service.headers import SecurityHeaders
from playproof.service.leaderboards import routes as leaderboard_routes
from playproof.service.log import routes as log_routes
from playproof.service.log.services import load_log_key
from playproof.service.problems import Problem, answer_problem, install_problem_handlers
from playproof.service.proofs import routes as proof_routes
from playproof.service.proofs.fast import StoredProofReads
from playproof.service.runs import routes as run_routes
from playproof.service.runs.tasks import ReplayQueue, make_replay_pool
from playproof.service.settings import MAX_REQUEST_BYTES, ServiceSettings
from playproof.service.state import ServiceState
from playproof.service.web import install_web

__all__ = ["create_app", "prepare_database"]

UPLOAD_PATHS = frozenset({"/api/v1/runs", "/api/v1/grades"})
"""Routes that bound their own (larger) bodies."""


class BodyTooLarge(StarletteHTTPException):
    """A body that streamed past ``MAX_REQUEST_BYTES`` (raised from inside ``receive``).

    An HTTP exception, so that FastAPI's body parsing lets it through as it is
    (it turns other errors into 400) and the problem handlers answer 413.
    """

    def __init__(self) -> None:
        super().__init__(413, f"a body is at most {MAX_REQUEST_BYTES} bytes here")


class DeclaredBodyLimit:
    """Refuse (413) a request whose body is over ``MAX_REQUEST_BYTES``.

    A declared length over the bound is refused unread; a body without one
    (chunked) is counted as it streams, and refused as soon as it passes the
    bound, before any route sees it whole. Uploads bound themselves (a larger
    limit, read in chunks). A plain ASGI middleware: Starlette's
    ``BaseHTTPMiddleware`` ran every request through a task group and a
    response stream, which cost more than most routes.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UPLOAD_PATHS:
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                refusal = None
                if not value.isdigit():
                    refusal = Problem(400, "bad-content-length", "Content-Length is not a number")
                elif int(value) > MAX_REQUEST_BYTES:
                    refusal = Problem(413, "too-large", BodyTooLarge().detail)
                if refusal is not None:
                    await _refuse(refusal, scope, receive, send)
                    return
                break
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_REQUEST_BYTES:
                    raise BodyTooLarge
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, sending)
        except BodyTooLarge as exc:
            if started:  # too late for an answer: the connection is closed on it
                raise
            await _refuse(Problem(413, "too-large", str(exc.detail)), scope, receive, send)


async def _refuse(problem: Problem, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer ``problem`` as the app's own handler would (this middleware runs before it)."""
    answer = await answer_problem(Request(scope, receive), problem)
    await answer(scope, receive, send)


class HeadAsGet:
    """Answer ``HEAD`` as the ``GET`` of the same path would, headers only (RFC 9110 9.3.2).

    Routes declare ``GET``; a ``HEAD`` reaches them as a ``GET`` and its body is
    dropped here, so a ``HEAD`` costs what the ``GET`` costs and never writes.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def headers_only(message: Message) -> None:
            nonlocal ended
            if message["type"] != "http.response.body":
                await send(message)
            elif not ended:
                ended = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app({**scope, "method": "GET"}, receive, headers_only)


def prepare_database(settings: ServiceSettings) -> None:
    """Migrate an embedded SQLite database; refuse a server database that is behind."""
    engine = make_engine(settings.database_url)
    try:
        if engine.dialect.name == "sqlite":
            upgrade(engine)
            return
        if current_revision(engine) != head_revision():
            raise ServiceError(
                "the database is not at the newest schema: run playproof db upgrade "
                "--database-url URL first"
            )
    finally:
        engine.dispose()


def create_app(settings: ServiceSettings, *, executor: Executor | None = None) -> FastAPI:
    """The app serving ``settings``; replays go to ``executor`` (default: its own pool).

    The database must be migrated already (:func:`prepare_database`). On start
    the app refreshes the targets table from the registry and resumes every
    run and grade left pending.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        log_key = load_log_key(settings.log_key_file) if settings.log_key_file else None
        engine = make_engine(settings.database_url)
        sessions = session_factory(engine)
        with sessions() as session:
            sync_targets(session, registry_targets())
        pool = executor if executor is not None else make_replay_pool(settings.replay_workers)
        queue = ReplayQueue(
            sessions, pool, delay_s=settings.replay_delay_s, log=log_key is not None
        )
        inline = InlineReads(make_inline_engine(settings.database_url))
        inline.open()
        app.state.service = ServiceState(settings, engine, sessions, queue, log_key, inline)
        queue.resume()
        try:
            yield
        finally:
            queue.close()
            if executor is None:
                if queue.in_flight() > 0:
                    # A replay under way is not waited for (it may never finish): its
                    # process is ended, and its run stays pending for the next start.
                    abandon(pool)
                else:
                    pool.shutdown(wait=True, cancel_futures=True)
            inline.dispose()
            engine.dispose()

    app = FastAPI(
        title="playproof proof service",
        summary="Signed run records in, replayed verdicts and public proof documents out.",
        lifespan=lifespan,
    )
    install_problem_handlers(app)

    app.add_middleware(DeclaredBodyLimit)
    app.add_middleware(StoredProofReads)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SecurityHeaders)  # added last: it runs first, on every answer
    app.include_router(run_routes.router)
    app.include_router(proof_routes.router)
    app.include_router(log_routes.router)
    app.include_router(deployment_routes.router)
    app.include_router(leaderboard_routes.router)
    app.include_router(grade_routes.router)
    install_web(app, settings)
    return app
