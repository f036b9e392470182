"""Deriving a contract from the 2048 reference plus marks: values and hashes come off the replay."""

import pytest

from playproof.adapters.native.game2048 import make_game
from playproof.core.contract import EventCheck, HashCheck, ValueCheck
from playproof.core.replay import replay_in_session
from playproof.errors import ContractError
from playproof.targets import get_target
from playproof.verify import MarkSet, derive_contract, trace_contract

TARGET = get_target("native/2048")


def _marks(*marks: dict[str, object]) -> MarkSet:
    return MarkSet.model_validate({"schema": "playproof/marks/v1", "game": "2048", "marks": marks})


def _trace() -> tuple:  # type: ignore[type-arg]
    result = replay_in_session(make_game(), 0, TARGET.reference, trace_contract("2048"), trace=True)
    assert result.trace is not None
    return result.trace


def test_values_events_and_hashes_are_read_off_the_reference() -> None:
    trace = _trace()
    contract = derive_contract(
        make_game,
        TARGET.reference,
        _marks(
            {"id": "early", "turn": 5, "kind": "save-hash"},
            {"id": "thirty-two", "turn": 16, "kind": "event"},
            {"id": "big", "turn": 108, "kind": "state", "key": "max_tile"},
            {"id": "scored", "turn": 150, "kind": "save", "key": "score", "requires": []},
        ),
    )
    early, event, big, scored = contract.milestones
    assert isinstance(early.check, HashCheck)
    assert early.check.hash == trace[5].save_hash
    assert isinstance(event.check, EventCheck)
    assert event.check.event == "tile-32"
    assert isinstance(big.check, ValueCheck)
    assert big.check.value == trace[108].engine["max_tile"]
    assert big.check.value == 128
    assert isinstance(scored.check, ValueCheck)
    assert scored.check.value == trace[150].save["score"]
    assert (event.requires, big.requires, scored.requires) == (("early",), ("thirty-two",), ())


def test_marks_that_the_reference_cannot_back_are_all_reported() -> None:
    with pytest.raises(ContractError) as caught:
        derive_contract(
            make_game,
            TARGET.reference,
            _marks(
                {"id": "nokey", "turn": 3, "kind": "state", "key": "lives"},
                {"id": "late", "turn": 10_000, "kind": "frame-hash"},
                {"id": "quiet", "turn": 2, "kind": "event"},
                {"id": "never", "turn": 2, "kind": "event", "key": "tile-4096"},
            ),
        )
    text = str(caught.value)
    assert len(caught.value.violations) == 4
    assert "no state key 'lives'" in text
    assert "turn 10000" in text
    assert "tile-4096" in text


def test_a_derived_milestone_the_reference_does_not_earn_is_refused() -> None:
    # "==" on the score at turn 20 holds only at that turn; requiring a later mark first
    # makes it unreachable, and the check replay says so.
    with pytest.raises(ContractError, match="does not earn derived milestone 'exact'"):
        derive_contract(
            make_game,
            TARGET.reference,
            _marks(
                {"id": "late", "turn": 100, "kind": "state", "key": "max_tile"},
                {"id": "exact", "turn": 20, "kind": "state", "key": "moves", "op": "=="},
            ),
        )
