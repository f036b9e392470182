"""Policy-bound runs in the service: artifacts from the server's replay and the policy groups."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

pytest.importorskip("solders", reason="the Solana world needs the solana extra")

from policyworld import REFERENCE
from sqlalchemy import delete, event, func, select, text

import playproof
from playproof.core.record import RunRecord
from playproof.drivers import ScriptedDriver
from playproof.policy import REBALANCE_POLICY_CHECKS, WALLET_SAFETY_CHECKS
from playproof.service.artifacts.models import Artifact, RunArtifact
from playproof.service.artifacts.roles import (
    POLICY_ENVELOPE,
    REBALANCE_ALLOCATION,
    REBALANCE_EVIDENCE,
    RUN_EVENTS,
)
from playproof.service.checks import GROUPS
from playproof.sign import SigningKey
from playproof.targets import get_target

from .conftest import Service

HOSTILE_SLIPPAGE = ("quote USDC JUP 100", "swap USDC JUP 100 900")


def _played(lines: tuple[str, ...], name: str = "solana/swap") -> RunRecord:
    target = get_target(name)
    return playproof.run(target, ScriptedDriver(list(lines)), max_turns=len(lines))


@pytest.fixture(scope="module")
def reference_record() -> RunRecord:
    return _played(REFERENCE)


@pytest.fixture(scope="module")
def signed_reference(reference_record: RunRecord, signer: SigningKey) -> bytes:
    return playproof.sign_record(reference_record, signer).to_bytes()


@pytest.fixture(scope="module")
def signed_hostile(signer: SigningKey) -> bytes:
    return playproof.sign_record(_played(HOSTILE_SLIPPAGE), signer).to_bytes()


def _verified(service: Service, body: bytes, token: str) -> str:
    run_id = str(service.upload(body, token).json()["id"])
    assert service.verdict(run_id)["status"] == "verified"
    return run_id


def _group(proof: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in proof["cats"] if g["group"] == name)


def test_a_reference_swap_run_passes_every_wallet_safety_check(
    service: Service, signer: SigningKey, signed_reference: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _verified(service, signed_reference, token)
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()
    names = [g["group"] for g in proof["cats"]]
    assert names == [*(g.name for g in GROUPS), "wallet_safety"]
    safety = _group(proof, "wallet_safety")
    assert [c["id"] for c in safety["checks"]] == list(WALLET_SAFETY_CHECKS)
    assert safety["result"] == "pass", safety
    alone = service.client.get(f"/api/v1/cats/wallet_safety/{run_id}")
    assert alone.status_code == 200
    assert alone.json() == safety
    artifacts = {a["role"]: a for a in proof["evidence"]["artifacts"]}
    assert set(artifacts) == {RUN_EVENTS.name, POLICY_ENVELOPE.name}
    assert artifacts[RUN_EVENTS.name]["media_type"] == RUN_EVENTS.media_type
    with service.sessions() as session:
        for meta in artifacts.values():
            stored = session.get(Artifact, meta["digest"])
            assert stored is not None
            assert hashlib.sha256(stored.content).hexdigest() == meta["digest"]
            assert len(stored.content) == meta["size"]
            assert set(meta) == {"role", "digest", "size", "media_type"}
    events = json.loads(session_content(service, artifacts[RUN_EVENTS.name]["digest"]))
    assert json.loads(events[-1])["type"] == "finalize"


def session_content(service: Service, digest: str) -> bytes:
    with service.sessions() as session:
        stored = session.get(Artifact, digest)
        assert stored is not None
        return bytes(stored.content)


def test_a_900_bps_slippage_run_fails_exactly_the_slippage_check(
    service: Service, signer: SigningKey, signed_hostile: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _verified(service, signed_hostile, token)
    safety = service.client.get(f"/api/v1/cats/wallet_safety/{run_id}").json()
    failed = [c["id"] for c in safety["checks"] if not c["passed"]]
    assert failed == ["envelope_slippage_check"]
    assert safety["result"] == "fail"


def test_a_run_that_is_not_policy_bound_lists_no_policy_group(
    service: Service, signer: SigningKey, signed_2048: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _verified(service, signed_2048, token)
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()
    assert [g["group"] for g in proof["cats"]] == [g.name for g in GROUPS]
    assert proof["evidence"]["artifacts"] == []
    missing = service.client.get(f"/api/v1/cats/wallet_safety/{run_id}")
    assert missing.status_code == 404
    assert missing.json()["type"].endswith("/unknown-check-group")


def test_a_missing_artifact_fails_every_check_as_input_missing(
    service: Service, signer: SigningKey, signed_reference: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _verified(service, signed_reference, token)
    with service.sessions() as session:
        session.execute(
            delete(RunArtifact).where(
                RunArtifact.run_id == run_id, RunArtifact.role == RUN_EVENTS.name
            )
        )
        session.commit()
    safety = service.client.get(f"/api/v1/cats/wallet_safety/{run_id}").json()
    assert safety["result"] == "fail"
    assert [c["id"] for c in safety["checks"]] == list(WALLET_SAFETY_CHECKS)
    for check in safety["checks"]:
        assert not check["passed"]
        assert check["explanation"].startswith("input missing")


def test_the_same_artifact_is_stored_once(
    service: Service, signer: SigningKey, signed_reference: bytes, reference_record: RunRecord
) -> None:
    # The same record signed by two of the owner's keys: two runs, the same replayed events.
    other = SigningKey.generate()
    token = service.owner("alice", (signer.verifying_key, other.verifying_key))
    first = _verified(service, signed_reference, token)
    second_body = playproof.sign_record(reference_record, other).to_bytes()
    second = _verified(service, second_body, token)
    assert first != second
    with service.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Artifact)) == 2
        links = session.execute(select(RunArtifact.run_id, RunArtifact.digest)).all()
    assert len(links) == 4
    assert {d for r, d in links if r == first} == {d for r, d in links if r == second}


def test_the_policy_read_routes_never_write(
    service: Service, signer: SigningKey, signed_reference: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _verified(service, signed_reference, token)
    state = service.client.app.state.service  # type: ignore[attr-defined]
    # The service's engine, and on PostgreSQL the event loop's own connection.
    engines = [e for e in (state.engine, state.inline.engine) if e is not None]
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    with service.sessions() as session:
        before = sorted(
            tuple(map(str, row)) for row in session.execute(text("SELECT * FROM run_artifacts"))
        )
    for engine in engines:
        event.listen(engine, "before_cursor_execute", seen)
    try:
        for path in (
            f"/api/v1/verifier/runs/{run_id}",
            f"/api/v1/cats/wallet_safety/{run_id}",
            f"/api/v1/runs/{run_id}",
        ):
            assert service.client.get(path).status_code == 200
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", seen)
    assert any("run_artifacts" in s for s in statements), "the probe saw no artifact read"
    words = {s.lstrip().split(None, 1)[0].upper() for s in statements}
    assert not words & {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP"}
    with service.sessions() as session:
        after = sorted(
            tuple(map(str, row)) for row in session.execute(text("SELECT * FROM run_artifacts"))
        )
    assert after == before


def test_a_reference_rebalance_run_passes_both_policy_groups(
    service: Service, signer: SigningKey
) -> None:
    target = get_target("solana/rebalance")
    body = playproof.sign_record(_played(target.reference, target.name), signer).to_bytes()
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _verified(service, body, token)
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}").json()
    assert [g["group"] for g in proof["cats"]][-2:] == ["wallet_safety", "rebalance_policy"]
    rebalance = _group(proof, "rebalance_policy")
    assert [c["id"] for c in rebalance["checks"]] == list(REBALANCE_POLICY_CHECKS)
    assert rebalance["result"] == "pass", rebalance
    assert _group(proof, "wallet_safety")["result"] == "pass"
    roles = {a["role"] for a in proof["evidence"]["artifacts"]}
    assert roles == {
        RUN_EVENTS.name,
        POLICY_ENVELOPE.name,
        REBALANCE_EVIDENCE.name,
        REBALANCE_ALLOCATION.name,
    }


def _deployed_run(service: Service, token: str, body: bytes, envelope: Any) -> str:
    auth = {"Authorization": f"Bearer {token}"}
    deployment = service.client.post(
        "/api/v1/deployments",
        json={"target": "solana/swap", "policy_envelope": envelope},
        headers=auth,
    )
    assert deployment.status_code == 201, deployment.text
    accepted = service.client.post(
        f"/api/v1/runs?deployment={deployment.json()['id']}", content=body, headers=auth
    )
    assert accepted.status_code == 202, accepted.text
    run_id = str(accepted.json()["id"])
    assert service.verdict(run_id, token)["status"] == "verified"
    return run_id


def test_the_deployments_envelope_is_the_authority(
    service: Service, signer: SigningKey, signed_reference: bytes
) -> None:
    from playproof.policy.envelope import example_envelope

    token = service.owner("alice", (signer.verifying_key,))
    stricter = {**example_envelope(), "max_slippage_bps": 50}
    run_id = _deployed_run(service, token, signed_reference, stricter)
    auth = {"Authorization": f"Bearer {token}"}
    safety = service.client.get(f"/api/v1/cats/wallet_safety/{run_id}", headers=auth).json()
    assert [c["id"] for c in safety["checks"] if not c["passed"]] == ["envelope_slippage_check"]


def test_a_deployment_envelope_that_is_not_one_fails_every_check(
    service: Service, signer: SigningKey, signed_reference: bytes
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    run_id = _deployed_run(service, token, signed_reference, {"chain": "localnet"})
    auth = {"Authorization": f"Bearer {token}"}
    safety = service.client.get(f"/api/v1/cats/wallet_safety/{run_id}", headers=auth).json()
    assert safety["result"] == "fail"
    assert {c["explanation"] for c in safety["checks"]} == {
        "input missing: no valid deployed policy envelope is stored"
    }


def test_a_deployment_with_an_envelope_of_its_own_is_read_by_its_owner_only(
    service: Service, signer: SigningKey, signed_reference: bytes, signed_hostile: bytes
) -> None:
    """Its runs are judged against a private envelope: never a public, canonical verdict."""
    from playproof.policy.envelope import example_envelope
    from playproof.service.db import downgrade, make_engine, upgrade

    token = service.owner("alice", (signer.verifying_key,))
    laxer = {**example_envelope(), "max_trade_usd": 1_000_000}
    run_id = _deployed_run(service, token, signed_reference, laxer)
    auth = {"Authorization": f"Bearer {token}"}
    proof = service.client.get(f"/api/v1/verifier/runs/{run_id}", headers=auth).json()
    assert proof["lineage"]["trust_label"] == "benchmark_compatible_customized_instance"
    assert service.client.get(f"/api/v1/verifier/runs/{run_id}").status_code == 401
    board = service.client.get("/api/v1/leaderboards/solana/swap").json()
    assert run_id not in [row["run_id"] for row in board["rows"]]

    # Stored under the old rule (labelled canonical), migration 0008 relabels it and its run.
    plain = _verified(service, signed_hostile, token)  # no deployment: stays canonical
    canonical = "benchmarked_canonical_template"
    with service.sessions() as session:
        session.execute(
            text("UPDATE deployments SET trust_label = :l, customized = :f"),
            {"l": canonical, "f": False},
        )
        session.execute(text("UPDATE runs SET trust_label = :l"), {"l": canonical})
        session.commit()
    assert service.client.get(f"/api/v1/verifier/runs/{run_id}").status_code == 200  # the hole
    page = service.client.get(f"/runs/{run_id}").text  # shows what the run was judged against
    assert "Largest trade</th><td>1000000 USD" in page
    assert "Largest trade</th><td>1000 USD" not in page
    engine = make_engine(service.database_url)
    try:
        downgrade(engine, "0007")
        upgrade(engine)
    finally:
        engine.dispose()
    with service.sessions() as session:
        labels = dict(session.execute(text("SELECT id, trust_label FROM runs")).all())
        deployed = session.execute(text("SELECT trust_label, customized FROM deployments")).one()
    assert labels == {run_id: "benchmark_compatible_customized_instance", plain: canonical}
    assert tuple(deployed) == ("benchmark_compatible_customized_instance", True)
    assert service.client.get(f"/api/v1/verifier/runs/{run_id}").status_code == 401
