"""The service end to end, in process, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import playproof
from playproof.core.record import ClaimedMilestone, RunRecord
from playproof.service.checks import GROUPS
from playproof.sign import SigningKey, VerifyingKey
from playproof.transparency import check_inclusion

from .conftest import Service


def _upload_ok(service: Service, body: bytes, token: str) -> dict[str, Any]:
    response = service.upload(body, token)
    assert response.status_code == 202, response.text
    return dict(response.json())


def test_a_signed_2048_record_is_verified_and_its_proof_is_right(
    service: Service, signer: SigningKey, signed_2048: bytes, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    accepted = _upload_ok(service, signed_2048, token)
    assert accepted["status"] == "pending"
    assert accepted["stop_reason"] == "turn-limit"

    done = service.verdict(accepted["id"])
    assert done["status"] == "verified", done
    assert done["failed_checks"] == []

    proof = service.client.get(f"/api/v1/verifier/runs/{accepted['id']}").json()
    assert set(proof) == {"verifier_version", "run", "lineage", "evidence", "cats", "transparency"}
    assert proof["run"]["status"] == "verified"
    assert proof["run"]["target"] == "native/2048"
    assert proof["run"]["turns"] == len(record_2048.decisions)
    assert proof["run"]["stop_reason"] == record_2048.stop_reason.value
    assert proof["run"]["verified_milestones"] == [c.id for c in record_2048.claimed]
    assert proof["lineage"]["trust_label"] == "benchmarked_canonical_template"
    assert proof["lineage"]["deployment"] is None
    assert proof["lineage"]["build_digest"] == record_2048.target.build_digest
    last = record_2048.decisions[-1]
    assert proof["evidence"] == {
        "record_digest": playproof.sign.record_digest(record_2048),
        "signer_key_id": signer.key_id,
        "decision_count": len(record_2048.decisions),
        "chain_head": record_2048.chain_head,
        "last_decision": {
            "turn": last.turn,
            "input": last.input,
            "cost_usd": last.cost_usd,
            "latency_ms": last.latency_ms,
        },
        "artifacts": [],
    }
    assert [g["group"] for g in proof["cats"]] == [g.name for g in GROUPS]
    assert all(g["result"] == "pass" for g in proof["cats"]), proof["cats"]
    log_key = service.client.get("/api/v1/log/key").json()
    key = VerifyingKey.from_pem(log_key["public_key_pem"].encode())
    assert log_key["log_id"] == key.key_id
    block = proof["transparency"]
    assert block["log_id"] == key.key_id
    assert block["leaf_index"] == 0
    assert block["tree_head"] == service.client.get("/api/v1/log/head").json()
    checked = check_inclusion(
        block["tree_head"], block["inclusion_proof"], proof["evidence"]["record_digest"], key
    )
    assert checked.valid, checked

    one = service.client.get(f"/api/v1/cats/limits_and_accounting/{accepted['id']}")
    assert one.status_code == 200
    assert one.json() == proof["cats"][1]


def test_the_server_verdict_equals_verify_signed(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_ok(service, signed_2048, token)["id"]
    service.verdict(run_id)
    local = playproof.verify_signed(signed_2048, signer.verifying_key)
    replay = service.client.get(f"/api/v1/cats/replay_integrity/{run_id}").json()
    decided = {c["id"]: c["passed"] for c in replay["checks"]}
    assert {c.id: c.passed for c in local.checks}.items() <= decided.items()
    assert (replay["result"] == "pass") == local.clean


def test_a_forged_signature_is_refused_naming_the_check(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    envelope = json.loads(signed_2048)
    sig = envelope["signatures"][0]["sig"]
    envelope["signatures"][0]["sig"] = ("B" if sig[0] == "A" else "A") + sig[1:]
    response = service.upload(json.dumps(envelope).encode(), token)
    assert response.status_code == 422
    problem = response.json()
    assert problem["type"].endswith("/signature-valid")
    assert problem["detail"].startswith("signature-valid:")


def test_a_record_signed_by_someone_elses_key_is_refused(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("mallory", (SigningKey.generate().verifying_key,))
    response = service.upload(signed_2048, token)
    assert response.status_code == 422
    assert response.json()["type"].endswith("/signature-valid")


def test_an_upload_is_checked_against_every_key_of_its_owner_and_only_theirs(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    from playproof.service.owners.services import owner_for_token

    others = (SigningKey.generate().verifying_key, SigningKey.generate().verifying_key)
    token = service.owner("alice", (others[0], signer.verifying_key, others[1]))
    keyless = service.owner("bob")
    with service.sessions() as session:  # the token and the keys in one read
        alice = owner_for_token(session, token, keys=True)
        assert alice is not None
        assert alice.keys is not None
        assert {k.key_id for k in alice.keys} == {k.key_id for k in (*others, signer.verifying_key)}
        plain = owner_for_token(session, token)
        assert plain is not None
        assert plain.keys is None
        assert plain.id == alice.id
        bare = owner_for_token(session, keyless, keys=True)
        assert bare is not None
        assert bare.keys == ()
        assert owner_for_token(session, token + "x", keys=True) is None
    assert service.upload(signed_2048, token).status_code == 202  # its key is the middle one
    refused = service.upload(signed_2048, keyless)
    assert refused.status_code == 422
    assert refused.json()["type"].endswith("/signature-valid")


def test_a_signed_claim_replay_does_not_reproduce_is_rejected(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    claims = (
        *record_2048.claimed,
        ClaimedMilestone(id="tile-256", turn=len(record_2048.decisions)),
    )
    forged = RunRecord.model_validate(
        {**record_2048.to_json(), "claimed": [c.model_dump() for c in claims]}
    )
    body = playproof.sign_record(forged, signer).to_bytes()
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _upload_ok(service, body, token)["id"]
    done = service.verdict(run_id)
    assert done["status"] == "rejected"
    assert any(f.startswith("claims-reproduced:") for f in done["failed_checks"]), done
    assert done["stop_reason"] == "turn-limit"  # the run's own stop reason stays apart
    replay = service.client.get(f"/api/v1/cats/replay_integrity/{run_id}").json()
    failed = [c["id"] for c in replay["checks"] if not c["passed"]]
    assert failed == ["claims-reproduced"]
    assert replay["result"] == "fail"
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()
    assert proof["transparency"] is None  # only verified runs enter the log
    assert service.client.get("/api/v1/log/head").json()["tree_size"] == 0


def test_the_same_envelope_twice_is_the_same_run(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    first = _upload_ok(service, signed_2048, token)
    spaced = json.dumps(json.loads(signed_2048), indent=2).encode()
    again = service.upload(spaced, token)
    assert again.status_code == 200
    assert again.json()["id"] == first["id"]


def test_the_status_route_reports_a_pending_run(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    accepted = _upload_ok(service, signed_2048, token)
    status = service.client.get(f"/api/v1/runs/{accepted['id']}").json()
    assert status["status"] in {"pending", "verified"}
    assert status["proof_url"] == f"/api/v1/verifier/runs/{accepted['id']}"


def test_later_runs_extend_the_log_and_earlier_proofs_still_check(
    service: Service, signer: SigningKey, signed_2048: bytes, record_2048: RunRecord
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    first = _upload_ok(service, signed_2048, token)["id"]
    service.verdict(first)
    again = RunRecord.model_validate({**record_2048.to_json(), "started_at": "another start"})
    second = _upload_ok(service, playproof.sign_record(again, signer).to_bytes(), token)["id"]
    assert service.verdict(second)["status"] == "verified"
    key = VerifyingKey.from_pem(
        service.client.get("/api/v1/log/key").json()["public_key_pem"].encode()
    )
    head = service.client.get("/api/v1/log/head").json()
    assert head["tree_size"] == 2
    for index, run_id in enumerate((first, second)):
        block = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()["transparency"]
        assert block["leaf_index"] == index
        assert block["tree_head"] == head
        digest = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()["evidence"]
        assert check_inclusion(head, block["inclusion_proof"], digest["record_digest"], key).valid


def test_an_upload_is_kept_pending_when_the_replay_pool_is_gone(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from playproof.service.runs.tasks import ReplayQueue

    broken = ProcessPoolExecutor(max_workers=1)
    broken.shutdown()
    state = service.client.app.state.service  # type: ignore[attr-defined]
    state.queue = ReplayQueue(state.sessions, broken)
    token = service.owner("alice", (signer.verifying_key,))
    accepted = _upload_ok(service, signed_2048, token)
    status = service.client.get(f"/api/v1/runs/{accepted['id']}").json()
    assert status["status"] == "pending"  # stored, and replayed at the next start


def test_a_target_seen_packaged_is_not_looked_up_again(
    service: Service, signer: SigningKey, record_2048: RunRecord
) -> None:
    from playproof.service.runs.services import _packaged

    token = service.owner("alice", (signer.verifying_key,))
    state = service.client.app.state.service
    assert state.packaged_targets == {}
    service.upload_verified(signer, record_2048, token)
    assert state.packaged_targets == {record_2048.target.name: True}

    class NoQueries:
        def get(self, *_args: object, **_kwargs: object) -> None:
            raise AssertionError("the targets table was asked again")

    known = dict(state.packaged_targets)
    assert _packaged(NoQueries(), record_2048, known) is True  # type: ignore[arg-type]
    with service.sessions() as session:  # a name the table lacks is not remembered
        unknown = RunRecord.model_validate(
            {**record_2048.to_json(), "target": {**record_2048.to_json()["target"], "name": "x/y"}}
        )
        assert _packaged(session, unknown, known) is None
    assert known == {record_2048.target.name: True}
