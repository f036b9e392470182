"""Problem documents (RFC 9457): every refusal is ``{type, title, status, detail}``.

Bad input is classified where it enters (a route or a request model) and
raised as :class:`Problem`; the handlers here only render it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "Problem",
    "ProblemDocument",
    "answer_problem",
    "install_problem_handlers",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_BASE = "https://playproof.dev/problems/"
MAX_DETAIL_CHARS = 1024
"""A detail may quote what the client sent; it is cut, never echoed whole."""

_TITLES = {
    400: "bad request",
    401: "unauthorized",
    403: "forbidden",
    404: "not found",
    405: "method not allowed",
    409: "conflict",
    411: "length required",
    413: "content too large",
    415: "unsupported media type",
    422: "unprocessable content",
    503: "service unavailable",
}


class ProblemDocument(BaseModel):
    """The body of every error response."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: str
    title: str
    status: int
    detail: str


class Problem(Exception):
    """A refusal with an HTTP status, a problem type slug and a one-line detail."""

    def __init__(
        self, status: int, kind: str, detail: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.kind = kind
        self.detail = detail[:MAX_DETAIL_CHARS]
        self.headers = dict(headers or {})
        """Headers the response must carry (``Allow`` on a 405)."""

    def document(self) -> ProblemDocument:
        """The RFC 9457 document of this refusal."""
        return ProblemDocument(
            type=PROBLEM_BASE + self.kind,
            title=_TITLES.get(self.status, "error"),
            status=self.status,
            detail=self.detail,
        )

    def response(self) -> JSONResponse:
        """The response carrying the document."""
        headers = dict(self.headers)
        if self.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        return JSONResponse(
            self.document().model_dump(),
            status_code=self.status,
            media_type=PROBLEM_MEDIA_TYPE,
            headers=headers,
        )


def _validation_detail(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request does not validate"


async def _on_problem(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Problem)
    return exc.response()


async def _on_validation(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return Problem(422, "invalid-request", _validation_detail(exc)).response()


async def _on_http(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    kind = {404: "not-found", 405: "method-not-allowed", 413: "too-large"}.get(
        exc.status_code, "http-error"
    )
    return Problem(exc.status_code, kind, str(exc.detail), exc.headers).response()


UNSTORABLE = (
    "the request holds a value the database cannot store or look up "
    "(a NUL character in a text, or a number out of range)"
)


async def answer_problem(request: Request, problem: Problem) -> Response:
    """``problem`` answered by whatever handles a Problem in ``request``'s app now.

    On an app with the web interface, a web page's path gets an error page and
    an API path a problem document; on a bare app, the document.
    """
    handler = getattr(request.app, "exception_handlers", {}).get(Problem, _on_problem)
    answer = handler(request, problem)
    if inspect.isawaitable(answer):
        answer = await answer
    assert isinstance(answer, Response)
    return answer


async def _on_unstorable(request: Request, exc: Exception) -> Response:
    """A value PostgreSQL refuses (a NUL in a text, a number past its column): a 422."""
    assert isinstance(exc, DataError)
    return await answer_problem(request, Problem(422, "unstorable-value", UNSTORABLE))


def install_problem_handlers(app: FastAPI) -> None:
    """Render refusals, validation errors and routing errors as problem documents.

    A value the database refuses (SQLAlchemy's ``DataError``) is the request's
    fault, never a 500: a 422 naming it.
    """
    app.add_exception_handler(Problem, _on_problem)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(DataError, _on_unstorable)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries saying these statuses carry a problem document."""
    return {
        status: {
            "model": ProblemDocument,
            "description": _TITLES.get(status, "error"),
            "content": {PROBLEM_MEDIA_TYPE: {}},
        }
        for status in statuses
    }
