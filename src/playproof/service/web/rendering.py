"""Templates, the web state of one app, and error pages a person understands.

Autoescaping is on for every template: a record's values (an actor id, an
input word) are data and are shown as text, never as markup.
"""

from __future__ import annotations

import inspect
import logging
import re
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.exceptions import HTTPException as StarletteHTTPException

from playproof.service.headers import PAGE_POLICY
from playproof.service.problems import Problem
from playproof.service.proofs.services import verifier_version
from playproof.service.settings import ServiceSettings
from playproof.service.web.records import ParsedRecords
from playproof.service.web.signin import CSRF_COOKIE, SessionKeys, Viewer, load_session_key

__all__ = [
    "FRAMES_FOLDER",
    "SESSION_KEY_FILE",
    "STATIC",
    "TEMPLATES",
    "WebState",
    "PAGE_CACHE",
    "data_folder",
    "install_web",
    "render",
    "web_state",
]

log = logging.getLogger("playproof.service")

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
FRAMES_FOLDER = "frames"
"""Regenerated replay frames are cached in this folder of the service's data folder."""
SESSION_KEY_FILE = "web-session.key"
"""The web sessions' HMAC key, in the service's data folder (mode 0600)."""

_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters that reorder the text around them (Unicode's explicit bidirectional formatting)."""


def _shown(value: Any) -> Any:
    """A value as a page prints it: bidirectional controls in text become visible code points.

    A record's strings are the uploader's; a right-to-left override in an actor
    id would otherwise turn the heading around it backwards and could make the
    page say something the record does not. Markup (made by the templates
    themselves from values already passed through here) is left as it is.
    """
    if isinstance(value, str) and not isinstance(value, Markup) and _BIDI_CONTROLS.search(value):
        return _BIDI_CONTROLS.sub(lambda m: f"<U+{ord(m.group()):04X}>", value)
    return value


_ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=_shown,
)

_ERROR_TEXT = {
    400: ("The request is not one this page understands", "Go back and try again."),
    401: ("Sign in to see this", "This belongs to its owner: sign in with the owner's API token."),
    403: (
        "This is not yours to see",
        "Only its owner may see it, or the form was not sent from this site.",
    ),
    404: ("Nothing here", "There is no page, target or run at this address."),
    405: ("Not like that", "This address does not take that kind of request."),
    409: ("This cannot be shown", "The server cannot show this as asked; the detail says why."),
    413: ("That is too large", "The request is over the size this page accepts."),
    422: (
        "The request does not make sense",
        "A value in the address is out of range or malformed.",
    ),
}


PAGE_CACHE = "private, no-store"
"""The Cache-Control of every page and of an owner-only run's downloads.

A page names its viewer and carries their CSRF token; an owner-only run is its
owner's alone: no cache keeps them, so none hands one visitor's copy to another.
"""


def data_folder(settings: ServiceSettings) -> Path:
    """The service's data folder: the one holding the log key (``.playproof`` by default)."""
    if settings.log_key_file is not None:
        return settings.log_key_file.parent
    return Path.cwd() / ".playproof"


