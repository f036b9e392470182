"""Calibration on purpose-built toy games: a combination lock separates, a mash does not."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from playproof.core.contract import Contract, parse_contract
from playproof.core.evidence import Evidence
from playproof.core.game import BuildIdentity, GameDescriptor, Platform, VerificationMode
from playproof.core.observation import Observation
from playproof.errors import TargetError
from playproof.verify import (
    CalibrationReport,
    MarkSet,
    SerialReplayer,
    attrition_milestones,
    baseline_suite,
    calibrate,
    derive_contract,
    find_collapse,
    publication_problems,
)

CODE = ("c", "a", "d", "b", "b", "d", "a", "c")


def _descriptor(name: str, vocabulary: tuple[str, ...]) -> GameDescriptor:
    return GameDescriptor(
        id=name,
        vocabulary=vocabulary,
        build=BuildIdentity(id=f"{name}/v1", digest=hashlib.sha256(name.encode()).hexdigest()),
        platform=Platform(family="test", modes=(VerificationMode.REPLAY,)),
    )


class LockGame:
    """An eight-digit combination lock: a wrong digit resets progress (and costs one of three
    lives once two digits were right); ``moves`` counts every input."""

    def __init__(self) -> None:
        self._descriptor = _descriptor("lock", ("a", "b", "c", "d"))
        self.reset(0)

    @property
    def descriptor(self) -> GameDescriptor:
        return self._descriptor

    def reset(self, seed: int) -> None:
        self.progress = self.best = self.moves = 0
        self.lives = 3

    def step(self, word: str) -> None:
        if word not in self._descriptor.vocabulary:
            return
        self.moves += 1
        if self.progress < len(CODE) and word == CODE[self.progress]:
            self.progress += 1
        else:
            if self.progress >= 2:  # botching a half-entered code costs a life
                self.lives = max(0, self.lives - 1)
            self.progress = 0
        self.best = max(self.best, self.progress)

    def evidence(self) -> Evidence:
        state = f"{self.progress}/{self.best}".encode()
        return Evidence(
            engine={"moves": self.moves, "best": self.best, "lives": self.lives},
            save_hash=hashlib.sha256(state).hexdigest(),
        )

    def observe(self) -> Observation:
        return Observation(text=f"lock {self.progress}")

    def over(self) -> bool | None:
        return None

    def close(self) -> None:
        pass


class MashGame:
    """Only ``mash`` advances the power counter; ``wait`` and ``jump`` do nothing."""

    def __init__(self) -> None:
        self._descriptor = _descriptor("mash", ("mash", "wait", "jump"))
        self.power = 0

    @property
    def descriptor(self) -> GameDescriptor:
        return self._descriptor

    def reset(self, seed: int) -> None:
        self.power = 0

    def step(self, word: str) -> None:
        if word == "mash":
            self.power += 1

    def evidence(self) -> Evidence:
        return Evidence(
            engine={"power": self.power},
            save_hash=hashlib.sha256(str(self.power).encode()).hexdigest(),
        )

    def observe(self) -> Observation:
        return Observation(text=f"power {self.power}")

    def over(self) -> bool | None:
        return None

    def close(self) -> None:
        pass


REFERENCE = CODE


def _value(
    mid: str, key: str, value: int, requires: list[str], op: str = ">="
) -> dict[str, object]:
    return {
        "id": mid,
        "requires": requires,
        "check": {"kind": "state", "key": key, "op": op, "value": value},
    }


LOCK = parse_contract(
    {
        "game": "lock",
        "milestones": [
            _value("moved", "moves", 1, []),
            _value("digit-4", "best", 4, ["moved"]),
            _value("digit-6", "best", 6, ["digit-4"]),
            _value("open", "best", 8, ["digit-6"]),
        ],
    }
)
MASH = parse_contract(
    {
        "game": "mash",
        "milestones": [
            _value("power-1", "power", 1, []),
            _value("power-3", "power", 3, ["power-1"]),
            _value("power-6", "power", 6, ["power-3"]),
        ],
    }
)


def _lock() -> CalibrationReport:
    return calibrate(SerialReplayer(LockGame), LOCK, REFERENCE)


def test_combination_lock_separates_and_names_moved_trivial() -> None:
    report = _lock()
    rows = {row.id: row for row in report.milestones}
    assert report.separates, report.message
    assert report.passed, report.message
    assert rows["moved"].verdict == "trivial"
    assert "constant:a" in rows["moved"].earned_by
    assert [rows[m].verdict for m in ("digit-6", "open")] == ["separates"] * 2
    assert report.reference_legible == 4
    assert report.best_baseline_legible < 4
    assert "moved (" in report.message


def test_mash_does_not_separate_and_the_message_names_the_baselines() -> None:
    report = calibrate(SerialReplayer(MashGame), MASH, ("mash",) * 6)
    assert not report.separates
    assert not report.passed
    assert report.message.startswith("does not separate")
    assert "constant:mash" in report.message
    assert all("constant:mash" in row.earned_by for row in report.milestones)
    assert report.best_baselines[0] == "constant:mash"


def test_reports_are_identical_across_two_runs() -> None:
    first = json.dumps(_lock().to_json(), sort_keys=True)
    assert json.dumps(_lock().to_json(), sort_keys=True) == first
    other = calibrate(SerialReplayer(LockGame), LOCK, REFERENCE, baseline_seed=99)
    assert other.baseline_seed == 99
    assert other.model_dump() != _lock().model_dump()


def _lock_with_hash() -> Contract:
    marks = MarkSet.model_validate(
        {
            "game": "lock",
            "marks": [
                {"id": "moved", "turn": 1, "kind": "state", "key": "moves"},
                {"id": "first-digit", "turn": 1, "kind": "save-hash"},
                {"id": "digit-4", "turn": 4, "kind": "state", "key": "best"},
                {"id": "open", "turn": 8, "kind": "state", "key": "best"},
            ],
        }
    )
    return derive_contract(LockGame, REFERENCE, marks)


def test_a_hash_milestone_a_constant_reproduces_is_refused_even_when_declared() -> None:
    contract = _lock_with_hash()
    report = calibrate(SerialReplayer(LockGame), contract, REFERENCE, opaque=["first-digit"])
    assert report.separates  # the legible ladder still separates ...
    assert not report.passed  # ... but the gate refuses the opaque milestone
    assert any("'first-digit' is reproduced by constant:c" in p for p in report.problems)
    (sweep,) = report.sweeps
    assert (sweep.milestone, sweep.reference_turn, sweep.probes) == ("first-digit", 1, 3)
    assert sweep.reached == 0
    assert sweep.probe_turns == 3


def test_opaque_declarations_are_exact_sets() -> None:
    contract = _lock_with_hash()
    undeclared = calibrate(SerialReplayer(LockGame), contract, REFERENCE)
    assert any("'first-digit' is not declared" in p for p in undeclared.problems)
    stale = calibrate(SerialReplayer(LockGame), LOCK, REFERENCE, opaque=["gone"])
    assert stale.separates
    assert not stale.passed
    assert stale.problems == (
        "declared opaque milestone 'gone' is stale (no opaque milestone has that id)",
    )


def test_sweep_cost_stays_within_its_turn_budget() -> None:
    contract = _lock_with_hash()
    report = calibrate(
        SerialReplayer(LockGame), contract, REFERENCE, opaque=["first-digit"], sweep_turns=2
    )
    assert report.sweeps[0].probe_turns <= 2


def test_attrition_is_classified_and_cannot_carry_the_gate() -> None:
    contract = parse_contract(
        {
            "game": "lock",
            "milestones": [
                _value("moved", "moves", 1, []),
                _value("lost-3", "lives", 0, ["moved"], op="<="),
            ],
        }
    )
    # The reference botches a half-entered code three times: lives only ever fall.
    reference = ("c", "a", "b") * 3
    report = calibrate(SerialReplayer(LockGame), contract, reference)
    rows = {row.id: row for row in report.milestones}
    assert rows["lost-3"].attrition
    assert not rows["moved"].attrition


def test_attrition_detection_on_a_trace() -> None:
    contract = parse_contract(
        {
            "game": "t",
            "milestones": [
                _value("died", "lives", 2, [], op="<="),
                _value("scored", "score", 1, []),
                _value("low-score", "score", 0, [], op="=="),
            ],
        }
    )
    trace = [Evidence(engine={"lives": 3 - min(i, 2), "score": i}) for i in range(5)]
    assert attrition_milestones(contract, trace) == {"died"}


def test_only_attrition_separating_fails_the_gate() -> None:
    contract = parse_contract(
        {
            "game": "lock",
            "milestones": [
                _value("moved", "moves", 1, []),
                _value("lives-2", "lives", 2, ["moved"], op="<="),
                _value("lives-1", "lives", 1, ["lives-2"], op="<="),
            ],
        }
    )
    # Only losing lives could set the reference apart here; that must never pass the gate.
    report = calibrate(SerialReplayer(LockGame), contract, ("c", "a", "b") * 2, walks=1)
    rows = {row.id: row for row in report.milestones}
    assert rows["lives-2"].attrition
    assert rows["lives-1"].attrition
    assert rows["lives-1"].verdict == "separates"
    assert report.separates  # the verdict rule alone would publish it ...
    assert not report.passed  # ... the gate does not
    assert report.problems == (
        "only attrition milestones separate (lives-2, lives-1): losing is not progress",
    )


def test_collapse_is_flagged_when_one_gate_makes_the_score_all_or_nothing() -> None:
    star = parse_contract(
        {
            "game": "t",
            "milestones": [
                _value("gate", "x", 1, []),
                _value("a", "y", 0, ["gate"]),
                _value("b", "z", 0, ["gate"]),
            ],
        }
    )
    found = find_collapse(star, {"gate": 7, "a": 7, "b": 7})
    assert found is not None
    assert found.collapsed
    assert found.gate == "gate"
    ladder = find_collapse(star, {"gate": 7, "a": 7, "b": 9})
    assert ladder is not None
    assert not ladder.collapsed
    split = parse_contract(
        {"game": "t", "milestones": [_value("a", "x", 1, []), _value("b", "y", 1, [])]}
    )
    assert find_collapse(split, {"a": 1, "b": 1}) is None


def test_a_collapsed_contract_fails_the_gate() -> None:
    contract = parse_contract(
        {
            "game": "lock",
            "milestones": [
                _value("open", "best", 8, []),
                _value("opened-moves", "moves", 1, ["open"]),
                _value("opened-best", "best", 1, ["open"]),
            ],
        }
    )
    report = calibrate(SerialReplayer(LockGame), contract, REFERENCE)
    assert report.separates
    assert not report.passed
    assert report.collapse is not None
    assert report.collapse.collapsed
    assert any("all-or-nothing" in p for p in report.problems)


def _gate(
    report: CalibrationReport,
    contract: Contract,
    reference: tuple[str, ...],
    *,
    separates: bool,
    note: str = "",
    seed: int = 0,
) -> list[str]:
    return publication_problems(
        report,
        build_digest=report.build_digest,
        contract=contract,
        reference=reference,
        seed=seed,
        separates=separates,
        note=note,
    )


def test_publication_gate() -> None:
    report = _lock()
    assert _gate(report, LOCK, REFERENCE, separates=True) == []
    stale = _gate(report, LOCK, REFERENCE, separates=False, note="never separates")
    assert any("stale excuse" in p for p in stale)
    mashed = ("mash",) * 6
    mash = calibrate(SerialReplayer(MashGame), MASH, mashed)
    blank = _gate(mash, MASH, mashed, separates=False, note="  ")
    assert any("non-blank" in p for p in blank)
    assert _gate(mash, MASH, mashed, separates=False, note="mash earns it") == []
    claims = _gate(mash, MASH, mashed, separates=True)
    assert any("claims to separate" in p for p in claims)
    moved = _gate(report, LOCK, REFERENCE, separates=True, seed=1)
    assert moved == ["the calibration used seed 0, the target declares 1"]
    changed = _gate(report, LOCK, ("a",), separates=True)
    assert changed == ["the calibration is stale: the reference changed since"]
    other = _gate(report, MASH, REFERENCE, separates=True)
    assert other == ["the calibration is stale: the contract changed since"]
    build = publication_problems(
        report,
        build_digest="0" * 64,
        contract=LOCK,
        reference=REFERENCE,
        seed=0,
        separates=None,
        note="",
        opaque=["x"],
    )
    assert len(build) == 3


@settings(max_examples=30, deadline=None)
@given(
    vocabulary=st.lists(
        st.text("abcdefgh", min_size=1, max_size=3), min_size=1, max_size=5, unique=True
    ),
    length=st.integers(0, 40),
    seed=st.integers(0, 2**32),
    walks=st.integers(1, 4),
)
def test_baseline_suite_is_deterministic_and_complete(
    vocabulary: list[str], length: int, seed: int, walks: int
) -> None:
    suite = baseline_suite(vocabulary, length, seed=seed, walks=walks)
    assert suite == baseline_suite(vocabulary, length, seed=seed, walks=walks)
    assert len(suite) == len(vocabulary) + 2 + walks
    assert all(len(inputs) == length for _, inputs in suite)
    assert len({name for name, _ in suite}) == len(suite)


def test_walk_count_is_bounded() -> None:
    with pytest.raises(TargetError):
        baseline_suite(("a",), 3, walks=0)
