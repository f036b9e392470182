"""Every route of the service, given hostile path values, query values, credentials and
bodies, answers below 500.

The API routes are read from the app's own OpenAPI document, so a route added
later is swept too; the web pages (not in that document) are listed here. Each
path parameter takes, in turn, the id of a stored run (so the route gets past
its lookup) and values a hostile client would send; each query parameter
takes out-of-range, non-numeric and oversized values; requests go without
credentials, with malformed ones, and with a real token.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import httpx
import pytest

from playproof.core.record import Actor, RunRecord
from playproof.service.runs.models import Run
from playproof.sign import SigningKey

from .conftest import Service

HOSTILE = [
    "%00",
    "..%2F..%2Fetc%2Fpasswd",
    "a" * 3000,
    "%E2%80%AE%F0%9F%92%A5",
    "%FF%FE",
    "-1",
    "1e309",
    "NaN",
    "0x10",
    "%20",
    "%0D%0AX-Injected:%201",
    "%5B%5D",
    "99999999999999999999999999",
]
"""Raw (already percent-encoded) values for path segments and query values."""
WEB_PAGES = {
    "/": [],
    "/targets": [],
    "/targets/{name}/leaderboard": ["page", "sort"],
    "/targets/{name}/contract.json": [],
    "/challenges/{challenge_id}": ["page", "sort"],
    "/grades": ["page"],
    "/grades/{grade_id}": ["page"],
    "/runs/{run_id}": ["page"],
    "/runs/{run_id}/record.json": [],
    "/runs/{run_id}/proof.json": [],
    "/runs/{run_id}/replay": ["turn"],
    "/runs/{run_id}/frames/{turn}": [],
    "/signin": ["next"],
    "/me": [],
}
CREDENTIALS: list[dict[str, str]] = [
    {},
    {"authorization": "Bearer " + "a" * 5000},
    {"authorization": "Basic Zm9vOmJhcg=="},
    {"authorization": "Bearer"},
    {"cookie": "pp_session=" + "%" * 300 + "; pp_csrf=x.y.z"},
]
BODIES = [
    b"",
    b"{",
    b"[]",
    b'{"a": NaN}',
    b'{"a": 1e999999}',
    b"[" * 3000 + b"]" * 3000,
    bytes(range(256)),
    b'{"target": "' + b"x" * 60_000 + b'"}',
    b'{"target": "native/2048\\u0000"}',
    b'{"target": "native/2048", "seeds": [99999999999999999999999], "budget_usd": 1e308}',
]


def _api_routes(service: Service) -> list[tuple[str, str, list[str]]]:
    """(method, path template, query parameter names) of every API route."""
    schema = service.client.app.openapi()  # type: ignore[attr-defined]
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            found.append((method.upper(), path, names))
    assert len(found) >= 15  # the sweep reads the real route table
    return found


def _fill(template: str, value: str) -> str:
    return re.sub(r"\{[^}]+\}", value, template)


def _check(answer: httpx.Response) -> None:
    request = answer.request
    assert answer.status_code < 500, f"{request.method} {request.url}: {answer.text[:300]}"


@pytest.fixture
def stored(service: Service, signer: SigningKey, record_2048: RunRecord) -> tuple[str, str]:
    token = service.owner("alice", (signer.verifying_key,))
    return service.upload_verified(signer, record_2048, token), token


def test_every_route_answers_hostile_values_below_500(
    service: Service, stored: tuple[str, str]
) -> None:
    run_id, _token = stored
    client = service.client
    routes = [*_api_routes(service), *(("GET", p, q) for p, q in WEB_PAGES.items())]
    for method, template, queries in routes:
        for value in [run_id, *HOSTILE]:
            url = _fill(template, value)
            if method == "GET":
                _check(client.get(url))
                for name, hostile in itertools.product(queries, HOSTILE):
                    _check(client.get(f"{url}?{name}={hostile}"))
            else:
                _check(client.request(method, url, content=b"{}"))


def test_every_route_answers_hostile_credentials_and_bodies_below_500(
    service: Service, stored: tuple[str, str]
) -> None:
    run_id, token = stored
    client = service.client
    credentials: list[dict[str, Any]] = [*CREDENTIALS, {"authorization": f"Bearer {token}"}]
    for method, template, _queries in _api_routes(service):
        url = _fill(template, run_id)
        for headers in credentials:
            if method == "GET":
                _check(client.get(url, headers=headers))
                continue
            for body in BODIES:
                _check(client.request(method, url, content=body, headers=headers))
    for headers in credentials:
        for path in ("/signin", "/signout"):
            for body in BODIES:
                form = {"content-type": "application/x-www-form-urlencoded", **headers}
                _check(client.post(path, content=body, headers=form))
        _check(client.get("/me", headers=headers))


def test_a_record_whose_actor_holds_a_nul_is_stored_alike_on_either_database(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    """PostgreSQL refuses NUL in a text column; the record is valid, so the service
    stores it (the board's agent column shows U+FFFD) and verifies it."""
    token = service.owner("alice", (signer.verifying_key,))
    odd = record_2048.model_copy(update={"actor": Actor(kind="python", id="a\x00b")})
    run_id = service.upload_verified(signer, odd, token)
    with service.sessions() as session:
        assert session.get(Run, run_id).agent == "python:a\ufffdb"
    page = service.client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    board = service.client.get("/api/v1/leaderboards/native/2048")
    assert board.status_code == 200


def test_a_nul_in_a_looked_up_name_is_a_422_problem_or_a_page(service: Service) -> None:
    api = service.client.get("/api/v1/leaderboards/native/%00")
    assert api.status_code in (404, 422)
    assert api.headers["content-type"] == "application/problem+json"
    page = service.client.get("/targets/%00/leaderboard")
    assert page.status_code in (404, 422)
    assert page.headers["content-type"].startswith("text/html")