class WebState:
    """What the pages of one app need: the session keys, the frame cache, parsed records.

    The session key is read (or made) on first use, so building an app
    writes nothing. It is read again whenever its file changes (replaced,
    rewritten or deleted): replacing the file ends every session at once,
    without a restart.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.frames_cache = folder / FRAMES_FOLDER
        self.records = ParsedRecords()
        self._keys: SessionKeys | None = None
        self._stamp: tuple[int, int, int, int] | None = None
        self._lock = threading.Lock()

    @property
    def keys(self) -> SessionKeys:
        """The session and CSRF keys of this service, from the key file as it is now."""
        path = self.folder / SESSION_KEY_FILE
        with self._lock:
            stamp = _file_stamp(path)
            if self._keys is None or stamp is None or stamp != self._stamp:
                self._keys = SessionKeys(load_session_key(path))
                self._stamp = _file_stamp(path)
            return self._keys


def _file_stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What tells one version of a file from another (None: there is no file)."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_size)


def web_state(request: Request) -> WebState:
    """The web state of the app serving ``request``."""
    state = request.app.state.web
    assert isinstance(state, WebState)
    return state


def render(request: Request, template: str, viewer: Viewer | None, **context: Any) -> Response:
    """A page from ``template``; hands out a CSRF cookie to a visitor who has none."""
    keys = web_state(request).keys
    csrf = request.cookies.get(CSRF_COOKIE)
    fresh = not keys.csrf_valid(csrf)
    if fresh:
        csrf = keys.new_csrf()
    body = _ENVIRONMENT.get_template(template).render(
        viewer=viewer, csrf=csrf, path=request.url.path, version=verifier_version(), **context
    )
    # A page names its viewer and carries their CSRF token: never one for a shared cache.
    response = HTMLResponse(body, headers={"Cache-Control": PAGE_CACHE})
    if fresh and csrf is not None:
        response.set_cookie(
            CSRF_COOKIE,
            csrf,
            httponly=True,
            secure=request.url.scheme == "https",
            samesite="strict",
            path="/",
        )
    response.headers["Content-Security-Policy"] = PAGE_POLICY
    return response


def _is_api(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path in {"/api", "/openapi.json", "/docs", "/redoc"}


def _error_page(request: Request, status: int, detail: str) -> Response:
    heading, advice = _ERROR_TEXT.get(status, ("Something went wrong", "Try again later."))
    body = _ENVIRONMENT.get_template("error.html").render(
        viewer=None,
        csrf=None,
        path=request.url.path,
        version=verifier_version(),
        status=status,
        heading=heading,
        advice=advice,
        detail=detail,
        signin=status == 401,
    )
    return HTMLResponse(body, status_code=status, headers={"Content-Security-Policy": PAGE_POLICY})


async def _delegate(handler: Any, request: Request, exc: Exception) -> Response:
    """Hand an API path's error to the problem-document handler it had before."""
    answer = handler(request, exc)
    if inspect.isawaitable(answer):
        answer = await answer
    assert isinstance(answer, Response)
    return answer


def install_web(app: FastAPI, settings: ServiceSettings) -> None:
    """Add the web pages, their static files and HTML error pages to ``app``.

    API paths keep their problem documents; every other path gets a page a
    person reads, never a stack trace.
    """
    from playproof.service.web.routes import router

    app.state.web = WebState(data_folder(settings))
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    on_problem = app.exception_handlers[Problem]
    on_http = app.exception_handlers[StarletteHTTPException]
    on_validation = app.exception_handlers[RequestValidationError]

    async def problem_page(request: Request, exc: Exception) -> Response:
        if _is_api(request):
            return await _delegate(on_problem, request, exc)
        assert isinstance(exc, Problem)
        page = _error_page(request, exc.status, exc.detail)
        page.headers.update(exc.headers)  # WWW-Authenticate on a 401, Retry-After on a 503
        return page

    async def http_page(request: Request, exc: Exception) -> Response:
        if _is_api(request):
            return await _delegate(on_http, request, exc)
        assert isinstance(exc, StarletteHTTPException)
        page = _error_page(request, exc.status_code, str(exc.detail))
        page.headers.update(exc.headers or {})  # Allow on a 405
        return page

    async def validation_page(request: Request, exc: Exception) -> Response:
        if _is_api(request):
            return await _delegate(on_validation, request, exc)
        return _error_page(request, 422, "a value in the address is out of range or malformed")

    async def crash_page(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        if _is_api(request):
            return PlainTextResponse("Internal Server Error", status_code=500)
        return _error_page(request, 500, "the server could not build this page")

    app.add_exception_handler(Problem, problem_page)
    app.add_exception_handler(StarletteHTTPException, http_page)
    app.add_exception_handler(RequestValidationError, validation_page)
    app.add_exception_handler(Exception, crash_page)
