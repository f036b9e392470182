"""Hostile and malformed requests get 4xx problem documents, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from playproof.service.settings import MAX_REQUEST_BYTES
from playproof.sign import SigningKey

from .conftest import Service

PROBLEM_KEYS = {"type", "title", "status", "detail"}


def assert_problem(response: httpx.Response, status: int) -> dict[str, object]:
    """``response`` is a problem document with ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert set(body) == PROBLEM_KEYS
    assert body["status"] == status
    assert isinstance(body["detail"], str)
    assert body["detail"]
    return dict(body)


@pytest.fixture
def token(service: Service, signer: SigningKey) -> str:
    return service.owner("alice", (signer.verifying_key,))


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"not json at all",
        b"[]",
        b"null",
        b'"a string"',
        b"\xff\xfe\x00",
        b'{"payload": 1, "payloadType": "x", "signatures": []}',
        b'{"payload": "", "payloadType": "x", "signatures": "many"}',
        b'{"payload": "", "payloadType": "x", "signatures": [{"sig": "AA"}], "extra": 1}',
        b'{"payload": "", "payloadType": "x", "signatures": [{"sig": "AA", "unknown": 1}]}',
        b'{"payload": "!!!", "payloadType": "x", "signatures": [{"sig": "AA"}]}',
        b'{"payload": "", "payload": "", "payloadType": "x", "signatures": [{"sig": "AA"}]}',
        b'{"payload": NaN, "payloadType": "x", "signatures": [{"sig": "AA"}]}',
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_malformed_uploads_are_422_problems(service: Service, token: str, body: bytes) -> None:
    problem = assert_problem(service.upload(body, token), 422)
    assert str(problem["type"]).rsplit("/", 1)[-1] in {"envelope-well-formed", "signature-valid"}


def test_an_oversized_upload_is_refused_by_its_declared_length(
    service: Service, token: str
) -> None:
    limit = service.client.app.state.service.settings.max_upload_bytes  # type: ignore[attr-defined]
    response = service.client.post(
        "/api/v1/runs",
        content=b"x",
        headers={"Authorization": f"Bearer {token}", "Content-Length": str(limit + 1)},
    )
    assert_problem(response, 413)


def test_an_oversized_chunked_upload_is_refused_before_the_end(
    service: Service, token: str
) -> None:
    limit = service.client.app.state.service.settings.max_upload_bytes  # type: ignore[attr-defined]
    sent = 0
    chunk = b" " * (1 << 20)

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        while sent <= 4 * limit:
            sent += len(chunk)
            yield chunk

    response = service.client.post(
        "/api/v1/runs", content=chunks(), headers={"Authorization": f"Bearer {token}"}
    )
    assert_problem(response, 413)


def test_a_bad_content_length_is_a_400(service: Service, token: str) -> None:
    response = service.client.post(
        "/api/v1/runs",
        content=b"{}",
        headers={"Authorization": f"Bearer {token}", "Content-Length": "-5"},
    )
    assert_problem(response, 400)


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic abc",
        "Bearer nope",
        "Bearer " + "x" * 5000,
        "Bearer pp_%00;",
    ],
)
def test_uploads_without_a_valid_token_are_401(
    service: Service, signed_2048: bytes, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = service.client.post("/api/v1/runs", content=signed_2048, headers=headers)
    assert_problem(response, 401)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs/0123456789abcdef0123456789abcdef",
        "/api/v1/runs/" + "a" * 500,
        "/api/v1/runs/%00",
        "/api/v1/verifier/runs/%00%00",
        "/api/v1/cats/replay_integrity/%00",
        "/api/v1/verifier/runs/nope",
        "/api/v1/cats/replay_integrity/nope",
        "/api/v1/cats/no_such_group/nope",
        "/api/v1/nowhere",
    ],
)
def test_unknown_ids_and_routes_are_404(service: Service, path: str) -> None:
    assert_problem(service.client.get(path), 404)


def test_an_unknown_check_group_of_a_known_run_is_404(
    service: Service, token: str, signed_2048: bytes
) -> None:
    run_id = service.upload(signed_2048, token).json()["id"]
    problem = assert_problem(service.client.get(f"/api/v1/cats/bogus/{run_id}"), 404)
    assert "bogus" in str(problem["detail"])


def test_a_wrong_method_is_405(service: Service) -> None:
    assert_problem(service.client.delete("/api/v1/runs"), 405)


def test_a_body_on_a_read_route_is_bounded(service: Service) -> None:
    response = service.client.request(
        "GET",
        "/api/v1/runs/abc",
        content=b"x" * (MAX_REQUEST_BYTES + 1),
    )
    assert_problem(response, 413)


def test_json_sent_with_extra_top_level_fields_is_refused(
    service: Service, token: str, signed_2048: bytes
) -> None:
    envelope = json.loads(signed_2048)
    envelope["owner"] = "someone else"
    problem = assert_problem(service.upload(json.dumps(envelope).encode(), token), 422)
    assert str(problem["type"]).endswith("/envelope-well-formed")
