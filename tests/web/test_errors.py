"""Error pages in process: a page for people on web paths, problem documents on the API."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("jinja2", reason="the web pages need the server extra")

from playproof.service.app import create_app, prepare_database
from playproof.service.problems import Problem
from playproof.service.settings import ServiceSettings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient


class Boom(RuntimeError):
    """Stands for a defect deep in a page."""


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = ServiceSettings(
        database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", log_key_file=tmp_path / "log.key"
    )
    prepare_database(settings)
    app = create_app(settings)

    def broken() -> None:
        raise Boom("secret internals /srv/private")

    def busy() -> None:
        raise Problem(503, "busy", "come back later", {"Retry-After": "30"})

    app.add_api_route("/broken", broken)
    app.add_api_route("/api/v1/broken", broken)
    app.add_api_route("/busy", busy)
    with TestClient(app, raise_server_exceptions=False) as running:
        yield running


def test_a_defect_on_a_page_is_a_page_without_internals(client: TestClient) -> None:
    answer = client.get("/broken")
    assert answer.status_code == 500
    assert "text/html" in answer.headers["content-type"]
    assert "Boom" not in answer.text
    assert "/srv/private" not in answer.text
    assert "Traceback" not in answer.text


def test_a_defect_on_the_api_stays_terse(client: TestClient) -> None:
    answer = client.get("/api/v1/broken")
    assert answer.status_code == 500
    assert "/srv/private" not in answer.text


def test_a_refusal_on_a_page_keeps_its_headers(client: TestClient) -> None:
    answer = client.get("/busy")
    assert answer.status_code == 503
    assert "text/html" in answer.headers["content-type"]
    assert answer.headers["retry-after"] == "30"


def test_a_bad_query_on_a_page_is_a_422_page(client: TestClient) -> None:
    answer = client.get("/targets/native/2048/leaderboard?page=0")
    assert answer.status_code == 422
    assert "text/html" in answer.headers["content-type"]


def test_the_api_keeps_problem_documents(client: TestClient) -> None:
    for path in ("/api", "/api/", "/api/v1/nothing-here"):
        missing = client.get(path)
        assert missing.status_code == 404
        assert missing.headers["content-type"] == "application/problem+json", path
    answer = client.get("/api/v1/leaderboards/native/2048?limit=0")
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"


def test_building_the_app_writes_no_session_key(tmp_path: Path) -> None:
    settings = ServiceSettings(database_url="sqlite://", log_key_file=tmp_path / "log.key")
    create_app(settings)
    assert not (tmp_path / "web-session.key").exists()
