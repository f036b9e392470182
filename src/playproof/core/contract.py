"""The contract language: a target's milestones as validated data.

A contract is JSON. Each milestone has an id, the ids it ``requires`` and one
check over the evidence. Six check kinds exist: ``state``, ``save`` and
``frame`` compare one integer of the matching evidence map with ``op`` and
``value``; ``event`` asks for an exact event string in the event log;
``save-hash`` and ``frame-hash`` ask for an exact SHA-256. The first four are
*legible* (they say what was achieved); the hash kinds are *opaque*.

Rules: ids are unique, prerequisites exist and are listed before their
dependents (so ``requires`` forms a DAG), and there is at least one milestone.
:func:`parse_contract` reports every violation at once.

>>> contract = parse_contract({
...     "schema": "playproof/contract/v1", "game": "toy",
...     "milestones": [
...         {"id": "a", "requires": [],
...          "check": {"kind": "state", "key": "x", "op": ">=", "value": 1}},
...         {"id": "b", "requires": ["a"], "check": {"kind": "event", "event": "door"}},
...     ]})
>>> [m.id for m in contract.milestones], contract.milestones[1].check.legible
(['a', 'b'], True)
>>> parse_contract({"schema": "playproof/contract/v1", "game": "toy", "milestones": []})
Traceback (most recent call last):
...
playproof.errors.ContractError: invalid contract (1 violation): the contract has no milestones
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from playproof.core.canonical import digest
from playproof.errors import ContractError

__all__ = [
    "CONTRACT_SCHEMA",
    "Check",
    "Contract",
    "EventCheck",
    "HashCheck",
    "Milestone",
    "Op",
    "ValueCheck",
    "contract_hash",
    "parse_contract",
]

CONTRACT_SCHEMA = "playproof/contract/v1"

Op = Literal[">=", ">", "==", "<=", "<", "!="]
OPERATORS: Mapping[str, Callable[[int, int], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "==": operator.eq,
    "<=": operator.le,
    "<": operator.lt,
    "!=": operator.ne,
}

MilestoneId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")]
Key = Annotated[str, Field(min_length=1, max_length=128)]


class _CheckBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    @property
    def legible(self) -> bool:
        """True for checks that say what was achieved; False for opaque hash checks."""
        return True


class ValueCheck(_CheckBase):
    """Compare one integer of the ``engine`` (state), ``save`` or ``frame`` evidence map."""

    kind: Literal["state", "save", "frame"]
    key: Key
    op: Op
    value: int


class EventCheck(_CheckBase):
    """Holds once ``event`` has appeared in the event log."""

    kind: Literal["event"]
    event: Annotated[str, Field(min_length=1, max_length=256)]


class HashCheck(_CheckBase):
    """Holds when the save or frame hash equals ``hash`` exactly (opaque)."""

    kind: Literal["save-hash", "frame-hash"]
    hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]

    @property
    def legible(self) -> bool:
        """Hash checks are opaque."""
        return False


Check = Annotated[ValueCheck | EventCheck | HashCheck, Field(discriminator="kind")]


class Milestone(BaseModel):
    """One named achievement: an id, its prerequisites and its check."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: MilestoneId
    requires: tuple[MilestoneId, ...] = ()
    check: Check
    description: Annotated[str, Field(max_length=500)] | None = None


def _dag_violations(entries: Iterable[tuple[str, list[str]]]) -> list[str]:
    """Every DAG-rule violation among ``(id, requires)`` pairs, in a stable order."""
    items = list(entries)
    violations: list[str] = []
    if not items:
        return ["the contract has no milestones"]
    position: dict[str, int] = {}
    for index, (mid, _) in enumerate(items):
        if mid in position:
            violations.append(f"milestone id {mid!r} is used more than once")
        else:
            position[mid] = index
    for index, (mid, requires) in enumerate(items):
        if len(set(requires)) != len(requires):
            violations.append(f"milestone {mid!r} lists a prerequisite twice")
        for req in requires:
            if req == mid:
                violations.append(f"milestone {mid!r} requires itself")
            elif req not in position:
                violations.append(f"milestone {mid!r} requires unknown milestone {req!r}")
            elif position[req] > index:
                violations.append(
                    f"milestone {mid!r} requires {req!r}, which is listed after it "
                    "(prerequisites must come first)"
                )
    graph: dict[str, list[str]] = {}
    for mid, reqs in items:
        graph.setdefault(mid, []).extend(r for r in reqs if r in position and r != mid)
    violations.extend(_cycles(graph))
    return violations


