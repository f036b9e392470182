"""The matrix report as data: scores with intervals, cost, the frontier, ranks and agreement.

:func:`build_report` turns the verified cells of a matrix folder into a
:class:`MatrixReport` (also written as ``report.json``). Only clean records
count; rejected ones are listed with their reasons. A cell's score is what
replay verified: earned over earnable milestones.

Money is added up exactly (as fractions) and rounded once. Every cost is a
finite float, but many of them can add up past the largest float (about
1.8e308): such a number is given as None and named in the row's ``overflow``,
never as an infinity (which JSON cannot carry). A mean spend never overflows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from itertools import combinations
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from playproof.matrix._collect import Collected, VerifiedCell
from playproof.matrix._stats import (
    BOOTSTRAP_CONFIDENCE,
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    bootstrap_interval,
    kendall_tau,
    kendall_w,
    pareto_front,
    ranks,
)

__all__ = [
    "REPORT_SCHEMA",
    "AgentRow",
    "Bootstrap",
    "CellRow",
    "MatrixReport",
    "RankRow",
    "RejectedRow",
    "ScoreRow",
    "TauRow",
    "build_report",
]

REPORT_SCHEMA = "playproof/matrix-report/v1"


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Bootstrap(_Row):
    """How every interval was computed."""

    method: Literal["percentile"] = "percentile"
    resamples: int = BOOTSTRAP_RESAMPLES
    confidence: float = BOOTSTRAP_CONFIDENCE
    seed: int = BOOTSTRAP_SEED


class CellRow(_Row):
    """One verified cell: what replay reproduced and what it cost."""

    file: str
    agent: str
    target: str
    seed: int
    repetition: int
    earned: int
    earnable: int
    score: float
    spent_usd: float
    unmeasured_decisions: int
    turns: int
    stop_reason: str
    verified_by: Literal["replay", "stored"]


class ScoreRow(_Row):
    """An agent on a target: mean score over its cells with a bootstrap interval, and cost."""

    agent: str
    target: str
    cells: int
    mean: float
    low: float | None
    high: float | None
    earned: int
    spent_usd: float | None
    """The cells' spend added up (None: past the largest float, named in ``overflow``)."""
    cost_per_milestone: float | None
    """Spend over earned milestones (None: nothing earned, or past the largest float)."""
    unmeasured_decisions: int
    overflow: list[Literal["spent_usd", "cost_per_milestone"]] = Field(default_factory=list)
    """The fields that are None because they are past the largest float (about 1.8e308)."""


class AgentRow(_Row):
    """An agent over every target: its mean score, mean cost per episode, and the frontier."""

    agent: str
    targets: int
    mean_score: float
    """The mean over targets of the agent's mean score on each."""
    mean_cost_usd: float
    """Mean spend per episode (always finite)."""
    cost_per_milestone: float | None
    """Spend over earned milestones (None: nothing earned, or past the largest float)."""
    frontier: bool
    """No other agent scores at least as well for no more money (better in one)."""
    overflow: list[Literal["cost_per_milestone"]] = Field(default_factory=list)
    """The fields that are None because they are past the largest float (about 1.8e308)."""


class RankRow(_Row):
    """An agent's rank on one target (1 is best; ties share the average rank)."""

    target: str
    agent: str
    rank: float
    mean: float


class TauRow(_Row):
    """Kendall's tau-b between the agents' mean scores on two targets (None: undefined)."""

    first: str
    second: str
    agents: int
    tau: float | None


class RejectedRow(_Row):
    """A record left out of every score, and why."""

    file: str
    reasons: list[str]


class MatrixReport(_Row):
    """Everything ``report.md`` and ``report.html`` show, as data."""

    schema_: Literal["playproof/matrix-report/v1"] = Field(
        "playproof/matrix-report/v1", alias="schema"
    )
    name: str
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)
    cells: list[CellRow]
    scores: list[ScoreRow]
    agents: list[AgentRow]
    ranks: list[RankRow]
    taus: list[TauRow]
    kendall_w: float | None
    w_agents: list[str]
    """The agents scored on every target (the ones W ranks)."""
    w_targets: list[str]
    rejected: list[RejectedRow]
    missing: list[str]

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def _cell_row(cell: VerifiedCell) -> CellRow:
    report, record = cell.report, cell.record
    earnable = report.earnable or 0
    return CellRow(
        file=cell.file,
        agent=cell.cell.agent,
        target=cell.cell.target,
        seed=cell.cell.seed,
        repetition=cell.cell.repetition,
        earned=report.earned,
        earnable=earnable,
        score=report.earned / earnable if earnable else 0.0,
        spent_usd=record.accounting.spent_usd,
        unmeasured_decisions=record.accounting.unmeasured_decisions,
        turns=len(record.decisions),
        stop_reason=record.stop_reason.value,
        verified_by=cell.source,
    )


