"""Trust labels, read access, targets and deployments with lineage; both databases."""

from __future__ import annotations

from typing import Any

import pytest

import playproof
from playproof.core.record import RunRecord
from playproof.sign import SigningKey

from .conftest import Service

CANONICAL = "benchmarked_canonical_template"
CUSTOMIZED = "benchmark_compatible_customized_instance"
EXTERNAL = "external_custom_runtime"


def _signed(record: RunRecord, signer: SigningKey, **target: Any) -> bytes:
    data = record.to_json()
    data["target"] = {**data["target"], **target}
    return playproof.sign_record(RunRecord.model_validate(data), signer).to_bytes()


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _read_routes(run_id: str) -> list[str]:
    return [
        f"/api/v1/runs/{run_id}",
        f"/api/v1/verifier/runs/{run_id}",
        f"/api/v1/cats/replay_integrity/{run_id}",
        f"/api/v1/cats/limits_and_accounting/{run_id}",
    ]


def test_the_targets_table_is_filled_from_the_registry(service: Service) -> None:
    listed = {t["name"]: t for t in service.client.get("/api/v1/targets").json()}
    packaged = {t.name: t for t in playproof.targets.list_targets()}
    assert set(listed) == set(packaged)
    game = listed["native/2048"]
    assert game["platform"] == "native"
    assert game["build_digest"] == packaged["native/2048"].spec.build_digest
    assert game["calibrated"] is packaged["native/2048"].calibrated
    assert game["calibration"] in {"separates", "does-not-separate", "uncalibrated"}
    assert game["leaderboard_url"] == "/api/v1/leaderboards/native/2048"


def test_an_uncalibrated_run_is_read_by_its_owner_only(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    owner = service.owner("alice", (signer.verifying_key,))
    other = service.owner("bob")
    body = _signed(record_2048, signer, calibrated=False)
    accepted = service.upload(body, owner)
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["id"]
    assert accepted.json()["trust_label"] == CUSTOMIZED
    for path in _read_routes(run_id):
        assert service.client.get(path).status_code == 401, path
        refused = service.client.get(path, headers=_auth(other))
        assert refused.status_code == 403, path
        assert CUSTOMIZED in refused.json()["detail"]
        assert service.client.get(path, headers=_auth(owner)).status_code == 200, path
    assert service.verdict(run_id, owner)["status"] == "verified"
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}", headers=_auth(owner)).json()
    assert proof["lineage"]["trust_label"] == CUSTOMIZED
    assert proof["lineage"]["calibrated"] is False


