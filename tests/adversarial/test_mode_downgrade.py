"""A signer may not pick how its record is verified: the verifier's target decides.

Each attack starts from an honest, signed ``native/2048`` record and changes
what the record says about itself (its mode, its calibration, its name), signs
it again with the trusted key, and is checked against the 2048 target. The
2048 platform declares replay only, so a record that asks to be verified from
pinned receipts or from a transcript must fail ``mode-supported`` instead of
earning 2048's milestones without 2048 being run; and a report names the
target and calibration the verifier resolved, never the record's own words.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import playproof
from playproof.core.canonical import sha256_hex
from playproof.core.chain import ChainLinker, genesis_hash
from playproof.core.contract import Contract
from playproof.core.receipts import ReceiptsSpec, receipts_build_digest, receipts_contract
from playproof.core.record import RunRecord
from playproof.core.transcript import (
    TRANSCRIPT_PAYLOAD_TYPE,
    EvidenceRules,
    Transcript,
    build_digest_of,
)
from playproof.drivers import BaselineDriver
from playproof.sign import SigningKey, sign_record
from playproof.sign._dsse import sign_payload
from playproof.targets import get_target

KEY = SigningKey.generate()
TWENTY48 = get_target("native/2048")


def _honest(turns: int = 5, contract: Contract | None = None) -> RunRecord:
    return playproof.run(
        "native/2048",
        BaselineDriver("random-walk", seed=1),
        max_turns=turns,
        worker=False,
        contract=contract,
    )


def _rechained(data: dict[str, Any], record: RunRecord) -> None:
    pin = data["target"]
    genesis = genesis_hash(pin["game_id"], pin["build_digest"], pin["contract_hash"], seed=0)
    data["chain_head"] = ChainLinker(genesis).extend(1, record.log.inputs, record.log.costs_usd)


def _signed(data: dict[str, Any]) -> bytes:
    return sign_record(RunRecord.model_validate(data), KEY).to_bytes()


def _failed(report: Any) -> dict[str, str]:
    return {c.id: c.reason for c in report.checks if not c.passed}


def _forged_receipts(honest: RunRecord, name: str | None) -> bytes:
    """A receipts section whose made-up Steam replies unlock every 2048 milestone."""
    ids = [m.id for m in TWENTY48.contract.milestones]
    user, app = "76561190000000001", "440"
    spec = ReceiptsSpec.model_validate(
        {
            "name": "made-up",
            "provider": "steam",
            "title_id": app,
            "play": "native/2048",
            "user_env": "U",
            "key_env": "K",
            "milestones": [{"id": m, "achievement": f"A{n}"} for n, m in enumerate(ids)],
        }
    )

    def reply(achieved: int) -> str:
        rows = [{"apiname": f"A{n}", "achieved": achieved} for n in range(len(ids))]
        return json.dumps({"playerstats": {"steamID": user, "success": True, "achievements": rows}})

    responses = [
        {
            "phase": phase,
            "endpoint": "steam-achievements",
            "page": 0,
            "request": f"/ISteamUserStats/GetPlayerAchievements/v1/?appid={app}&steamid={user}",
            "sha256": sha256_hex(reply(value).encode()),
            "body": reply(value),
            "received_at": "t",
        }
        for phase, value in (("baseline", 0), ("final", 1))
    ]
    build = receipts_build_digest(spec, "0" * 64)
    data = honest.to_json()
    data["target"] = {
        "name": name,
        "game_id": "made-up",
        "build_digest": build,
        "contract_hash": receipts_contract(spec).hash,
        "platform": "steam",
        "verification_mode": "platform-attested",
        "calibrated": True,
    }
    data["receipts"] = {
        "spec": spec.to_json(),
        "user": user,
        "played": "native/2048",
        "played_digest": "0" * 64,
        "baseline_at": "a",
        "final_at": "b",
        "responses": responses,
        "judged": [
            {
                "id": m,
                "key": f"achievement:A{n}",
                "threshold": 1,
                "baseline": 0,
                "final": 1,
                "earned": True,
            }
            for n, m in enumerate(ids)
        ],
    }
    data["claimed"] = [{"id": m, "turn": len(honest.decisions)} for m in ids]
    data.pop("milestones_identity", None)
    data.pop("identity_claimed", None)
    _rechained(data, honest)
    return _signed(data)


@pytest.mark.parametrize("given", [True, False])
def test_receipts_claimed_for_a_replayed_target_fail_mode_supported(given: bool) -> None:
    """Named by the verifier or only by the record, 2048 is verified by replay or not at all."""
    envelope = _forged_receipts(_honest(), "native/2048")
    report = playproof.verify_signed(
        envelope, KEY.verifying_key, target="native/2048" if given else None, worker=False
    )
    assert report.verdict != "clean"
    assert "declares replay" in _failed(report)["mode-supported"]
    assert not report.verified
    assert report.calibrated is False


def test_receipts_that_name_no_target_are_still_judged_from_their_own_spec() -> None:
    """The receipts mode itself still works: the same replies, naming no registry target."""
    report = playproof.verify_signed(
        _forged_receipts(_honest(), None), KEY.verifying_key, worker=False
    )
    assert "mode-supported" not in _failed(report)
    assert report.calibrated is False  # a receipts spec is never a calibrated target
    assert str(report.target).endswith("(uncalibrated)")


def test_a_transcript_cannot_stand_in_for_replaying_a_packaged_target() -> None:
    honest = _honest(turns=3)
    rules = EvidenceRules.model_validate(
        {
            "state": [{"key": "moves", "pattern": r"moves=(\d+)"}],
            "events": [{"event": "tile-32", "pattern": "T32"}],
        }
    )
    build = build_digest_of({"name": "made-up"}, {}, rules)
    steps = [{"turn": 0, "output": "", "at_ms": 0, "settled_ms": 0}] + [
        {"turn": i, "input": word, "output": "moves=9 T32", "at_ms": 1, "settled_ms": 1}
        for i, word in enumerate(honest.inputs, start=1)
    ]
    transcript = Transcript.model_validate(
        {
            "game_id": "2048",
            "build_digest": build,
            "platform": "native",
            "modes": ["trusted-recorder"],
            "contract_hash": TWENTY48.contract.hash,
            "seed": honest.seed,
            "spec": {"name": "made-up"},
            "pins": {},
            "rules": rules.model_dump(mode="json"),
            "steps": steps,
        }
    )
    signed_transcript = sign_payload(TRANSCRIPT_PAYLOAD_TYPE, transcript.payload(), [KEY])
    data = honest.to_json()
    data["target"].update(build_digest=build, verification_mode="trusted-recorder")
    data["recorder"] = {
        "transcript_sha256": sha256_hex(transcript.payload()),
        "key_id": KEY.verifying_key.key_id,
    }
    data["claimed"] = [{"id": "moved", "turn": 1}, {"id": "tile-32", "turn": 1}]
    _rechained(data, honest)
    for target in ("native/2048", None):
        report = playproof.verify_signed(
            _signed(data),
            KEY.verifying_key,
            target=target,
            transcript=signed_transcript.to_bytes(),
            worker=False,
        )
        assert report.verdict != "clean"
        assert "declares replay" in _failed(report)["mode-supported"]
        assert not report.verified


def test_a_record_that_calls_its_own_contract_calibrated_is_reported_uncalibrated() -> None:
    easy = Contract.model_validate(
        {
            "game": "2048",
            "milestones": [
                {"id": "m1", "check": {"kind": "state", "key": "moves", "op": ">=", "value": 1}}
            ],
        }
    )
    honest = _honest(contract=easy)
    assert honest.target.calibrated is False
    data = honest.to_json()
    data["target"]["calibrated"] = True
    report = playproof.verify_signed(_signed(data), KEY.verifying_key, contract=easy, worker=False)
    assert report.verdict == "clean"  # the run itself is honest; only its label was not
    assert report.calibrated is False
    assert report.target == "native/2048 (uncalibrated)"


def test_the_report_names_the_target_the_verifier_replayed_on() -> None:
    data = _honest().to_json()
    data["target"]["name"] = "native/some-harder-game"
    report = playproof.verify_signed(
        _signed(data), KEY.verifying_key, target="native/2048", worker=False
    )
    assert report.target == "native/2048"
    assert report.calibrated is True
    honest = playproof.verify_signed(_signed(_honest().to_json()), KEY.verifying_key, worker=False)
    assert (honest.verdict, honest.target, honest.calibrated) == ("clean", "native/2048", True)