def _exact_sum(values: Iterable[float]) -> Fraction:
    """The exact sum of finite floats (a float sum of many large costs overflows to inf)."""
    return sum((Fraction(v) for v in values), Fraction(0))


def _rounded(value: Fraction) -> float | None:
    """``value`` rounded to a float once; None when it is past the largest float."""
    try:
        return float(value)
    except OverflowError:
        return None


def _ordered(values: list[str], preferred: list[str]) -> list[str]:
    """``values`` in the spec's order where it has one, the rest sorted after."""
    known = [v for v in preferred if v in values]
    return known + sorted(set(values) - set(known))


def _score_row(agent: str, target: str, rows: list[CellRow]) -> ScoreRow:
    values = [r.score for r in rows]
    interval = bootstrap_interval(values)
    earned = sum(r.earned for r in rows)
    spent = _exact_sum(r.spent_usd for r in rows)
    total = _rounded(spent)
    per = _rounded(spent / earned) if earned else None
    overflow: list[Literal["spent_usd", "cost_per_milestone"]] = []
    if total is None:
        overflow.append("spent_usd")
    if earned and per is None:
        overflow.append("cost_per_milestone")
    return ScoreRow(
        agent=agent,
        target=target,
        cells=len(rows),
        mean=sum(values) / len(values),
        low=interval[0] if interval else None,
        high=interval[1] if interval else None,
        earned=earned,
        spent_usd=total,
        cost_per_milestone=per,
        unmeasured_decisions=sum(r.unmeasured_decisions for r in rows),
        overflow=overflow,
    )


def build_report(collected: Collected, name: str) -> MatrixReport:
    """The report over the clean cells of ``collected``."""
    rows = [_cell_row(c) for c in collected.cells]
    spec = collected.spec
    agents = _ordered(
        sorted({r.agent for r in rows}), [a.name for a in spec.agents] if spec else []
    )
    targets = _ordered(sorted({r.target for r in rows}), list(spec.targets) if spec else [])
    groups: dict[tuple[str, str], list[CellRow]] = defaultdict(list)
    for row in rows:
        groups[(row.agent, row.target)].append(row)
    scores = [
        _score_row(agent, target, groups[(agent, target)])
        for agent in agents
        for target in targets
        if groups[(agent, target)]
    ]
    mean = {(s.agent, s.target): s.mean for s in scores}
    agent_rows = _agent_rows(agents, targets, rows, mean)
    rank_rows: list[RankRow] = []
    for target in targets:
        present = [a for a in agents if (a, target) in mean]
        for agent, rank in zip(present, ranks([mean[(a, target)] for a in present]), strict=True):
            rank_rows.append(
                RankRow(target=target, agent=agent, rank=rank, mean=mean[(agent, target)])
            )
    taus = []
    for first, second in combinations(targets, 2):
        both = [a for a in agents if (a, first) in mean and (a, second) in mean]
        tau = kendall_tau([mean[(a, first)] for a in both], [mean[(a, second)] for a in both])
        taus.append(TauRow(first=first, second=second, agents=len(both), tau=tau))
    everywhere = [a for a in agents if all((a, t) in mean for t in targets)]
    table = [[mean[(a, t)] for a in everywhere] for t in targets]
    return MatrixReport(
        name=name,
        cells=rows,
        scores=scores,
        agents=agent_rows,
        ranks=rank_rows,
        taus=taus,
        kendall_w=kendall_w(table) if everywhere else None,
        w_agents=everywhere,
        w_targets=targets,
        rejected=[RejectedRow(file=r.file, reasons=list(r.reasons)) for r in collected.rejected],
        missing=collected.missing,
    )


def _agent_rows(
    agents: list[str], targets: list[str], rows: list[CellRow], mean: dict[tuple[str, str], float]
) -> list[AgentRow]:
    summary = []
    for agent in agents:
        mine = [r for r in rows if r.agent == agent]
        played = [t for t in targets if (agent, t) in mean]
        earned = sum(r.earned for r in mine)
        spent = _exact_sum(r.spent_usd for r in mine)
        # A mean of finite costs is at most the largest of them: it always rounds finite.
        mean_cost = float(spent / len(mine))
        summary.append(
            (
                agent,
                len(played),
                sum(mean[(agent, t)] for t in played) / len(played),
                mean_cost,
                _rounded(spent / earned) if earned else None,
                earned > 0,
            )
        )
    front = pareto_front([(cost, score) for _, _, score, cost, _, _ in summary])
    return [
        AgentRow(
            agent=agent,
            targets=count,
            mean_score=score,
            mean_cost_usd=cost,
            cost_per_milestone=per,
            frontier=on,
            overflow=["cost_per_milestone"] if earned and per is None else [],
        )
        for (agent, count, score, cost, per, earned), on in zip(summary, front, strict=True)
    ]
