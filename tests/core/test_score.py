"""Scores: earned over earnable, identity milestones apart, and how records carry them."""

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from playproof.core.contract import parse_contract
from playproof.core.record import RunRecord
from playproof.core.score import Score, identity_ids, score_of
from playproof.sign import record_digest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "records"


def _milestone(mid: str, kind: str) -> dict[str, Any]:
    if kind in ("save-hash", "frame-hash"):
        return {"id": mid, "check": {"kind": kind, "hash": "a" * 64}}
    return {"id": mid, "check": {"kind": "state", "key": mid, "op": ">=", "value": 1}}


MIXED = parse_contract(
    {
        "schema": "playproof/contract/v1",
        "game": "toy",
        "milestones": [
            _milestone("a", "state"),
            _milestone("b", "state"),
            _milestone("c", "state"),
            _milestone("d", "state"),
            _milestone("h1", "frame-hash"),
            _milestone("h2", "save-hash"),
        ],
    }
)


def test_a_score_without_identity_milestones_reads_as_a_plain_ratio() -> None:
    assert str(Score(earned=3, earnable=4)) == "3 of 4"
    assert f"{Score(earned=3, earnable=4):>8}" == "  3 of 4"


def test_identity_milestones_are_counted_apart_and_said_in_full() -> None:
    score = score_of(MIXED, ["a", "b", "c", "h1", "h2"])
    assert (score.earned, score.earnable, score.identity_reached, score.identity_total) == (
        3,
        4,
        2,
        2,
    )
    assert score.text == "3 of 4 earnable (5 of 6 verified, 2 of 2 replay-identity)"
    assert identity_ids(MIXED) == {"h1", "h2"}


def test_identity_milestones_never_enter_the_ratio() -> None:
    # Reaching only opaque states earns nothing earnable.
    score = score_of(MIXED, ["h1", "h2"])
    assert score.earned == 0
    assert score.text.startswith("0 of 4 earnable")


def test_unknown_ids_are_ignored() -> None:
    assert score_of(MIXED, ["a", "zz"]).earned == 1


@given(
    earnable=st.integers(0, 50),
    identity=st.integers(0, 50),
    data=st.data(),
)
def test_score_numbers_add_up(earnable: int, identity: int, data: st.DataObject) -> None:
    earned = data.draw(st.integers(0, earnable))
    reached = data.draw(st.integers(0, identity))
    score = Score(
        earned=earned, earnable=earnable, identity_reached=reached, identity_total=identity
    )
    assert score.verified == earned + reached
    assert score.total == earnable + identity
    assert score.text.startswith(f"{earned} of {earnable}")
    assert ("replay-identity" in score.text) == (identity > 0)


@pytest.mark.parametrize(
    "fields",
    [
        {"earned": 5, "earnable": 4},
        {"earned": 0, "earnable": 4, "identity_reached": 3, "identity_total": 2},
        {"earned": 0, "earnable": 4, "identity_reached": 1, "identity_total": None},
    ],
)
def test_inconsistent_scores_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Score(**fields)


def _fixture_record() -> tuple[dict[str, Any], str]:
    envelope = json.loads((FIXTURES / "v1-2048-signed.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    return statement["predicate"], statement["subject"][0]["digest"]["sha256"]


def test_a_record_from_before_identity_counting_parses_and_keeps_its_digest() -> None:
    raw, signed_digest = _fixture_record()
    assert "milestones_identity" not in raw
    record = RunRecord.model_validate(raw)
    assert record.milestones_identity is None
    assert record.target.calibrated is None
    # Unknown later fields are left out again, so the signed digest still matches.
    assert record.to_json() == raw
    assert record_digest(record) == signed_digest
    assert str(record.score) == "7 of 7"
    assert not record.score.identity_known


def _with(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**raw, **changes}


def test_a_record_with_identity_fields_scores_earned_over_earnable() -> None:
    raw, _ = _fixture_record()
    claimed = raw["claimed"]
    record = RunRecord.model_validate(
        _with(
            raw,
            milestones_total=9,
            milestones_identity=2,
            identity_claimed=[claimed[0]["id"]],
        )
    )
    assert record.score.earned == 6
    assert record.score.earnable == 7
    assert record.score.text == "6 of 7 earnable (7 of 9 verified, 1 of 2 replay-identity)"
    assert record.to_json()["milestones_identity"] == 2


@pytest.mark.parametrize(
    "changes",
    [
        {"milestones_identity": 1},  # without identity_claimed
        {"identity_claimed": []},  # without milestones_identity
        {"milestones_identity": 8, "identity_claimed": []},  # more than the total
        {"milestones_identity": 1, "identity_claimed": ["not-claimed"]},
        {"milestones_identity": 1, "identity_claimed": ["moved", "moved"]},
        {"milestones_identity": 1, "identity_claimed": ["moved", "tile-16"]},
    ],
)
def test_inconsistent_identity_fields_are_refused(changes: dict[str, Any]) -> None:
    raw, _ = _fixture_record()
    with pytest.raises(ValidationError):
        RunRecord.model_validate(_with(raw, **changes))


def test_the_uncalibrated_label_follows_the_pin() -> None:
    raw, _ = _fixture_record()
    pin = raw["target"]
    old = RunRecord.model_validate(raw)
    adhoc = RunRecord.model_validate(
        _with(raw, target={**pin, "name": "gym:CartPole-v1", "calibrated": False})
    )
    assert old.target.label == "native/2048"
    assert adhoc.target.label == "gym:CartPole-v1 (uncalibrated)"
    assert "uncalibrated" in repr(adhoc)
