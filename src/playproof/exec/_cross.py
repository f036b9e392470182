"""Cross-emulator replay: a record's inputs played on a second emulator, channel by channel.

Two packaged targets run the same ROM on different emulators; a pairing says
how their episodes line up. ``pyboy/pp-collect`` starts on the title screen
and ``retroarch/pp-collect`` starts in play (from a boot state made by
pressing START with the seed ``pyboy/pp-collect`` writes for seed 0), so a
PyBoy log's leading ``start`` is the RetroArch boot state, and PyBoy's
snapshot after it is RetroArch's snapshot 0.

The record's own contract judges both replays; agreement is reported per
evidence channel the two emulators share: how many snapshots agree, and the
first turn (of the record) where they do not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from playproof.core.contract import Contract
from playproof.core.evidence import Evidence
from playproof.core.game import BatchReplaying, Game
from playproof.core.record import RunRecord
from playproof.errors import TargetError
from playproof.sign import VerifyingKey, verify_envelope
from playproof.targets._registry import Target
from playproof.verify import parse_record

__all__ = [
    "CROSS_PAIRS",
    "ChannelAgreement",
    "CrossReport",
    "cross_lines",
    "cross_of_document",
    "cross_replay",
    "cross_verify",
]


def _pyboy() -> Target:
    from playproof.targets.pyboy import pp_collect

    return pp_collect()


def _retroarch() -> Target:
    from playproof.targets.retroarch import pp_collect

    return pp_collect()


@dataclass(frozen=True)
class Pairing:
    """How a target's episode maps onto another emulator's target of the same ROM."""

    other: Callable[[], Target]
    lead_in: tuple[str, ...]
    """Inputs the record opens with that the other emulator's boot state already holds."""
    other_lead_in: tuple[str, ...]
    """Inputs the other emulator needs first (the record's boot state already holds them)."""
    seed: int
    """The one seed the pairing reproduces."""


CROSS_PAIRS: dict[tuple[str, str], Pairing] = {
    ("pyboy/pp-collect", "retroarch"): Pairing(_retroarch, ("start",), (), 0),
    ("retroarch/pp-collect", "pyboy"): Pairing(_pyboy, (), ("start",), 0),
}
"""(record's target, emulator) -> pairing."""
_LOADERS: dict[str, Callable[[], Target]] = {
    "pyboy/pp-collect": _pyboy,
    "retroarch/pp-collect": _retroarch,
}


@dataclass(frozen=True)
class ChannelAgreement:
    """One channel: snapshots compared, how many agree, the first record turn that differs."""

    channel: str
    compared: int
    agreed: int
    first_difference: int | None

    @property
    def agrees(self) -> bool:
        """True when every compared snapshot agrees."""
        return self.agreed == self.compared


@dataclass(frozen=True)
class CrossReport:
    """Milestones each emulator verified and the per-channel agreement."""

    target: str
    other_target: str
    verified: tuple[str, ...]
    other_verified: tuple[str, ...]
    channels: tuple[ChannelAgreement, ...]

    @property
    def milestones_agree(self) -> bool:
        """True when both emulators verified the same milestones."""
        return self.verified == self.other_verified

    @property
    def agrees(self) -> bool:
        """Same milestones on both emulators.

        Channels that disagree are reported, not fatal: emulators may slice
        frames differently, and milestones read only channels measured to agree.
        """
        return self.milestones_agree

    def as_json(self) -> dict[str, Any]:
        """The report as JSON."""
        return {
            "target": self.target,
            "other_target": self.other_target,
            "agrees": self.agrees,
            "verified": list(self.verified),
            "other_verified": list(self.other_verified),
            "channels": {
                c.channel: {
                    "compared": c.compared,
                    "agreed": c.agreed,
                    "first_difference": c.first_difference,
                }
                for c in self.channels
            },
        }


def _trace(
    game: Game, seed: int, inputs: Sequence[str], contract: Contract
) -> tuple[tuple[str, ...], tuple[Evidence, ...]]:
    if not isinstance(game, BatchReplaying):
        raise TargetError(f"{game.descriptor.id} cannot replay a whole log")
    result = game.replay(seed, inputs, contract, trace=True)
    return tuple(m.id for m in result.verified), result.trace or ()


