"""Hostile score claims: the verifier recomputes identity counts from its own contract."""

import asyncio
from typing import Any

import pytest
from toygame import ToyGame, count_hash

from playproof.core.contract import parse_contract
from playproof.core.record import RunRecord
from playproof.drivers import ScriptedDriver
from playproof.engine import EpisodeConfig, play
from playproof.verify import attest

MIXED = parse_contract(
    {
        "schema": "playproof/contract/v1",
        "game": "toy",
        "milestones": [
            {"id": "one", "check": {"kind": "state", "key": "count", "op": ">=", "value": 1}},
            {"id": "at-two", "check": {"kind": "frame-hash", "hash": count_hash(2)}},
            {"id": "five", "check": {"kind": "state", "key": "count", "op": ">=", "value": 5}},
        ],
    }
)


@pytest.fixture(scope="module")
def honest() -> RunRecord:
    return asyncio.run(
        play(ToyGame(), MIXED, ScriptedDriver(("inc", "inc")), EpisodeConfig(max_turns=2))
    )


def _forged(record: RunRecord, **changes: Any) -> dict[str, Any]:
    return {**record.to_json(), **changes}


def test_passing_an_identity_milestone_off_as_earnable_is_rejected(honest: RunRecord) -> None:
    # Claiming the frame-hash milestone as earnable inflates the ratio to "2 of 3".
    forged = _forged(honest, milestones_identity=0, identity_claimed=[])
    assert str(RunRecord.model_validate(forged).score) == "2 of 3"
    report = attest(forged, ToyGame(), MIXED)
    assert not report.clean
    failed = {c.id: c.reason for c in report.failed()}
    assert "identity milestones" in failed["target-pinned"]
    # The report's own score comes from the contract, never from the record.
    assert report.score is not None
    assert report.score.earnable == 2


def test_a_wrong_identity_claim_list_is_rejected(honest: RunRecord) -> None:
    forged = _forged(honest, identity_claimed=[])
    report = attest(forged, ToyGame(), MIXED)
    assert not report.clean
    assert any(c.id == "claims-reproduced" and "identity" in c.reason for c in report.failed())


def test_an_old_record_is_scored_from_the_verifiers_contract(honest: RunRecord) -> None:
    old = honest.to_json()
    del old["milestones_identity"], old["identity_claimed"]
    report = attest(old, ToyGame(), MIXED)
    assert report.clean, report.failed()
    assert report.score is not None
    assert report.score.text == "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)"


@pytest.mark.parametrize(
    "changes",
    [
        {"milestones_identity": -1, "identity_claimed": []},
        {"milestones_identity": "2", "identity_claimed": "at-two"},
        {"milestones_identity": 10**30, "identity_claimed": []},
        {"identity_claimed": ["x" * 10_000]},
    ],
)
def test_malformed_identity_fields_are_reasons_not_exceptions(
    honest: RunRecord, changes: dict[str, Any]
) -> None:
    report = attest(_forged(honest, **changes), ToyGame(), MIXED)
    assert not report.clean
    assert report.checks[0].id == "record-well-formed"
