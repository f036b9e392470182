"""Contract authoring: derive a contract from a reference trajectory plus marks.

A mark says *which* evidence at *which* turn of the reference is a milestone;
the value or hash itself is read off the replay, never typed by hand, so a
derived contract cannot claim a state the reference never showed. The derived
contract is checked by replaying the reference: every milestone must pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.core.contract import (
    Check,
    Contract,
    EventCheck,
    HashCheck,
    Milestone,
    MilestoneId,
    Op,
    ValueCheck,
)
from playproof.core.evidence import Evidence
from playproof.core.game import Game
from playproof.core.replay import replay, replay_in_session
from playproof.errors import ContractError
from playproof.verify._replayer import trace_contract

__all__ = ["MARKS_SCHEMA", "Mark", "MarkSet", "derive_contract"]

MARKS_SCHEMA = "playproof/marks/v1"
MAX_MARKS = 256


class Mark(BaseModel):
    """One milestone to derive: a check kind, the evidence key (if any) and a reference turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: MilestoneId
    turn: Annotated[int, Field(ge=0)]
    """The reference snapshot the value or hash is read from (0 = right after reset)."""
    kind: Literal["state", "save", "frame", "event", "save-hash", "frame-hash"]
    key: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    """The evidence map key (value kinds) or the event to require (event kind; optional)."""
    op: Op = ">="
    requires: tuple[MilestoneId, ...] | None = None
    """Prerequisites; None means the previous mark (a ladder)."""
    description: Annotated[str, Field(max_length=500)] | None = None


class MarkSet(BaseModel):
    """A marks document: the game id and the marks in contract order."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["playproof/marks/v1"] = Field("playproof/marks/v1", alias="schema")
    game: Annotated[str, Field(min_length=1, max_length=128)]
    marks: Annotated[tuple[Mark, ...], Field(min_length=1, max_length=MAX_MARKS)]


def _events_until(trace: Sequence[Evidence], turn: int) -> list[str]:
    return [event for evidence in trace[: turn + 1] for event in evidence.events]


def _check(mark: Mark, trace: Sequence[Evidence]) -> Check | str:
    """The check read off the trace, or why it cannot be."""
    if mark.turn >= len(trace):
        return f"mark {mark.id!r} is at turn {mark.turn}, the reference has {len(trace) - 1}"
    evidence = trace[mark.turn]
    if mark.kind in ("state", "save", "frame"):
        field = {"state": evidence.engine, "save": evidence.save, "frame": evidence.frame}
        if mark.key is None:
            return f"mark {mark.id!r} needs a key for a {mark.kind} check"
        value = field[mark.kind].get(mark.key)
        if value is None:
            return f"mark {mark.id!r}: no {mark.kind} key {mark.key!r} at turn {mark.turn}"
        return ValueCheck(kind=mark.kind, key=mark.key, op=mark.op, value=value)
    if mark.kind == "event":
        if mark.key is not None:
            if mark.key not in _events_until(trace, mark.turn):
                return f"mark {mark.id!r}: event {mark.key!r} has not happened by turn {mark.turn}"
            return EventCheck(kind="event", event=mark.key)
        here = sorted(set(evidence.events))
        if len(here) != 1:
            found = ", ".join(here) or "none"
            return f"mark {mark.id!r}: turn {mark.turn} has {len(here)} events ({found}); name one"
        return EventCheck(kind="event", event=here[0])
    if mark.kind == "save-hash":
        digest, kind = evidence.save_hash, "save-hash"
    else:
        digest, kind = evidence.frame_hash, "frame-hash"
    if digest is None:
        return f"mark {mark.id!r}: the game reports no {mark.kind} at turn {mark.turn}"
    return HashCheck.model_validate({"kind": kind, "hash": digest})


def derive_contract(
    factory: Callable[[], Game], reference: Sequence[str], marks: MarkSet, *, seed: int = 0
) -> Contract:
    """Derive the contract ``marks`` describe from the reference replay; ContractError if unfit."""
    game = factory()
    try:
        trace = replay_in_session(
            game, seed, reference, trace_contract(game.descriptor.id), trace=True
        ).trace
        assert trace is not None  # asked for above
        problems: list[str] = []
        milestones: list[Milestone] = []
        previous: tuple[str, ...] = ()
        for mark in marks.marks:
            check = _check(mark, trace)
            if isinstance(check, str):
                problems.append(check)
                continue
            requires = previous if mark.requires is None else mark.requires
            milestones.append(
                Milestone(id=mark.id, requires=requires, check=check, description=mark.description)
            )
            previous = (mark.id,)
        if problems:
            raise ContractError(problems)
        contract = Contract(game=marks.game, milestones=tuple(milestones))
        earned = {p.id for p in replay(game, seed, reference, contract).verified}
    finally:
        game.close()
    missed = [m.id for m in contract.milestones if m.id not in earned]
    if missed:
        raise ContractError(
            [f"the reference does not earn derived milestone {mid!r}" for mid in missed]
        )
    return contract
