"""Signature plus replay on 2048 with real keys: the forgeries an attacker would try."""

import base64
import json
from typing import Any

import pytest

import playproof
from playproof.core.contract import parse_contract
from playproof.drivers import ScriptedDriver
from playproof.engine import EpisodeConfig, play
from playproof.sign import SigningKey, sign_record
from playproof.targets import get_target

TARGET = get_target("native/2048")
KEY = SigningKey.generate()


@pytest.fixture(scope="module")
def record() -> playproof.RunRecord:
    return playproof.run(TARGET, ScriptedDriver(TARGET.reference[:60]), max_turns=60)


def test_honest_record_is_clean(record: playproof.RunRecord) -> None:
    report = playproof.verify_signed(sign_record(record, KEY).to_json(), [KEY.verifying_key])
    assert report.clean, report.failed()
    assert report.key_id == KEY.key_id
    assert report.verified == [c.id for c in record.claimed]


def test_swapped_contract_is_a_pin_mismatch() -> None:
    import asyncio

    data = TARGET.contract.to_json()
    data["milestones"] = data["milestones"][:3]  # an easier contract the agent chose itself
    easier = parse_contract(data)
    game = TARGET.open()
    swapped = asyncio.run(
        play(
            game,
            easier,
            ScriptedDriver(TARGET.reference[:60]),
            EpisodeConfig(max_turns=60, target_name=TARGET.name),
        )
    )
    report = playproof.verify_signed(sign_record(swapped, KEY).to_json(), [KEY.verifying_key])
    assert not report.clean
    failed = {c.id for c in report.failed()}
    assert "target-pinned" in failed
    assert "contract hash" in next(c.reason for c in report.failed() if c.id == "target-pinned")


def _forge_payload(envelope: dict[str, Any], edit: Any) -> dict[str, Any]:
    statement = json.loads(base64.b64decode(envelope["payload"]))
    edit(statement["predicate"])
    return {**envelope, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}


def test_edited_payload_fails_the_signature(record: playproof.RunRecord) -> None:
    envelope = sign_record(record, KEY).to_json()
    forged = _forge_payload(envelope, lambda r: r["claimed"].append({"id": "tile-256", "turn": 1}))
    report = playproof.verify_signed(forged, [KEY.verifying_key])
    assert not report.clean
    assert "signature-valid" in {c.id for c in report.failed()}
    assert report.verified == []


def test_resigned_by_a_stranger_is_untrusted(record: playproof.RunRecord) -> None:
    stranger = SigningKey.generate()
    report = playproof.verify_signed(sign_record(record, stranger).to_json(), [KEY.verifying_key])
    assert not report.clean
    assert "signature-valid" in {c.id for c in report.failed()}


def test_trusted_but_lying_recorder_is_caught_by_replay(record: playproof.RunRecord) -> None:
    lie = record.model_copy(
        update={
            "claimed": (*record.claimed, record.claimed[0].model_copy(update={"id": "tile-256"}))
        }
    )
    report = playproof.verify_signed(sign_record(lie, KEY).to_json(), [KEY.verifying_key])
    assert [c.id for c in report.failed()] == ["claims-reproduced"]
