"""A deployment's runs: paginated, under the deployment's read rule; both databases."""

from __future__ import annotations

from typing import Any

import playproof
from playproof.core.record import RunRecord
from playproof.sign import SigningKey

from .conftest import Service, calls_to

CANONICAL = "benchmarked_canonical_template"
CUSTOMIZED = "benchmark_compatible_customized_instance"


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _deploy(service: Service, token: str, **body: Any) -> dict[str, Any]:
    made = service.client.post(
        "/api/v1/deployments", json={"target": "native/2048", **body}, headers=_auth(token)
    )
    assert made.status_code == 201, made.text
    return dict(made.json())


def _upload(service: Service, body: bytes, token: str, deployment: str) -> dict[str, Any]:
    accepted = service.client.post(
        f"/api/v1/runs?deployment={deployment}", content=body, headers=_auth(token)
    )
    assert accepted.status_code == 202, accepted.text
    return dict(accepted.json())


def _signed(record: RunRecord, signer: SigningKey, **target: Any) -> bytes:
    data = record.to_json()
    data["target"] = {**data["target"], **target}
    return playproof.sign_record(RunRecord.model_validate(data), signer).to_bytes()


def test_a_canonical_deployment_lists_its_canonical_runs_to_anyone_by_pages(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    other = service.owner("bob")
    deployment = _deploy(service, token)["id"]
    runs = [
        _upload(service, playproof.sign_record(record_2048, key).to_bytes(), token, deployment)
        for key in (signer,)
    ]
    # Another run of the owner, played on no deployment, is not listed.
    second = SigningKey.generate()
    token2 = service.owner("carol", (second.verifying_key,))
    service.upload(playproof.sign_record(record_2048, second).to_bytes(), token2)
    # A run whose record says it is uncalibrated is the owner's only, even here.
    hidden = _upload(service, _signed(record_2048, signer, calibrated=False), token, deployment)
    assert hidden["trust_label"] == CUSTOMIZED
    path = f"/api/v1/deployments/{deployment}/runs"
    anonymous = service.client.get(path)
    assert anonymous.status_code == 200, anonymous.text
    page = anonymous.json()
    assert page["deployment_id"] == deployment
    assert page["total"] == 1
    assert [r["id"] for r in page["runs"]] == [runs[0]["id"]]
    assert page["runs"][0]["proof_url"] == f"/api/v1/verifier/runs/{runs[0]['id']}"
    assert service.client.get(path, headers=_auth(other)).json()["total"] == 1
    owned = service.client.get(path, headers=_auth(token)).json()
    assert owned["total"] == 2
    assert [r["id"] for r in owned["runs"]] == [runs[0]["id"], hidden["id"]]
    second_page = service.client.get(f"{path}?limit=1&offset=1", headers=_auth(token)).json()
    assert (second_page["limit"], second_page["offset"]) == (1, 1)
    assert [r["id"] for r in second_page["runs"]] == [hidden["id"]]
    assert second_page["total"] == 2
    for bad in ("limit=0", "limit=201", "offset=-1", "offset=1000001"):
        assert service.client.get(f"{path}?{bad}").status_code == 422


def test_a_customized_deployments_runs_are_its_owners_only(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    other = service.owner("bob")
    deployment = _deploy(service, token, configuration={"speed": 2})["id"]
    run = _upload(service, signed_2048, token, deployment)
    path = f"/api/v1/deployments/{deployment}/runs"
    assert service.client.get(path).status_code == 401
    assert service.client.get(path, headers=_auth(other)).status_code == 403
    owned = service.client.get(path, headers=_auth(token)).json()
    assert [r["id"] for r in owned["runs"]] == [run["id"]]


def test_an_unknown_deployment_has_no_runs(service: Service) -> None:
    for deployment in ("f" * 32, "nope", "x" * 500):
        answer = service.client.get(f"/api/v1/deployments/{deployment}/runs")
        assert answer.status_code == 404
        assert answer.json()["type"].endswith("/unknown-deployment")


def test_listing_a_deployments_runs_reads_no_envelope(
    service: Service, signer: SigningKey, record_2048: RunRecord, monkeypatch: Any
) -> None:
    """Each status names its stop reason from the row; no record is parsed, no envelope loaded."""
    from sqlalchemy import event

    from playproof.service.runs import stop_reasons

    token = service.owner("alice", (signer.verifying_key,))
    deployment = _deploy(service, token)["id"]
    for seed in (1, 2, 3):
        data = {**record_2048.to_json(), "started_at": f"run {seed}"}
        body = playproof.sign_record(RunRecord.model_validate(data), signer).to_bytes()
        _upload(service, body, token, deployment)
    monkeypatch.setattr(stop_reasons, "_REMEMBERED", stop_reasons.StopReasons())  # a new process
    parsed = calls_to(monkeypatch, stop_reasons, "signed_record")
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    engine = service.sessions.kw["bind"]
    event.listen(engine, "before_cursor_execute", seen)
    try:
        for viewer in ({}, _auth(token)):
            page = service.client.get(f"/api/v1/deployments/{deployment}/runs", headers=viewer)
            assert page.status_code == 200
            reasons = {run["stop_reason"] for run in page.json()["runs"]}
            assert reasons == {record_2048.stop_reason.value}
        owner_page = service.client.get("/me", headers=_auth(token))
        assert owner_page.status_code in (200, 303)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert parsed == []
    assert not [s for s in statements if "runs.envelope," in s or "runs.envelope " in s]


def test_a_run_page_names_its_deployment_by_id_not_as_a_dump(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    deployment = _deploy(service, token)["id"]
    run = _upload(service, playproof.sign_record(record_2048, signer).to_bytes(), token, deployment)
    page = service.client.get(f"/runs/{run['id']}")
    assert page.status_code == 200, page.text
    assert f"<code>{deployment}</code> (native/2048 at build" in page.text
    for dumped in ("template_version=", "created_at=datetime", "DeploymentBlock"):
        assert dumped not in page.text