def test_a_record_cannot_call_a_target_the_registry_did_not_calibrate_calibrated(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    """The label follows the service's targets table, not the record's ``calibrated`` flag."""
    from playproof.service.deployments.models import Target

    with service.sessions() as session:
        row = session.get(Target, "native/2048")
        assert row is not None
        row.calibrated, row.calibration = False, "uncalibrated"
        session.commit()
    owner = service.owner("alice", (signer.verifying_key,))
    accepted = service.upload(_signed(record_2048, signer, calibrated=True), owner)
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["trust_label"] == CUSTOMIZED
    run_id = accepted.json()["id"]
    assert service.client.get(f"/api/v1/verifier/runs/{run_id}").status_code == 401
    # Verified and logged, yet never on the public board.
    assert service.client.get("/api/v1/leaderboards/native/2048").json()["rows"] == []


def test_a_canonical_run_is_public(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload(signed_2048, token).json()["id"]
    for path in _read_routes(run_id):
        assert service.client.get(path).status_code == 200, path
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()
    assert proof["lineage"]["trust_label"] == CANONICAL
    assert proof["lineage"]["deployment"] is None
    assert proof["lineage"]["template"] == "native/2048"


def test_a_bad_token_on_a_public_read_is_401(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = service.upload(signed_2048, token).json()["id"]
    assert service.client.get(f"/api/v1/runs/{run_id}", headers=_auth("pp_nope")).status_code == 401


def test_a_record_naming_no_target_is_refused_naming_the_label(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    refused = service.upload(_signed(record_2048, signer, name=None), token)
    assert refused.status_code == 422
    assert refused.json()["type"].endswith("/" + EXTERNAL)
    assert EXTERNAL in refused.json()["detail"]


def _deploy(service: Service, token: str, **body: Any) -> Any:
    return service.client.post(
        "/api/v1/deployments", json={"target": "native/2048", **body}, headers=_auth(token)
    )


def test_a_plain_deployment_is_canonical_and_recorded_in_the_lineage(
    service: Service, signer: SigningKey, signed_2048: bytes, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    made = _deploy(service, token, version=record_2048.target.build_digest)
    assert made.status_code == 201, made.text
    deployment = made.json()
    assert deployment["trust_label"] == CANONICAL
    assert deployment["customized"] is False
    assert deployment["template_version"] == record_2048.target.build_digest
    assert service.client.get(f"/api/v1/deployments/{deployment['id']}").json() == deployment
    accepted = service.client.post(
        f"/api/v1/runs?deployment={deployment['id']}", content=signed_2048, headers=_auth(token)
    )
    assert accepted.status_code == 202, accepted.text
    run_id = accepted.json()["id"]
    assert service.verdict(run_id)["status"] == "verified"
    lineage = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()["lineage"]
    assert lineage["deployment"] == {
        k: deployment[k]
        for k in (
            "id",
            "target",
            "template_version",
            "customized",
            "configuration_sha256",
            "has_policy_envelope",
            "trust_label",
            "created_at",
        )
    }
    assert lineage["template"] == "native/2048"
    assert lineage["template_version"] == record_2048.target.build_digest


def test_a_customized_deployment_makes_its_runs_owner_only(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    other = service.owner("bob")
    deployment = _deploy(
        service, token, configuration={"speed": 2}, policy_envelope={"limit": 1}
    ).json()
    assert deployment["trust_label"] == CUSTOMIZED
    assert deployment["has_policy_envelope"] is True
    path = f"/api/v1/deployments/{deployment['id']}"
    assert service.client.get(path).status_code == 401
    assert service.client.get(path, headers=_auth(other)).status_code == 403
    assert service.client.get(path, headers=_auth(token)).status_code == 200
    run = service.client.post(
        f"/api/v1/runs?deployment={deployment['id']}", content=signed_2048, headers=_auth(token)
    ).json()
    assert run["trust_label"] == CUSTOMIZED
    assert service.client.get(f"/api/v1/verifier/runs/{run['id']}").status_code == 401


def test_a_run_may_not_name_someone_elses_deployment(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    other = service.owner("bob")
    theirs = _deploy(service, other).json()
    refused = service.client.post(
        f"/api/v1/runs?deployment={theirs['id']}", content=signed_2048, headers=_auth(token)
    )
    assert refused.status_code == 403


def test_a_run_of_another_target_or_build_does_not_fit_the_deployment(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    deployment = _deploy(service, token).json()
    moved = _signed(record_2048, signer, build_digest="0" * 64)
    refused = service.client.post(
        f"/api/v1/runs?deployment={deployment['id']}", content=moved, headers=_auth(token)
    )
    assert refused.status_code == 422
    assert refused.json()["type"].endswith("/deployment-mismatch")


@pytest.mark.parametrize(
    ("body", "status", "kind"),
    [
        ({"runtime": "external"}, 422, EXTERNAL),
        ({"target": "native/nope"}, 422, "unknown-target"),
        ({"version": "0" * 64}, 409, "version-mismatch"),
        ({"configuration": {str(i): i for i in range(65)}}, 422, "invalid-request"),
        ({"unknown": 1}, 422, "invalid-request"),
        ({"configuration": "a string"}, 422, "invalid-request"),
    ],
)
def test_bad_deployments_are_refused(
    service: Service, body: dict[str, Any], status: int, kind: str
) -> None:
    token = service.owner("alice")
    refused = _deploy(service, token, **body)
    assert refused.status_code == status, refused.text
    assert refused.json()["type"].endswith("/" + kind)


def test_a_deployment_needs_a_token(service: Service) -> None:
    assert (
        service.client.post("/api/v1/deployments", json={"target": "native/2048"}).status_code
        == 401
    )
