"""Calibration: replay the reference and every trivial baseline, and grade the contract.

A contract that a constant button press satisfies measures nothing. The
reference and the baselines (:mod:`playproof.core.baselines`) run through the
same replay path a verifier uses; the report says per milestone who earned it
and whether the contract separates the reference from trivial play.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise

from playproof.core.baselines import baseline_inputs, baseline_names
from playproof.core.canonical import digest
from playproof.core.contract import Contract, HashCheck, Milestone, ValueCheck
from playproof.core.evidence import Evidence
from playproof.core.game import ReplayResult
from playproof.errors import TargetError
from playproof.verify._models import (
    BaselineRow,
    CalibrationReport,
    CollapseFinding,
    MilestoneRow,
    MilestoneVerdict,
    SweepRow,
)
from playproof.verify._replayer import Replayer, ReplayJob

__all__ = [
    "DEFAULT_SWEEP_TURNS",
    "DEFAULT_WALKS",
    "attrition_milestones",
    "baseline_suite",
    "calibrate",
    "find_collapse",
    "opaque_problems",
]

DEFAULT_SWEEP_TURNS = 200_000
"""Inputs the substitution sweep may replay per opaque milestone (its cost bound)."""
DEFAULT_WALKS = 8
"""Seeded random walks per calibration: one lucky walk is weak evidence, eight are cheap."""
MAX_WALKS = 64


def baseline_suite(
    vocabulary: Sequence[str], length: int, *, seed: int = 0, walks: int = DEFAULT_WALKS
) -> list[tuple[str, tuple[str, ...]]]:
    """Every baseline as ``(name, inputs)``; ``walks`` seeded random walks from ``seed`` on."""
    if not 1 <= walks <= MAX_WALKS:
        raise TargetError(f"walks must be 1..{MAX_WALKS}, not {walks}")
    suite: list[tuple[str, tuple[str, ...]]] = []
    for name in baseline_names(vocabulary):
        if name != "random-walk":
            suite.append((name, baseline_inputs(name, vocabulary, length)))
    for offset in range(walks):
        walk_seed = seed + offset
        label = "random-walk" if walks == 1 else f"random-walk@{walk_seed}"
        suite.append((label, baseline_inputs("random-walk", vocabulary, length, seed=walk_seed)))
    return suite


def _falling(series: Sequence[int]) -> bool:
    """True when a channel never rises and falls at least once."""
    steps = list(pairwise(series))
    return bool(steps) and all(b <= a for a, b in steps) and any(b < a for a, b in steps)


def _map_of(evidence: Evidence, check: ValueCheck) -> dict[str, int]:
    field = {"state": evidence.engine, "save": evidence.save, "frame": evidence.frame}[check.kind]
    return dict(field)


def attrition_milestones(contract: Contract, trace: Sequence[Evidence]) -> frozenset[str]:
    """Milestones whose check is met by a channel falling, on a channel that only ever falls."""
    found: set[str] = set()
    for milestone in contract.milestones:
        check = milestone.check
        if not isinstance(check, ValueCheck):
            continue
        series = [v for v in (_map_of(e, check).get(check.key) for e in trace) if v is not None]
        if not _falling(series):
            continue
        start = series[0]
        by_falling = (
            check.op in ("<", "<=")
            or (check.op == "==" and check.value < start)
            or (check.op == "!=" and check.value == start)
        )
        if by_falling:
            found.add(milestone.id)
    return frozenset(found)


def _ancestors(contract: Contract) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for milestone in contract.milestones:  # prerequisites come first, so one pass suffices
        mine: set[str] = set()
        for req in milestone.requires:
            mine.add(req)
            mine |= found[req]
        found[milestone.id] = mine
    return found


def find_collapse(contract: Contract, reference_turns: dict[str, int]) -> CollapseFinding | None:
    """The prerequisite that gates every other milestone, if any; collapsed when all pass with it.

    A ladder is gated by its first rung too; it collapses only when every
    milestone the reference earns passes at the very turn the gate does, so
    the contract scores all-or-nothing whatever its length.
    """
    if len(contract.milestones) < 2:
        return None
    ancestors = _ancestors(contract)
    for milestone in contract.milestones:
        gate = milestone.id
        if not all(gate in ancestors[m.id] for m in contract.milestones if m.id != gate):
            continue
        earned = dict(reference_turns)
        others = [mid for mid in earned if mid != gate]
        if gate in earned and others and all(earned[mid] == earned[gate] for mid in others):
            reason = (
                f"{gate!r} gates every milestone and all {len(others) + 1} earned milestones "
                f"pass with it at turn {earned[gate]}: the score is all-or-nothing"
            )
            return CollapseFinding(gate=gate, collapsed=True, reason=reason)
        return CollapseFinding(
            gate=gate, collapsed=False, reason=f"{gate!r} gates every milestone (a ladder)"
        )
    return None


def opaque_problems(
    contract: Contract, declared: Iterable[str], earned_by: dict[str, tuple[str, ...]]
) -> list[str]:
    """Declared opaque milestones must equal the contract's opaque set; no baseline may earn one."""
    declared_set = set(declared)
    opaque = [m.id for m in contract.milestones if not m.check.legible]
    problems = [
        f"opaque milestone {mid!r} is not declared" for mid in opaque if mid not in declared_set
    ]
    problems += [
        f"declared opaque milestone {mid!r} is stale (no opaque milestone has that id)"
        for mid in sorted(declared_set - set(opaque))
    ]
    problems += [
        f"opaque milestone {mid!r} is reproduced by {', '.join(earned_by[mid])}"
        for mid in opaque
        if earned_by.get(mid)
    ]
    return problems