def cross_replay(
    first: Game,
    second: Game,
    seed: int,
    inputs: Sequence[str],
    contract: Contract,
    pairing: Pairing,
    *,
    names: tuple[str, str] = ("first", "second"),
) -> CrossReport:
    """Replay ``inputs`` on ``first`` and, lined up by ``pairing``, on ``second``."""
    lead = len(pairing.lead_in)
    if tuple(inputs[:lead]) != pairing.lead_in:
        raise TargetError(
            f"the other emulator's episode starts after {' '.join(pairing.lead_in)}; "
            "this log does not open with it"
        )
    verified, trace = _trace(first, seed, inputs, contract)
    other_inputs = (*pairing.other_lead_in, *inputs[lead:])
    other_verified, other_trace = _trace(second, seed, other_inputs, contract)
    mine = trace[lead:] if lead else trace
    theirs = other_trace[len(pairing.other_lead_in) :]
    keys = sorted(set(mine[0].engine) & set(theirs[0].engine)) if mine and theirs else []
    channels = []
    for key in keys:
        agreed, first_difference = 0, None
        # A trace holds the snapshot after reset, then one per input.
        for turn, (a, b) in enumerate(zip(mine, theirs, strict=False), start=lead):
            if a.engine[key] == b.engine[key]:
                agreed += 1
            elif first_difference is None:
                first_difference = turn
        channels.append(
            ChannelAgreement(key, min(len(mine), len(theirs)), agreed, first_difference)
        )
    return CrossReport(names[0], names[1], verified, other_verified, tuple(channels))


def cross_verify(
    record: RunRecord, emulator: str, *, contract: Contract | None = None
) -> CrossReport:
    """Replay a record on its own target and on ``emulator``; agreement per channel."""
    name = record.target.name or ""
    pairing = CROSS_PAIRS.get((name, emulator))
    if pairing is None:
        known = ", ".join(f"{t} --cross {e}" for t, e in CROSS_PAIRS)
        raise TargetError(
            f"no cross-emulator pairing for {name or 'this record'} on {emulator} (known: {known})"
        )
    if record.seed != pairing.seed:
        raise TargetError(
            f"the {emulator} pairing reproduces seed {pairing.seed} only; "
            f"the record played seed {record.seed}"
        )
    own = _LOADERS[name]()
    other = pairing.other()
    judged = contract or own.contract
    first, second = own.open(worker=False), other.open(worker=False)
    try:
        return cross_replay(
            first, second, record.seed, record.inputs, judged, pairing, names=(own.name, other.name)
        )
    finally:
        first.close()
        second.close()


def cross_of_document(
    data: Any,
    emulator: str,
    keys: Sequence[VerifyingKey] | None,
    *,
    contract: Contract | None = None,
) -> CrossReport:
    """:func:`cross_verify` of a record document: bare (``keys`` None) or a signed envelope."""
    if keys is None:
        record, why = parse_record(data)
    else:
        verdict = verify_envelope(data, list(keys))
        record, why = verdict.record, "the signed record did not verify"
    if record is None:
        raise TargetError(f"cannot cross-verify: {why}")
    return cross_verify(record, emulator, contract=contract)


def cross_lines(report: CrossReport) -> list[str]:
    """The report as text: milestones per emulator, then one line per channel."""
    lines = [
        f"cross {report.target} -> {report.other_target}: "
        f"{'agree' if report.agrees else 'DISAGREE'}",
        f"  milestones {report.target}: {', '.join(report.verified) or 'none'}",
        f"  milestones {report.other_target}: {', '.join(report.other_verified) or 'none'}",
    ]
    for channel in report.channels:
        where = (
            ""
            if channel.first_difference is None
            else f", first differs at turn {channel.first_difference}"
        )
        lines.append(f"  {channel.channel}: {channel.agreed}/{channel.compared} agree{where}")
    return lines
