"""The milestone tracker: which milestones a sequence of evidence snapshots earns.

Semantics (ARCHITECTURE 3.4): passing is sticky; a milestone passes at the
first snapshot where all its prerequisites have passed and its check holds;
dependents may pass at the same snapshot as their prerequisites (milestones
are evaluated in contract order, prerequisites first); the initial snapshot
(turn 0, right after reset) counts; a missing key means the check does not
hold; an ``event`` check holds once the event is in the log so far.

>>> from playproof.core.contract import parse_contract
>>> from playproof.core.evidence import Evidence
>>> c = parse_contract({"game": "toy", "milestones": [
...     {"id": "one", "check": {"kind": "state", "key": "x", "op": ">=", "value": 1}},
...     {"id": "two", "requires": ["one"],
...      "check": {"kind": "state", "key": "x", "op": ">=", "value": 2}}]})
>>> t = MilestoneTracker(c)
>>> t.observe(Evidence(engine={"x": 2}), turn=0)
('one', 'two')
>>> t.observe(Evidence(engine={"x": 0}), turn=1), t.passed
((), {'one': 0, 'two': 0})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from playproof.core.contract import OPERATORS, Contract, EventCheck, HashCheck, ValueCheck
from playproof.core.evidence import Evidence

__all__ = ["MilestoneTracker", "PassedMilestone"]

_Predicate = Callable[[Evidence, set[str]], bool]


@dataclass(frozen=True, slots=True)
class PassedMilestone:
    """A milestone and the turn (snapshot index) at which it first passed."""

    id: str
    turn: int


def _compile(check: ValueCheck | EventCheck | HashCheck) -> _Predicate:
    if isinstance(check, ValueCheck):
        key, value, compare = check.key, check.value, OPERATORS[check.op]
        field = {"state": "engine", "save": "save", "frame": "frame"}[check.kind]

        def value_holds(evidence: Evidence, _events: set[str]) -> bool:
            mapping: Mapping[str, int] = getattr(evidence, field)
            current = mapping.get(key)
            return current is not None and compare(current, value)

        return value_holds
    if isinstance(check, EventCheck):
        event = check.event
        return lambda _evidence, events: event in events
    wanted = check.hash
    if check.kind == "save-hash":
        return lambda evidence, _events: evidence.save_hash == wanted
    return lambda evidence, _events: evidence.frame_hash == wanted


class MilestoneTracker:
    """Feeds evidence snapshots through a contract and remembers what passed, and when."""

    __slots__ = ("_events", "_pending", "_ready", "contract", "passed")

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.passed: dict[str, int] = {}
        self._events: set[str] = set()
        self._pending: list[tuple[str, tuple[str, ...], _Predicate]] = [
            (m.id, m.requires, _compile(m.check)) for m in contract.milestones
        ]
        self._ready = self._eligible()

    def _eligible(self) -> list[_Predicate]:
        passed = self.passed
        return [holds for _, requires, holds in self._pending if all(r in passed for r in requires)]

    def observe(self, evidence: Evidence, turn: int) -> tuple[str, ...]:
        """Take one snapshot; return the ids that passed at it, in contract order."""
        if evidence.events:
            self._events.update(evidence.events)
        # Fast path: only milestones whose prerequisites have all passed can pass
        # now, and the first to pass at a snapshot must be one of them. When one
        # does, the full ordered pass below gives the exact semantics.
        events = self._events
        for holds in self._ready:
            if holds(evidence, events):
                break
        else:
            return ()
        passed = self.passed
        newly: list[str] = []
        still: list[tuple[str, tuple[str, ...], _Predicate]] = []
        for entry in self._pending:
            mid, requires, holds = entry
            if all(r in passed for r in requires) and holds(evidence, self._events):
                passed[mid] = turn
                newly.append(mid)
            else:
                still.append(entry)
        self._pending = still
        self._ready = self._eligible()
        return tuple(newly)

    def restore(self, verified: Iterable[PassedMilestone], events: Iterable[str]) -> None:
        """Carry on from a replayed prefix: what passed (and when) and the events seen."""
        self.passed = {p.id: p.turn for p in verified}
        self._events = set(events)
        self._pending = [e for e in self._pending if e[0] not in self.passed]
        self._ready = self._eligible()

    @property
    def verified(self) -> tuple[PassedMilestone, ...]:
        """Passed milestones in the order they passed (ties in contract order)."""
        return tuple(PassedMilestone(mid, turn) for mid, turn in self.passed.items())

    @property
    def complete(self) -> bool:
        """True when every milestone has passed."""
        return not self._pending
