"""The service verifies all three modes: replay, trusted-recorder and platform-attested.

A trusted-recorder record is uploaded as a run upload with its signed
transcript (and the contract of its ad-hoc target); the server verifies it
from the transcript with the owner's keys as recorder keys. A
platform-attested record is uploaded bare and verified from the responses it
pins. Neither is ever ranked beside replayed runs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import desktop_specs
import pytest
from receipts_fakes import STEAM_APP, STEAM_USER, fake_provider
from toygame import ToyGame

import playproof
from playproof.adapters.desktop import TranscriptSealer
from playproof.adapters.receipts import Credentials, arun_receipts, read_receipts_spec
from playproof.core.contract import Contract
from playproof.core.game import VerificationMode
from playproof.core.record import RunRecord
from playproof.drivers import ScriptedDriver
from playproof.engine import EpisodeConfig
from playproof.sign import RUN_UPLOAD_MEDIA_TYPE, SigningKey

from .conftest import Service

WORDS = ["north", "take", "north", "take", "quit"]


@dataclass(frozen=True)
class Desktop:
    """A trusted-recorder run of the cave game: its record, transcript and contract."""

    record: RunRecord
    transcript: bytes
    contract: Contract


@pytest.fixture(scope="session")
def desktop(tmp_path_factory: pytest.TempPathFactory, signer: SigningKey) -> Desktop:
    """One live pass of the cave game, its transcript signed by the test signer."""
    folder = tmp_path_factory.mktemp("service-desktop")
    spec, contract = desktop_specs.cave(folder / "cave")
    sealer = TranscriptSealer(signer, folder / "run.transcript.json")
    record = playproof.run(
        f"desktop:{spec}",
        ScriptedDriver(WORDS),
        contract=contract,
        mode=VerificationMode.TRUSTED_RECORDER,
        recorder=sealer,
        max_turns=len(WORDS),
    )
    assert sealer.sealed is not None
    return Desktop(record, sealer.sealed, contract)


def bundle(
    record: RunRecord,
    signer: SigningKey,
    transcript: bytes | None = None,
    contract: Contract | None = None,
) -> bytes:
    """A run upload of ``record`` signed by ``signer``."""
    body: dict[str, Any] = {
        "schema": "playproof/run-upload/v1",
        "envelope": playproof.sign_record(record, signer).to_json(),
    }
    if transcript is not None:
        body["transcript"] = json.loads(transcript)
    if contract is not None:
        body["contract"] = contract.model_dump(mode="json", by_alias=True)
    return json.dumps(body).encode("utf-8")


def post_bundle(service: Service, body: bytes, token: str) -> Any:
    return service.upload(body, token, **{"Content-Type": RUN_UPLOAD_MEDIA_TYPE})


def proof(service: Service, run_id: str, token: str) -> dict[str, Any]:
    answer = service.client.get(
        f"/api/v1/verifier/runs/{run_id}", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_trusted_recorder_upload_is_verified_from_its_transcript(
    service: Service, signer: SigningKey, desktop: Desktop
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    body = bundle(desktop.record, signer, desktop.transcript, desktop.contract)
    answer = post_bundle(service, body, token)
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["id"]
    status = service.verdict(run_id, token)
    assert status["status"] == "verified", status
    assert status["trust_label"] == "benchmark_compatible_customized_instance"
    document = proof(service, run_id, token)
    assert document["run"]["verification_mode"] == "trusted-recorder"
    trust = document["run"]["verification_trust"]
    assert signer.key_id[:16] in trust
    assert "not re-executed" in trust
    # No block of the document claims a replay that never happened.
    titles = [group["title"] for group in document["cats"]]
    assert titles
    assert not any("replayed" in title for title in titles)
    local = playproof.verify_record(
        desktop.record,
        contract=desktop.contract,
        transcript=desktop.transcript,
        recorder_keys=[signer.verifying_key],
    )
    assert document["run"]["verified_milestones"] == local.verified
    # The same bundle again is the same run.
    again = post_bundle(service, body, token)
    assert again.status_code == 200
    assert again.json()["id"] == run_id


def test_a_tampered_transcript_is_rejected_naming_the_check(
    service: Service, signer: SigningKey, desktop: Desktop
) -> None:
    envelope = json.loads(desktop.transcript)
    payload = json.loads(base64.b64decode(envelope["payload"]))
    payload["steps"][1]["output"] = payload["steps"][1]["output"] + "You feel rich\n"
    envelope["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    token = service.owner("alice", (signer.verifying_key,))
    answer = post_bundle(
        service,
        bundle(desktop.record, signer, json.dumps(envelope).encode(), desktop.contract),
        token,
    )
    assert answer.status_code == 202, answer.text
    status = service.verdict(answer.json()["id"], token)
    assert status["status"] == "rejected"
    assert any(c.startswith("transcript-signed: ") for c in status["failed_checks"])


def test_a_recorder_key_the_owner_did_not_register_is_rejected(
    service: Service, signer: SigningKey, desktop: Desktop
) -> None:
    other = SigningKey.generate()
    token = service.owner("alice", (other.verifying_key,))
    # The record is signed by a registered key; the transcript's recorder key is not one.
    answer = post_bundle(
        service, bundle(desktop.record, other, desktop.transcript, desktop.contract), token
    )
    assert answer.status_code == 202, answer.text
    status = service.verdict(answer.json()["id"], token)
    assert status["status"] == "rejected"
    assert any(c.startswith("transcript-signed: ") for c in status["failed_checks"])


def test_a_trusted_recorder_record_without_its_transcript_is_refused(
    service: Service, signer: SigningKey, desktop: Desktop
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    bare = service.upload(playproof.sign_record(desktop.record, signer).to_bytes(), token)
    assert bare.status_code == 422
    assert bare.headers["content-type"].startswith("application/problem+json")
    assert bare.json()["type"].endswith("/transcript-required")
    without = post_bundle(service, bundle(desktop.record, signer, None, desktop.contract), token)
    assert without.status_code == 422
    assert without.json()["type"].endswith("/transcript-required")
    no_contract = post_bundle(service, bundle(desktop.record, signer, desktop.transcript), token)
    assert no_contract.status_code == 422
    assert no_contract.json()["type"].endswith("/contract-required")
    with service.sessions() as session:
        from playproof.service.runs.models import Run

        assert session.query(Run).count() == 0


def test_a_malformed_run_upload_is_refused(service: Service, signer: SigningKey) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    for body in (b"[]", b'{"schema": "playproof/run-upload/v1"}', b'{"envelope": 1}'):
        answer = post_bundle(service, body, token)
        assert answer.status_code == 422
        assert answer.json()["type"].endswith("/upload-well-formed")


def test_a_replay_record_with_a_transcript_is_refused(
    service: Service, signer: SigningKey, record_2048: RunRecord, desktop: Desktop
) -> None:
    token = service.owner("alice", (signer.verifying_key,))
    answer = post_bundle(service, bundle(record_2048, signer, desktop.transcript), token)
    assert answer.status_code == 422
    assert answer.json()["type"].endswith("/upload-unexpected-part")
    # As a run upload without extra parts, a replay record is accepted like a bare envelope.
    plain = post_bundle(service, bundle(record_2048, signer), token)
    assert plain.status_code == 202
    assert service.verdict(plain.json()["id"], token)["status"] == "verified"


def test_a_non_replay_run_is_never_ranked_beside_replayed_runs(
    service: Service, signer: SigningKey, desktop: Desktop
) -> None:
    # A trusted-recorder record that names a packaged target and says it is calibrated: the
    # target (2048) declares replay only, so its transcript cannot stand in for a replay; the
    # run is rejected naming the mode, and stays off the public board.
    target = desktop.record.target.model_copy(update={"name": "native/2048", "calibrated": True})
    posing = desktop.record.model_copy(update={"target": target})
    token = service.owner("alice", (signer.verifying_key,))
    answer = post_bundle(
        service, bundle(posing, signer, desktop.transcript, desktop.contract), token
    )
    assert answer.status_code == 202, answer.text
    status = service.verdict(answer.json()["id"], token)
    assert status["status"] == "rejected", status
    assert status["failed_checks"] == [
        "mode-supported: native/2048 declares replay; the record asks to be verified "
        "trusted-recorder"
    ]
    assert status["trust_label"] == "benchmark_compatible_customized_instance"
    board = service.client.get("/api/v1/leaderboards/native/2048").json()
    assert board["total"] == 0


def _receipts_record() -> RunRecord:
    class Unlocking(ToyGame):
        def step(self, word: str) -> None:
            super().step(word)
            with server.lock:
                if self.count >= 2:
                    server.state.achievements["ACH_WIN"] = True

    spec_data = {
        "schema": "playproof/receipts-target/v1",
        "name": "tf2-demo",
        "provider": "steam",
        "title_id": STEAM_APP,
        "play": "toy",
        "user_env": "STEAM_USER_ID",
        "key_env": "STEAM_API_KEY",
        "game_name": "Team Fortress 2",
        "milestones": [{"id": "win", "achievement": "ACH_WIN"}],
    }
    with fake_provider("steam") as server:
        server.state.achievements = {"ACH_WIN": False, "ACH_OTHER": True}
        spec = read_receipts_spec(json.dumps({**spec_data, "base_url": server.base_url}))
        config = EpisodeConfig(seed=0, max_turns=3, mode=VerificationMode.PLATFORM_ATTESTED)
        return asyncio.run(
            arun_receipts(
                spec,
                Unlocking(),
                ScriptedDriver(["inc", "inc", "wait"]),
                config,
                credentials=Credentials(STEAM_USER, "SENTINEL-KEY-service"),
            )
        )


def test_a_platform_attested_upload_is_verified_from_its_pinned_responses(
    service: Service, signer: SigningKey
) -> None:
    record = _receipts_record()
    assert [c.id for c in record.claimed] == ["win"]
    token = service.owner("alice", (signer.verifying_key,))
    answer = service.upload(playproof.sign_record(record, signer).to_bytes(), token)
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["id"]
    status = service.verdict(run_id, token)
    assert status["status"] == "verified", status
    assert status["trust_label"] == "benchmark_compatible_customized_instance"
    document = proof(service, run_id, token)
    assert document["run"]["verification_mode"] == "platform-attested"
    assert "Steam's Web API said so at" in document["run"]["verification_trust"]
    assert document["run"]["verified_milestones"] == ["win"]


def test_the_openapi_document_describes_the_run_upload(service: Service) -> None:
    spec = service.client.get("/openapi.json").json()
    content = spec["paths"]["/api/v1/runs"]["post"]["requestBody"]["content"]
    assert set(content) == {"application/json", RUN_UPLOAD_MEDIA_TYPE}
    upload = content[RUN_UPLOAD_MEDIA_TYPE]["schema"]
    assert upload["properties"]["schema"]["const"] == "playproof/run-upload/v1"
    assert set(upload["properties"]) == {"schema", "envelope", "transcript", "contract"}


def test_the_run_upload_model_round_trips(
    signer: SigningKey, desktop: Desktop, tmp_path: Path
) -> None:
    from playproof.sign import RunUpload

    raw = bundle(desktop.record, signer, desktop.transcript, desktop.contract)
    upload = RunUpload.parse(raw)
    assert upload.contract == desktop.contract
    assert RunUpload.parse(json.dumps(upload.to_json())) == upload


def test_the_submit_body_of_a_trusted_recorder_record_is_a_run_upload(
    service: Service, signer: SigningKey, desktop: Desktop
) -> None:
    from playproof.cli._desktop import upload_body

    envelope = playproof.sign_record(desktop.record, signer).to_bytes()
    assert upload_body(envelope, None, None) == (envelope, "application/json")
    body, media_type = upload_body(envelope, desktop.transcript, desktop.contract)
    assert media_type == RUN_UPLOAD_MEDIA_TYPE
    token = service.owner("alice", (signer.verifying_key,))
    answer = service.upload(body, token, **{"Content-Type": media_type})
    assert answer.status_code == 202, answer.text
    assert service.verdict(answer.json()["id"], token)["status"] == "verified"


def test_two_records_racing_to_store_one_transcript_both_land(
    service: Service,
    signer: SigningKey,
    desktop: Desktop,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A concurrent upload that stored the same transcript first costs a retry, never a 500."""
    from playproof.service.artifacts.models import Artifact
    from playproof.service.runs import services as run_services

    other = SigningKey.generate()
    token = service.owner("race", (signer.verifying_key, other.verifying_key))
    first = post_bundle(
        service, bundle(desktop.record, signer, desktop.transcript, desktop.contract), token
    )
    assert first.status_code == 202, first.text
    # The second upload's existence check "misses" once, as it does when the other
    # upload commits between the check and the insert: its insert then collides.
    real = run_services.store_artifact
    missed: list[bool] = []

    def racing(session: Any, content: bytes, media_type: str) -> Any:
        if not missed:
            missed.append(True)
            digest = hashlib.sha256(content).hexdigest()
            artifact = Artifact(
                digest=digest, size=len(content), media_type=media_type, content=content
            )
            session.add(artifact)
            return artifact
        return real(session, content, media_type)

    monkeypatch.setattr(run_services, "store_artifact", racing)
    second = post_bundle(
        service, bundle(desktop.record, other, desktop.transcript, desktop.contract), token
    )
    assert missed
    assert second.status_code == 202, second.text
    assert second.json()["id"] != first.json()["id"]
    assert service.verdict(second.json()["id"], token)["status"] == "verified"


def test_an_upload_that_keeps_colliding_gets_a_503_to_send_again(
    service: Service,
    signer: SigningKey,
    desktop: Desktop,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playproof.service.artifacts.models import Artifact
    from playproof.service.runs import services as run_services

    other = SigningKey.generate()
    token = service.owner("contended", (signer.verifying_key, other.verifying_key))
    first = post_bundle(
        service, bundle(desktop.record, signer, desktop.transcript, desktop.contract), token
    )
    assert first.status_code == 202, first.text

    def always_colliding(session: Any, content: bytes, media_type: str) -> Any:
        digest = hashlib.sha256(content).hexdigest()
        artifact = Artifact(
            digest=digest, size=len(content), media_type=media_type, content=content
        )
        session.add(artifact)
        return artifact

    monkeypatch.setattr(run_services, "store_artifact", always_colliding)
    second = post_bundle(
        service, bundle(desktop.record, other, desktop.transcript, desktop.contract), token
    )
    assert second.status_code == 503, second.text
    assert second.json()["type"].endswith("/upload-contended")