def _sweep_jobs(
    milestone: Milestone,
    turn: int,
    reference: Sequence[str],
    vocabulary: Sequence[str],
    seed: int,
    budget: int,
) -> list[ReplayJob]:
    """Single-input substitutions along the reference prefix, spread evenly, within ``budget``."""
    if turn < 1:
        return []
    prefix = tuple(reference[:turn])
    per_position = list(vocabulary)
    most = max(1, budget // max(1, turn))
    positions = max(1, min(turn, most // max(1, len(per_position) - 1)))
    stride = turn / positions
    jobs: list[ReplayJob] = []
    for slot in range(positions):
        index = int(slot * stride)
        for word in per_position:
            if word == prefix[index] or len(jobs) >= most:
                continue
            jobs.append(ReplayJob(seed, (*prefix[:index], word, *prefix[index + 1 :])))
    return jobs


def _reference_digest(reference: Sequence[str]) -> str:
    return digest(list(reference))


def calibrate(
    replayer: Replayer,
    contract: Contract,
    reference: Sequence[str],
    *,
    seed: int = 0,
    baseline_seed: int = 0,
    walks: int = DEFAULT_WALKS,
    opaque: Iterable[str] = (),
    sweep_turns: int = DEFAULT_SWEEP_TURNS,
) -> CalibrationReport:
    """Calibrate ``contract``: reference and every baseline at reference length, plus sweeps.

    ``opaque`` is the exact set of milestone ids declared opaque (hash checks).
    """
    vocabulary = replayer.descriptor.vocabulary
    reference = tuple(reference)
    length = len(reference)
    suite = baseline_suite(vocabulary, length, seed=baseline_seed, walks=walks)
    jobs = [ReplayJob(seed, reference, trace=True)] + [ReplayJob(seed, inp) for _, inp in suite]
    results = replayer.replay_many(jobs, contract)
    ref_result, baseline_results = results[0], results[1:]
    legible = {m.id for m in contract.milestones if m.check.legible}
    ref_turns = {p.id: p.turn for p in ref_result.verified}
    attrition = attrition_milestones(contract, ref_result.trace or ())
    earned_by = {
        m.id: tuple(
            name
            for (name, _), res in zip(suite, baseline_results, strict=True)
            if any(p.id == m.id for p in res.verified)
        )
        for m in contract.milestones
    }
    rows = [_row(m, ref_turns, earned_by[m.id], m.id in attrition) for m in contract.milestones]
    baselines = [
        _baseline_row(name, res, legible)
        for (name, _), res in zip(suite, baseline_results, strict=True)
    ]
    ref_legible = sum(1 for mid in ref_turns if mid in legible)
    best = max((b.legible for b in baselines), default=0)
    best_names = tuple(b.name for b in baselines if b.legible == best)
    separating = [r.id for r in rows if r.legible and r.verdict == "separates"]
    separates = bool(separating) and ref_legible > best
    declared = tuple(sorted(set(opaque)))
    problems = opaque_problems(contract, declared, earned_by)
    if separating and all(mid in attrition for mid in separating):
        problems.append(
            "only attrition milestones separate ("
            + ", ".join(separating)
            + "): losing is not progress"
        )
    collapse = find_collapse(contract, ref_turns)
    if collapse is not None and collapse.collapsed:
        problems.append(collapse.reason)
    sweeps = _sweeps(replayer, contract, reference, ref_turns, seed, sweep_turns)
    passed = separates and not problems
    message = _message(rows, separating, ref_legible, best, best_names, separates, problems)
    return CalibrationReport(
        game=replayer.descriptor.id,
        build_digest=replayer.descriptor.build.digest,
        contract_hash=contract.hash,
        reference_digest=_reference_digest(reference),
        seed=seed,
        baseline_seed=baseline_seed,
        walks=walks,
        length=length,
        milestones=tuple(rows),
        baselines=tuple(baselines),
        reference_legible=ref_legible,
        best_baseline_legible=best,
        best_baselines=best_names,
        separates=separates,
        opaque_declared=declared,
        sweeps=tuple(sweeps),
        collapse=collapse,
        problems=tuple(problems),
        passed=passed,
        message=message,
    )


def _row(
    milestone: Milestone, ref_turns: dict[str, int], earned_by: tuple[str, ...], attrition: bool
) -> MilestoneRow:
    verdict: MilestoneVerdict
    if earned_by:
        verdict = "trivial"
    elif milestone.id in ref_turns:
        verdict = "separates"
    else:
        verdict = "unearned"
    return MilestoneRow(
        id=milestone.id,
        kind=milestone.check.kind,
        legible=milestone.check.legible,
        attrition=attrition,
        reference_turn=ref_turns.get(milestone.id),
        earned_by=earned_by,
        verdict=verdict,
    )


def _baseline_row(name: str, result: ReplayResult, legible: set[str]) -> BaselineRow:
    earned = tuple(p.id for p in result.verified)
    return BaselineRow(
        name=name,
        earned=earned,
        legible=sum(1 for mid in earned if mid in legible),
        over_at=result.over_at,
    )


def _sweeps(
    replayer: Replayer,
    contract: Contract,
    reference: Sequence[str],
    ref_turns: dict[str, int],
    seed: int,
    budget: int,
) -> list[SweepRow]:
    vocabulary = replayer.descriptor.vocabulary
    plans: list[tuple[Milestone, int, list[ReplayJob]]] = []
    for milestone in contract.milestones:
        if not isinstance(milestone.check, HashCheck) or milestone.id not in ref_turns:
            continue
        turn = ref_turns[milestone.id]
        jobs = _sweep_jobs(milestone, turn, reference, vocabulary, seed, budget)
        plans.append((milestone, turn, jobs))
    every = [job for _, _, jobs in plans for job in jobs]
    results = iter(replayer.replay_many(every, contract) if every else [])
    rows: list[SweepRow] = []
    for milestone, turn, jobs in plans:
        reached = sum(1 for _ in jobs if any(p.id == milestone.id for p in next(results).verified))
        rows.append(
            SweepRow(
                milestone=milestone.id,
                reference_turn=turn,
                probes=len(jobs),
                reached=reached,
                probe_turns=sum(len(job.inputs) for job in jobs),
            )
        )
    return rows


def _message(
    rows: Sequence[MilestoneRow],
    separating: Sequence[str],
    ref_legible: int,
    best: int,
    best_names: Sequence[str],
    separates: bool,
    problems: Sequence[str],
) -> str:
    trivial = [f"{r.id} ({', '.join(r.earned_by)})" for r in rows if r.verdict == "trivial"]
    parts: list[str] = []
    if separates:
        parts.append(
            f"separates: the reference earns {ref_legible} legible milestones, the best "
            f"baseline ({', '.join(best_names)}) {best}; separating: {', '.join(separating)}"
        )
    else:
        reasons = []
        if not separating:
            reasons.append("no legible milestone separates")
        if ref_legible <= best:
            reasons.append(
                f"the best baseline ({', '.join(best_names)}) earns {best} legible milestones, "
                f"the reference {ref_legible}"
            )
        parts.append("does not separate: " + "; ".join(reasons))
    if trivial:
        parts.append("trivial: " + "; ".join(trivial))
    if problems:
        parts.append("gate problems: " + "; ".join(problems))
    return ". ".join(parts)
