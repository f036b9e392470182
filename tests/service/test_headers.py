"""Every answer carries nosniff and a Content-Security-Policy, whoever wrote it.

Routes, error handlers, a middleware's refusal and the stored-proof fast path
alike: a page or error page has the web interface's policy, everything else
(JSON, frames, downloads, problem documents) a policy that loads and runs
nothing. The interactive API documents keep FastAPI's own.
"""

from __future__ import annotations

import httpx

from playproof.service.headers import PAGE_POLICY, RESOURCE_POLICY
from playproof.sign import SigningKey

from .conftest import Service


def _policy(answer: httpx.Response) -> str | None:
    assert answer.headers.get("x-content-type-options") == "nosniff", answer.url
    policies = answer.headers.get_list("content-security-policy")
    assert len(policies) <= 1, policies
    return policies[0] if policies else None


def test_every_kind_of_answer_is_inert_in_a_browser(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    accepted = service.upload(signed_2048, token)
    assert accepted.status_code == 202
    run_id = accepted.json()["id"]
    assert service.verdict(run_id)["status"] == "verified"
    get = service.client.get
    resources = [
        get(f"/api/v1/verifier/runs/{run_id}"),  # the stored-proof fast path, then the route
        get(f"/api/v1/verifier/runs/{run_id}"),
        get(f"/api/v1/runs/{run_id}"),
        get(f"/runs/{run_id}/record.json"),
        get(f"/runs/{run_id}/proof.json"),
        get(f"/runs/{run_id}/frames/0"),
        get("/api/v1/runs/nope"),  # a problem document
        service.client.post("/api/v1/runs", content=b"x", headers={"content-length": "x1"}),
        service.client.head(f"/runs/{run_id}/record.json"),
    ]
    for answer in resources:
        assert answer.status_code < 500, answer.text
        assert _policy(answer) == RESOURCE_POLICY, (answer.url, answer.status_code)
    pages = [get("/targets"), get(f"/runs/{run_id}"), get("/no/such/page"), get("/runs/nope")]
    for answer in pages:
        assert answer.headers["content-type"].startswith("text/html")
        assert _policy(answer) == PAGE_POLICY, (answer.url, answer.status_code)
    assert [answer.status_code for answer in pages[2:]] == [404, 404]
    docs = get("/docs")
    assert docs.status_code == 200
    assert _policy(docs) is None  # Swagger UI loads its own scripts


def test_a_refused_body_is_a_page_on_a_page_and_a_document_on_the_api(service: Service) -> None:
    """The body-limit middleware answers before the routes, as their handlers would."""
    from playproof.service.settings import MAX_REQUEST_BYTES

    post = service.client.post
    too_big = str(MAX_REQUEST_BYTES + 1)
    for declared, status in (("x1", 400), (too_big, 413)):
        page = post("/signin", content=b"token=a", headers={"content-length": declared})
        assert page.status_code == status
        assert page.headers["content-type"].startswith("text/html")
        assert _policy(page) == PAGE_POLICY
        api = post("/api/v1/owners/keys", content=b"{}", headers={"content-length": declared})
        assert api.status_code == status
        assert api.headers["content-type"] == "application/problem+json"
        assert _policy(api) == RESOURCE_POLICY
