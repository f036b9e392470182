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
        "/api/v1/deployments/0123456789abcdef0123456789abcdef",
        "/api/v1/deployments/%00",
        "/api/v1/deployments/" + "d" * 500,
        "/api/v1/leaderboards/native/nope",
        "/api/v1/leaderboards/native",
        "/api/v1/leaderboards/" + "x" * 300 + "/y",
        "/api/v1/challenges/0123456789abcdef0123456789abcdef",
        "/api/v1/challenges/%00/leaderboard",
        "/api/v1/grades/nope",
        "/api/v1/verifier/grades/0123456789abcdef0123456789abcdef",
        "/api/v1/log/head?size=5",
        "/api/v1/log/inclusion?leaf=0",
        "/api/v1/log/consistency?first=3&second=1",
    ],
)
def test_unknown_ids_and_routes_are_404(service: Service, path: str) -> None:
    assert_problem(service.client.get(path), 404)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/leaderboards/native/2048?limit=0",
        "/api/v1/leaderboards/native/2048?limit=201",
        "/api/v1/leaderboards/native/2048?offset=-1",
        "/api/v1/leaderboards/native/2048?limit=abc",
        "/api/v1/leaderboards/native/2048?offset=99999999999999999999999",
        "/api/v1/log/head?size=-1",
        "/api/v1/log/consistency?first=1",
        "/api/v1/log/consistency?first=x&second=1",
        "/api/v1/log/inclusion?leaf=-3",
        "/api/v1/runs?deployment=" + "z" * 100,
    ],
)
def test_out_of_bounds_query_parameters_are_422(service: Service, path: str) -> None:
    method = "POST" if path.startswith("/api/v1/runs") else "GET"
    response = service.client.request(method, path, headers={"Authorization": "Bearer pp_x"})
    assert_problem(response, 401 if method == "POST" else 422)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b'{"target": 5}',
        b'{"target": "native/2048", "configuration": []}',
        b'{"target": "native/2048", "extra": true}',
        b'{"target": "native/2048", "runtime": "elsewhere"}',
        b'{"target": "native/2048", "version": "not hex"}',
        b'{"target": "' + b"x" * 500 + b'"}',
        b'{"target": "native/2048", "configuration": {"a": NaN}}',
        b'{"target": "native/2048", "configuration": {"a": 1e999}}',
        b'{"target": "native/2048", "configuration": {"a": 123456789012345678901234567890}}',
        b'{"target": "native/2048", "policy_envelope": {"a": NaN}}',
    ],
)
def test_malformed_deployments_are_422_problems(service: Service, token: str, body: bytes) -> None:
    response = service.client.post(
        "/api/v1/deployments",
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert_problem(response, 422)


def test_a_deeply_nested_deployment_body_is_a_400_problem(service: Service, token: str) -> None:
    response = service.client.post(
        "/api/v1/deployments",
        content=b"[" * 5000 + b"]" * 5000,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert_problem(response, 400)


def test_an_oversized_deployment_body_is_413(service: Service, token: str) -> None:
    body = b'{"target": "native/2048", "configuration": {"a": "' + b"x" * MAX_REQUEST_BYTES + b'"}}'
    response = service.client.post(
        "/api/v1/deployments",
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert_problem(response, 413)


def _streamed(body: bytes) -> Iterator[bytes]:
    """``body`` in 4 KiB chunks (no Content-Length: chunked)."""
    for at in range(0, len(body), 4096):
        yield body[at : at + 4096]


@pytest.mark.parametrize("path", ["/api/v1/deployments", "/api/v1/challenges"])
@pytest.mark.parametrize("signed_in", [True, False])
def test_a_chunked_body_past_the_bound_is_413_and_nothing_is_stored(
    service: Service, token: str, path: str, signed_in: bool
) -> None:
    """A body with no declared length is counted as it streams and cut off at the bound."""
    body = b'{"target": "native/2048", "configuration": {"a": "' + b"x" * (8 << 20) + b'"}}'
    headers = {"Content-Type": "application/json"}
    if signed_in:
        headers["Authorization"] = f"Bearer {token}"
    response = service.client.post(path, content=_streamed(body), headers=headers)
    assert_problem(response, 413)
    listed = service.client.get("/api/v1/deployments", headers={"Authorization": f"Bearer {token}"})
    assert "xxxx" not in listed.text


def test_a_chunked_body_within_the_bound_is_taken(service: Service, token: str) -> None:
    body = b'{"target": "native/2048"}'
    response = service.client.post(
        "/api/v1/deployments",
        content=_streamed(body),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("path", ["/api/v1/runs", "/api/v1/grades", "/api/v1/deployments"])
@pytest.mark.parametrize("length", ["\N{SUPERSCRIPT TWO}", "-1", "1e3", " 12"])
def test_a_content_length_that_is_no_ascii_number_is_a_400(
    service: Service, token: str, path: str, length: str
) -> None:
    response = service.client.post(
        path,
        content=b"{}",
        headers={"Authorization": f"Bearer {token}", "Content-Length": length.encode("latin-1")},
    )
    assert_problem(response, 400)


@pytest.mark.parametrize(("path", "kind"), [("/api/v1/targets", "api"), ("/targets", "web")])
def test_a_wrong_method_says_which_are_allowed(service: Service, path: str, kind: str) -> None:
    response = service.client.post(path, content=b"")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    if kind == "api":
        assert_problem(response, 405)


@pytest.mark.parametrize(
    "body",
    [
        b"{}",
        b'{"target": "native/2048", "seeds": [], "budget_usd": 1, '
        b'"opens_at": "2026-01-01T00:00:00Z", "closes_at": "2027-01-01T00:00:00Z"}',
        b'{"target": "native/2048", "seeds": [-1], "budget_usd": 1, '
        b'"opens_at": "2026-01-01T00:00:00Z", "closes_at": "2027-01-01T00:00:00Z"}',
        b'{"target": "native/2048", "seeds": [1], "budget_usd": 1, '
        b'"opens_at": "2026-01-01T00:00:00", "closes_at": "2027-01-01T00:00:00Z"}',
        b'{"target": "native/2048", "seeds": [1], "budget_usd": 1, '
        b'"opens_at": "2027-01-01T00:00:00Z", "closes_at": "2026-01-01T00:00:00Z"}',
        b'{"target": "native/nope", "seeds": [1], "budget_usd": 1, '
        b'"opens_at": "2026-01-01T00:00:00Z", "closes_at": "2027-01-01T00:00:00Z"}',
    ],
)
def test_malformed_challenges_are_422_problems(service: Service, body: bytes) -> None:
    from playproof.service.owners.services import find_owner

    admin = service.owner("root")
    with service.sessions() as session:
        find_owner(session, "root").admin = True
        session.commit()
    response = service.client.post(
        "/api/v1/challenges",
        content=body,
        headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"},
    )
    assert_problem(response, 422)


@pytest.mark.parametrize("body", [b"", b"{", b"[]", b'{"payload": 1}', b"[" * 5000 + b"]" * 5000])
def test_malformed_grade_uploads_are_422_problems(
    service: Service, token: str, body: bytes
) -> None:
    response = service.client.post(
        "/api/v1/grades", content=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert_problem(response, 422)


def test_an_oversized_grade_upload_is_413(service: Service, token: str) -> None:
    limit = service.client.app.state.service.settings.max_upload_bytes  # type: ignore[attr-defined]
    response = service.client.post(
        "/api/v1/grades",
        content=b"x",
        headers={"Authorization": f"Bearer {token}", "Content-Length": str(limit + 1)},
    )
    assert_problem(response, 413)


def test_a_run_naming_an_unknown_deployment_is_404(
    service: Service, token: str, signed_2048: bytes
) -> None:
    response = service.client.post(
        "/api/v1/runs?deployment=0123456789abcdef0123456789abcdef",
        content=signed_2048,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert_problem(response, 404)


def test_an_unknown_check_group_of_a_known_run_is_404(
    service: Service, token: str, signed_2048: bytes
) -> None:
    run_id = service.upload(signed_2048, token).json()["id"]
    problem = assert_problem(service.client.get(f"/api/v1/cats/bogus/{run_id}"), 404)
    assert "bogus" in str(problem["detail"])


def test_head_is_get_without_a_body_and_a_post_only_route_still_refuses_it(
    service: Service,
) -> None:
    got = service.client.get("/api/v1/targets")
    head = service.client.head("/api/v1/targets")
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == got.headers["content-length"]
    refused = service.client.head("/api/v1/runs")
    assert refused.status_code == 405
    assert refused.headers["allow"] == "POST"
    assert service.client.head("/api/v1/runs/nope").status_code == 404


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
