"""Private fields never leave the service, and the read routes never write."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, text

from playproof.sign import SigningKey

from .conftest import Service

SENTINEL_CONTACT = "contact-SENTINEL-7f3a@example.invalid"
SENTINEL_OWNER = "owner-SENTINEL-91c2"


def _read_routes(run_id: str) -> list[str]:
    return [
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


def test_no_response_carries_a_private_value(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner(SENTINEL_OWNER, (signer.verifying_key,), contact=SENTINEL_CONTACT)
    bodies = []
    accepted = service.upload(signed_2048, token)
    bodies.append(accepted.text)
    run_id = accepted.json()["id"]
    bodies.append(service.upload(signed_2048, token).text)  # the duplicate answer
    bodies.append(service.upload(b"{broken", token).text)  # a refusal
    service.verdict(run_id)
    bodies += [service.client.get(path).text for path in _read_routes(run_id)]
    with service.sessions() as session:
        digest = session.execute(text("SELECT token_sha256 FROM api_tokens")).scalar_one()
    database = service.database_url.split("///")[-1].split("@")[-1]
    private = [token, token[3:], digest, SENTINEL_CONTACT, SENTINEL_OWNER, database]
    for body in bodies:
        for value in private:
            assert value not in body, (value, body[:200])


def _snapshot(service: Service) -> dict[str, Any]:
    tables = ["owners", "api_tokens", "signer_keys", "runs", "alembic_version"]
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
    engine = service.client.app.state.service.engine  # type: ignore[attr-defined]
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    before = _snapshot(service)
    event.listen(engine, "before_cursor_execute", seen)
    try:
        for path in _read_routes(run_id):
            service.client.get(path)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert statements, "the read routes read nothing: the probe is not listening"
    writes = [
        s
        for s in statements
        if s.lstrip().split(None, 1)[0].upper() in {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP"}
    ]
    assert writes == []
    assert _snapshot(service) == before
