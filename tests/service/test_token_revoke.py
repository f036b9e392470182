"""Revoking an owner's API tokens: the API and the web sessions they opened refuse them at once."""

from __future__ import annotations

from playproof.service.owners.services import find_owner, revoke_tokens
from playproof.sign import SigningKey

from .conftest import Service
from .test_web_caching import _sign_in


def test_a_revoked_token_is_refused_by_the_api_and_its_sessions_end(
    service: Service, signer: SigningKey
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    other = service.owner("bob")
    bearer = {"Authorization": f"Bearer {token}"}
    assert (
        service.client.get(
            "/api/v1/runs/ffffffffffffffffffffffffffffffff", headers=bearer
        ).status_code
        == 404
    )
    _sign_in(service, token)
    assert service.client.get("/me", follow_redirects=False).status_code == 200
    with service.sessions() as session:
        assert revoke_tokens(session, find_owner(session, "alice")) == 1
        session.commit()
    refused = service.client.get("/api/v1/runs/ffffffffffffffffffffffffffffffff", headers=bearer)
    assert refused.status_code == 401
    assert service.client.get("/me", follow_redirects=False).status_code == 303
    kept = {"Authorization": f"Bearer {other}"}  # another owner's token stands
    assert (
        service.client.get(
            "/api/v1/runs/ffffffffffffffffffffffffffffffff", headers=kept
        ).status_code
        == 404
    )
