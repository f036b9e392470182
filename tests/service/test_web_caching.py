"""Web answers that depend on who is signed in are never stored by a shared cache.

A page names its viewer and carries their CSRF token; an owner-only run's
page, record and proof are its owner's alone. Without ``Cache-Control:
private`` a shared cache (a CDN, a company proxy) keyed on the URL may store
one owner's answer and hand it to the next visitor.

Replacing the session key file ends every session without a restart.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from sqlalchemy import update

from playproof.core.record import RunRecord
from playproof.service.runs.models import Run
from playproof.service.web.rendering import SESSION_KEY_FILE
from playproof.service.web.signin import CSRF_FIELD
from playproof.sign import SigningKey

from .conftest import Service

CUSTOMIZED = "benchmark_compatible_customized_instance"


def _sign_in(service: Service, token: str) -> None:
    form = service.client.get("/signin")
    assert form.status_code == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    signed = service.client.post(
        "/signin",
        data={CSRF_FIELD: csrf.group(1), "token": token, "next": "/me"},
        follow_redirects=False,
    )
    assert signed.status_code == 303, signed.text


def _not_shared(answer_headers: dict[str, str]) -> bool:
    directives = {d.strip().lower() for d in answer_headers.get("cache-control", "").split(",")}
    return "private" in directives and "no-store" in directives


def test_an_owner_only_run_and_signed_in_pages_are_never_stored_for_others(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload_verified(signer, record_2048, token)
    with service.sessions() as session:
        session.execute(update(Run).where(Run.id == run_id).values(trust_label=CUSTOMIZED))
        session.commit()
    anonymous = service.client.get(f"/runs/{run_id}")
    assert anonymous.status_code == 401
    first = service.client.get("/targets")  # a fresh CSRF token, in the page and a cookie
    assert "set-cookie" in first.headers
    assert _not_shared(dict(first.headers))
    _sign_in(service, token)
    for path in (
        f"/runs/{run_id}",
        f"/runs/{run_id}/record.json",
        f"/runs/{run_id}/proof.json",
        f"/runs/{run_id}/replay",
        f"/runs/{run_id}/frames/0",
        "/me",
        "/targets",
    ):
        answer = service.client.get(path)
        assert answer.status_code == 200, (path, answer.text[:200])
        assert _not_shared(dict(answer.headers)), (path, answer.headers.get("cache-control"))


def test_replacing_the_session_key_file_ends_every_session(
    service: Service, signer: SigningKey, tmp_path: Path
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    _sign_in(service, token)
    assert service.client.get("/me", follow_redirects=False).status_code == 200
    key_file = tmp_path / SESSION_KEY_FILE  # the data folder holds the log key and this
    assert key_file.exists()
    key_file.write_bytes(secrets.token_bytes(32))
    ended = service.client.get("/me", follow_redirects=False)
    assert ended.status_code == 303
    assert ended.headers["location"].startswith("/signin")
    key_file.unlink()  # deleted: a new key is made, and the old sessions stay ended
    assert service.client.get("/me", follow_redirects=False).status_code == 303
    assert key_file.exists()
    _sign_in(service, token)  # signing in again works under the new key
    assert service.client.get("/me", follow_redirects=False).status_code == 200