def _cycles(graph: Mapping[str, list[str]]) -> list[str]:
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(graph, white)
    found: list[str] = []
    for root in graph:
        if color[root] != white:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        color[root] = grey
        while stack:
            node, child = stack[-1]
            if child < len(graph[node]):
                stack[-1] = (node, child + 1)
                nxt = graph[node][child]
                if color[nxt] == grey:
                    cycle = [*path[path.index(nxt) :], nxt]
                    found.append("prerequisites form a cycle: " + " -> ".join(cycle))
                elif color[nxt] == white:
                    color[nxt] = grey
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = black
                stack.pop()
                path.pop()
    return found


class Contract(BaseModel):
    """A target's milestones, validated on construction (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["playproof/contract/v1"] = Field("playproof/contract/v1", alias="schema")
    game: Annotated[str, Field(min_length=1, max_length=128)]
    milestones: tuple[Milestone, ...]

    @model_validator(mode="after")
    def _dag(self) -> Contract:
        violations = _dag_violations((m.id, list(m.requires)) for m in self.milestones)
        if violations:
            raise ContractError(violations)
        return self

    @property
    def ids(self) -> tuple[str, ...]:
        """Milestone ids in contract order."""
        return tuple(m.id for m in self.milestones)

    def to_json(self) -> dict[str, Any]:
        """The normalized JSON form (what the contract hash covers)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @property
    def hash(self) -> str:
        """SHA-256 of the RFC 8785 canonical form of :meth:`to_json` (computed once)."""
        # A frozen contract hashes once (every episode asks). The memo sits in the
        # instance dict beside the fields (pydantic ignores non-field keys there
        # for equality and dumps) and names the field objects it was computed
        # over, so a model_copy(update=...) that swaps a field recomputes.
        memo = self.__dict__.get(_HASH_MEMO)
        if (
            memo is not None
            and memo[0] is self.schema_
            and memo[1] is self.game
            and memo[2] is self.milestones
        ):
            cached: str = memo[3]
            return cached
        value = contract_hash(self)
        self.__dict__[_HASH_MEMO] = (self.schema_, self.game, self.milestones, value)
        return value


_HASH_MEMO = "_playproof_hash_memo"


def contract_hash(contract: Contract) -> str:
    """SHA-256 hex over the canonical JSON of the normalized contract."""
    return digest(contract.to_json())


def _raw_entries(data: Any) -> list[tuple[str, list[str]]] | None:
    """Best-effort ``(id, requires)`` pairs from raw JSON, so DAG rules are checked too."""
    if not isinstance(data, Mapping) or not isinstance(data.get("milestones"), list):
        return None
    entries: list[tuple[str, list[str]]] = []
    for item in data["milestones"]:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            continue
        requires = item.get("requires", [])
        reqs = [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []
        entries.append((item["id"], reqs))
    return entries


def _describe(error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "contract"
    return f"{where}: {error['msg']}"


def parse_contract(data: Any) -> Contract:
    """Validate raw JSON data into a :class:`Contract`, reporting every violation at once.

    Strict as the published schema: a ``"1"`` or ``1.0`` where an integer
    belongs is a violation, not coerced.
    """
    try:
        # Written back as JSON text (1.0 stays 1.0) and read in strict JSON mode.
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ContractError([f"the contract is not JSON data: {type(exc).__name__}"]) from exc
    try:
        return Contract.model_validate_json(text, strict=True)
    except ValidationError as exc:
        violations = [_describe(err) for err in exc.errors()]
    entries = _raw_entries(data)
    if entries is not None:
        violations.extend(_dag_violations(entries))
    raise ContractError(violations)
