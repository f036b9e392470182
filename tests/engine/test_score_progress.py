"""The engine's scores: records, turn reports and segment reports count identity apart."""

import asyncio

from toygame import ToyGame, count_hash

from playproof.core.contract import parse_contract
from playproof.drivers import ScriptedDriver
from playproof.engine import EpisodeConfig, SegmentReport, TurnReport, play, run_campaign
from playproof.verify import attest

# Two legible milestones and one identity milestone (the frame showing count 2).
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
INPUTS = ("inc", "inc", "inc")


def test_a_record_says_how_many_milestones_are_identity_milestones() -> None:
    turns: list[TurnReport] = []
    record = asyncio.run(
        play(
            ToyGame(),
            MIXED,
            ScriptedDriver(INPUTS),
            EpisodeConfig(max_turns=len(INPUTS)),
            on_turn=turns.append,
        )
    )
    assert [c.id for c in record.claimed] == ["one", "at-two"]
    assert record.milestones_identity == 1
    assert record.identity_claimed == ("at-two",)
    assert record.score.text == "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)"
    assert [str(t.score) for t in turns] == [
        "1 of 2 earnable (1 of 3 verified, 0 of 1 replay-identity)",
        "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)",
        "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)",
    ]
    report = attest(record, ToyGame(), MIXED)
    assert report.clean, report.failed()
    assert report.identity_verified == ["at-two"]
    assert report.score is not None
    assert report.score == record.score


def test_segment_reports_score_earned_over_earnable() -> None:
    reports: list[SegmentReport] = []
    result = asyncio.run(
        run_campaign(
            ToyGame(),
            MIXED,
            ScriptedDriver(INPUTS),
            EpisodeConfig(max_turns=len(INPUTS)),
            segment_turns=2,
            on_segment=reports.append,
        )
    )
    assert [str(r.score) for r in reports] == [
        "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)",
        "1 of 2 earnable (2 of 3 verified, 1 of 1 replay-identity)",
    ]
    assert reports[0].identity_milestones == ("at-two",)
    assert result.record is not None
    assert result.record.score == reports[-1].score
