from typing import Any

from toygame import ToyGame, count_hash

from playproof.core.contract import parse_contract
from playproof.core.evidence import Evidence
from playproof.core.replay import replay_in_session
from playproof.core.tracker import MilestoneTracker


def contract(*milestones: dict[str, Any]) -> Any:
    return parse_contract({"game": "toy", "milestones": list(milestones)})


def at_least(
    mid: str, value: int, requires: tuple[str, ...] = (), key: str = "count"
) -> dict[str, Any]:
    return {
        "id": mid,
        "requires": list(requires),
        "check": {"kind": "state", "key": key, "op": ">=", "value": value},
    }


def test_passing_is_sticky() -> None:
    result = replay_in_session(
        ToyGame(), 0, ["inc", "inc", "dec", "dec"], contract(at_least("two", 2))
    )
    assert [(p.id, p.turn) for p in result.verified] == [("two", 2)]


def test_prerequisite_gates_a_check_that_already_holds() -> None:
    c = contract(
        {"id": "gate", "check": {"kind": "state", "key": "ticks", "op": ">=", "value": 3}},
        at_least("one", 1, ("gate",)),
    )
    result = replay_in_session(ToyGame(), 0, ["inc", "wait", "wait", "wait"], c)
    # 'one' holds from turn 1, but may only pass once 'gate' passed at turn 3.
    assert [(p.id, p.turn) for p in result.verified] == [("gate", 3), ("one", 3)]


def test_dependents_pass_at_the_same_snapshot() -> None:
    c = contract(at_least("a", 1), at_least("b", 1, ("a",)), at_least("c", 1, ("b",)))
    result = replay_in_session(ToyGame(), 0, ["inc"], c)
    assert [(p.id, p.turn) for p in result.verified] == [("a", 1), ("b", 1), ("c", 1)]


def test_initial_snapshot_counts() -> None:
    result = replay_in_session(ToyGame(start=5), 0, [], contract(at_least("five", 5)))
    assert [(p.id, p.turn) for p in result.verified] == [("five", 0)]


def test_missing_key_never_holds() -> None:
    c = contract({"id": "x", "check": {"kind": "state", "key": "absent", "op": "<", "value": 10}})
    assert replay_in_session(ToyGame(), 0, ["inc"], c).verified == ()


def test_event_holds_once_logged_even_after_it_scrolled_away() -> None:
    c = contract(
        {"id": "gate", "check": {"kind": "state", "key": "ticks", "op": ">=", "value": 4}},
        {"id": "saw-2", "requires": ["gate"], "check": {"kind": "event", "event": "reached-2"}},
    )
    result = replay_in_session(ToyGame(), 0, ["inc", "inc", "wait", "wait"], c)
    assert [(p.id, p.turn) for p in result.verified] == [("gate", 4), ("saw-2", 4)]


def test_every_check_kind_and_operator() -> None:
    c = contract(
        {"id": "save", "check": {"kind": "save", "key": "count", "op": "==", "value": 2}},
        {"id": "frame", "check": {"kind": "frame", "key": "shown", "op": ">", "value": 2}},
        {"id": "hash", "check": {"kind": "save-hash", "hash": count_hash(1)}},
        {"id": "fhash", "check": {"kind": "frame-hash", "hash": count_hash(3)}},
        {"id": "neg", "check": {"kind": "state", "key": "count", "op": "<", "value": 0}},
        {"id": "ne", "check": {"kind": "state", "key": "count", "op": "!=", "value": 0}},
        {"id": "le", "check": {"kind": "state", "key": "ticks", "op": "<=", "value": 0}},
    )
    result = replay_in_session(ToyGame(), 0, ["inc", "inc", "inc", "dec", "dec", "dec", "dec"], c)
    assert {p.id: p.turn for p in result.verified} == {
        "le": 0,
        "hash": 1,
        "ne": 1,
        "save": 2,
        "frame": 3,
        "fhash": 3,
        "neg": 7,
    }


def test_tracker_reports_new_ids_in_contract_order() -> None:
    tracker = MilestoneTracker(contract(at_least("a", 1), at_least("b", 2)))
    assert tracker.observe(Evidence(engine={"count": 5}), 4) == ("a", "b")
    assert tracker.complete
    assert tracker.observe(Evidence(engine={"count": 9}), 5) == ()
