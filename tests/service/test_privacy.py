"""Private fields never leave the service, and the read routes never write."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import event, text

from playproof.sign import SigningKey

from .conftest import Service

SENTINEL_CONTACT = "contact-SENTINEL-7f3a@example.invalid"
SENTINEL_OWNER = "owner-SENTINEL-91c2"
SENTINEL_CONFIG = "config-SENTINEL-5d01"
SENTINEL_POLICY = "policy-SENTINEL-0b7e"
PRIVATE_FIELDS = (
    "contact",
    "token_sha256",
    "configuration",
    "policy_envelope",
    "envelope",
    "owner",
    "content",
)


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _read_routes(
    run_id: str, deployment_id: str = "", challenge_id: str = "", grade_id: str = ""
) -> list[str]:
    return [
        f"/api/v1/grades/{grade_id}",
        f"/api/v1/verifier/grades/{grade_id}",
        f"/api/v1/deployments/{deployment_id}",
        f"/api/v1/deployments/{deployment_id}/runs",
        f"/api/v1/deployments/{deployment_id}/runs?limit=1&offset=1",
        "/api/v1/targets",
        "/api/v1/leaderboards/native/2048",
        "/api/v1/leaderboards/native/2048?limit=1&offset=0",
        f"/api/v1/challenges/{challenge_id}",
        f"/api/v1/challenges/{challenge_id}/leaderboard",
        "/api/v1/log/head?size=1",
        "/api/v1/log/inclusion?leaf=0",
        "/api/v1/log/consistency?first=0&second=1",
        "/api/v1/log/consistency?first=1&second=1",
        f"/api/v1/runs/{run_id}",
        f"/api/v1/verifier/runs/{run_id}",
        f"/api/v1/cats/replay_integrity/{run_id}",
        f"/api/v1/cats/limits_and_accounting/{run_id}",
        "/api/v1/runs/ffffffffffffffffffffffffffffffff",
        f"/api/v1/cats/nope/{run_id}",
        "/openapi.json",
        "/api/v1/log/head",
        "/api/v1/log/key",
    ]


def _challenge(service: Service) -> str:
    from datetime import UTC, datetime, timedelta

    from playproof.service.leaderboards.services import add_challenge

    now = datetime.now(UTC)
    with service.sessions() as session:
        return add_challenge(
            session, "native/2048", [0], 10.0, now - timedelta(days=1), now + timedelta(days=1)
        ).id


def _grade(service: Service, signer: SigningKey, token: str) -> str:
    from playproof.corpus import sign_grade

    from .test_grades import _record, _wait

    body = sign_grade(_record(), signer).to_bytes()
    grade_id = str(
        service.client.post(
            "/api/v1/grades", content=body, headers={"Authorization": f"Bearer {token}"}
        ).json()["id"]
    )
    _wait(service, grade_id)
    return grade_id


def test_no_response_carries_a_private_value(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner(SENTINEL_OWNER, (signer.verifying_key,), contact=SENTINEL_CONTACT)
    auth = {"Authorization": f"Bearer {token}"}
    bodies = []
    deployed = service.client.post(
        "/api/v1/deployments",
        json={
            "target": "native/2048",
            "configuration": {"secret": SENTINEL_CONFIG},
            "policy_envelope": {"rule": SENTINEL_POLICY},
        },
        headers=auth,
    )
    bodies.append(deployed.text)
    deployment_id = deployed.json()["id"]
    accepted = service.upload(signed_2048, token)
    bodies.append(accepted.text)
    run_id = accepted.json()["id"]
    bodies.append(service.upload(signed_2048, token).text)  # the duplicate answer
    bodies.append(service.upload(b"{broken", token).text)  # a refusal
    service.verdict(run_id)
    challenge_id = _challenge(service)
    grade_id = _grade(service, signer, token)
    for path in _read_routes(run_id, deployment_id, challenge_id, grade_id):
        bodies.append(service.client.get(path).text)
        bodies.append(service.client.get(path, headers=auth).text)
    with service.sessions() as session:
        digest = session.execute(text("SELECT token_sha256 FROM api_tokens")).scalar_one()
    database = service.database_url.split("///")[-1].split("@")[-1]
    private = [token, token[3:], digest, SENTINEL_CONTACT, SENTINEL_OWNER, database]
    private += [SENTINEL_CONFIG, SENTINEL_POLICY, "/secret/path"]
    for body in bodies:
        for value in private:
            assert value not in body, (value, body[:200])
        if body.startswith(("{", "[")) and '"openapi"' not in body:
            leaked = _keys(json.loads(body)) & set(PRIVATE_FIELDS)
            assert not leaked, (leaked, body[:200])


def _snapshot(service: Service) -> dict[str, Any]:
    tables = [
        "owners",
        "api_tokens",
        "signer_keys",
        "runs",
        "alembic_version",
        "targets",
        "deployments",
        "artifacts",
        "run_artifacts",
        "challenges",
        "grades",
        "log_leaves",
    ]
    with service.sessions() as session:
        return {
            name: sorted(
                tuple(str(v) for v in row)
                for row in session.execute(text(f"SELECT * FROM {name}")).all()
            )
            for name in tables
        }


def test_read_routes_never_write(service: Service, signer: SigningKey, signed_2048: bytes) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload(signed_2048, token).json()["id"]
    service.verdict(run_id)
    deployment_id = service.client.post(
        "/api/v1/deployments",
        json={"target": "native/2048"},
        headers={"Authorization": f"Bearer {token}"},
    ).json()["id"]
    challenge_id = _challenge(service)
    grade_id = _grade(service, signer, token)
    state = service.client.app.state.service  # type: ignore[attr-defined]
    # The service's engine, and on PostgreSQL the event loop's own connection.
    engines = [e for e in (state.engine, state.inline.engine) if e is not None]
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    before = _snapshot(service)
    for engine in engines:
        event.listen(engine, "before_cursor_execute", seen)
    try:
        for path in _read_routes(run_id, deployment_id, challenge_id, grade_id):
            service.client.get(path)
            service.client.get(path, headers={"Authorization": f"Bearer {token}"})
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", seen)
    assert statements, "the read routes read nothing: the probe is not listening"
    writes = [
        s
        for s in statements
        if s.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP"}
    ]
    assert writes == []
    assert _snapshot(service) == before
