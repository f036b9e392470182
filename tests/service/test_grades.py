"""Signed corpus grade records: uploaded, re-verified on the server, proof documents."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from playproof.corpus import (
    CandidatePin,
    CaseResult,
    GradeRecord,
    load_manifest,
    shipped_paths,
    sign_grade,
    verify_grade,
)
from playproof.corpus._trust import shipped_controller_key
from playproof.sign import SigningKey

from .conftest import VERDICT_WAIT_S, Service

CONTROLLER_ID = shipped_controller_key().key_id


def _record(
    corpus_id: str = "my-corpus", digest: str = "a" * 64, cases: Any = None, **fields: Any
) -> GradeRecord:
    ids = cases if cases is not None else ["one", "two"]
    results = [CaseResult(case_id=c, passed=i == 0, reason="ok") for i, c in enumerate(ids)]
    return GradeRecord(
        corpus_id=corpus_id,
        corpus_version="1",
        corpus_digest=digest,
        candidate=CandidatePin(command=["/secret/path/candidate"], build_digest="b" * 64),
        limits={"cpu_seconds": 1.0},
        results=results,
        passed=1,
        denominator=len(results),
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
        **({"isolation": "rlimits"} | fields),
    )


def _wait(service: Service, grade_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + VERDICT_WAIT_S
    while True:
        answer = dict(service.client.get(f"/api/v1/grades/{grade_id}").json())
        if answer["status"] != "pending" or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def _post(service: Service, body: bytes, token: str) -> Any:
    return service.client.post(
        "/api/v1/grades", content=body, headers={"Authorization": f"Bearer {token}"}
    )


def test_a_grade_record_is_verified_and_its_proof_matches_verify_grade(
    service: Service, signer: SigningKey
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    body = sign_grade(_record(isolation="bubblewrap", sandbox="per-slot"), signer).to_bytes()
    accepted = _post(service, body, token)
    assert accepted.status_code == 202, accepted.text
    grade_id = accepted.json()["id"]
    assert _post(service, body, token).status_code == 200  # the same envelope again
    done = _wait(service, grade_id)
    assert done["status"] == "verified", done
    proof = service.client.get(f"/api/v1/verifier/grades/{grade_id}").json()
    local, _ = verify_grade(body, signer.verifying_key)
    assert [(c["id"], c["passed"]) for c in proof["checks"]] == [
        (c.id, c.passed) for c in local.checks
    ]
    assert proof["record"]["passed"] == 1
    assert proof["record"]["denominator"] == 2
    assert (proof["record"]["isolation"], proof["record"]["sandbox"]) == ("bubblewrap", "per-slot")
    assert proof["signer_key_id"] == signer.key_id
    assert "/secret/path" not in json.dumps(proof)  # the candidate's command line stays private


def test_a_shipped_corpus_grade_is_checked_against_its_manifest(
    service: Service, signer: SigningKey
) -> None:
    manifest = load_manifest(shipped_paths("blargg")[0])
    token = service.owner("alice", (signer.verifying_key,))
    wrong = sign_grade(_record("blargg", "c" * 64), signer).to_bytes()
    grade_id = _post(service, wrong, token).json()["id"]
    done = _wait(service, grade_id)
    assert done["status"] == "rejected"
    assert any(f.startswith("corpus-pinned:") for f in done["failed_checks"]), done
    cases = [c.id for c in manifest.cases]
    right = sign_grade(_record("blargg", manifest.digest, cases), signer).to_bytes()
    assert _wait(service, _post(service, right, token).json()["id"])["status"] == "verified"


def test_a_trusted_grade_of_a_shipped_corpus_is_verified_only_under_its_controller(
    service: Service, signer: SigningKey
) -> None:
    manifest = load_manifest(shipped_paths("blargg")[0])
    token = service.owner("alice", (signer.verifying_key,))
    cases = [c.id for c in manifest.cases]
    trusted = {"trust": "trusted", "reward": 1}
    genuine = _record("blargg", manifest.digest, cases, **trusted, controller_key=CONTROLLER_ID)
    done = _wait(
        service, _post(service, sign_grade(genuine, signer).to_bytes(), token).json()["id"]
    )
    assert done["status"] == "verified", done
    genuine_id = done["id"]
    proof = service.client.get(f"/api/v1/verifier/grades/{genuine_id}").json()
    assert (proof["record"]["trust"], proof["record"]["reward"]) == ("trusted", 1)
    assert proof["record"]["controller_key"] == CONTROLLER_ID
    borrowed = _record("blargg", manifest.digest, cases, **trusted, controller_key="e" * 64)
    done = _wait(
        service, _post(service, sign_grade(borrowed, signer).to_bytes(), token).json()["id"]
    )
    assert done["status"] == "rejected"
    assert any(f.startswith("corpus-pinned:") for f in done["failed_checks"]), done
    # The pages state a trusted claim the server did not confirm as a claim, never as fact.
    listing = service.client.get("/grades").text
    assert listing.count("trusted (claimed)") == 1
    page = " ".join(service.client.get(f"/grades/{done['id']}").text.split())
    assert "as the record claims, not confirmed by the server" in page
    confirmed = " ".join(service.client.get(f"/grades/{genuine_id}").text.split())
    assert "not confirmed" not in confirmed
    assert "trusted (reward 1)" in confirmed


def test_a_forged_grade_is_refused_at_once_naming_the_check(
    service: Service, signer: SigningKey
) -> None:
    token = service.owner("alice", (SigningKey.generate().verifying_key,))
    refused = _post(service, sign_grade(_record(), signer).to_bytes(), token)
    assert refused.status_code == 422
    assert refused.json()["type"].endswith("/signature-valid")
    assert _post(service, b"{", token).json()["type"].endswith("/envelope-well-formed")


def test_a_grade_whose_times_have_no_utc_form_is_refused_not_a_server_error(
    service: Service, signer: SigningKey
) -> None:
    """A signed time at the calendar's edge in another zone cannot be stored in UTC: a 422."""
    from datetime import timedelta, timezone

    token = service.owner("alice", (signer.verifying_key,))
    east, west = timezone(timedelta(hours=5)), timezone(timedelta(hours=-5))
    for started, finished in (
        (datetime(1, 1, 1, tzinfo=east), datetime(2026, 1, 1, tzinfo=UTC)),
        (datetime(2026, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, tzinfo=west)),
    ):
        record = _record().model_copy(update={"started_at": started, "finished_at": finished})
        answer = _post(service, sign_grade(record, signer).to_bytes(), token)
        assert answer.status_code == 422, answer.text
        assert answer.json()["type"].endswith("unstorable-value"), answer.json()
        assert "UTC" in answer.json()["detail"]
