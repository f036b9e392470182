"""Hostile but valid costs: every cost is finite, yet the report's totals must stay honest.

A signed record may declare any finite cost, up to the largest float. Before the
fix, two such cells added up to inf: report.json then said ``"spent_usd": null``
(as if nothing were known), report.md printed ``$inf`` and matplotlib warned of
invalid values while drawing axes it could not scale.
"""

from __future__ import annotations

import json
import sys
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from playproof.cli._matrix import build_agent
from playproof.matrix import MatrixReport, parse_spec, report_matrix, run_matrix
from playproof.matrix._plots import cost_svg, frontier_svg, scores_svg
from playproof.matrix._report import AgentRow, CellRow, ScoreRow, _agent_rows, _score_row
from playproof.sign import SigningKey

LARGEST = sys.float_info.max

SPEC = """
targets = ["native/2048"]
seeds = [0, 2]
max_turns = 1

[[agents]]
name = "dear"
agent = "python:matrix_agents:fails_on_seed_one"
cost_usd = 1e308

[[agents]]
name = "cheap"
agent = "baseline:round-robin"
"""


def _no_constants(name: str) -> Any:
    raise AssertionError(f"report.json holds {name}, which JSON has no room for")


def _strict_json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constants)


def test_costs_that_add_up_past_the_largest_float_are_reported_as_such(tmp_path: Path) -> None:
    spec = parse_spec(SPEC)
    key = SigningKey.generate()
    outcome = run_matrix(spec, tmp_path / "runs", key, build_agent, executor="serial")
    assert outcome.played == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report, _ = report_matrix(
            tmp_path / "runs",
            tmp_path / "report",
            [key.verifying_key],
            executor="serial",
            trust_stored=False,
        )
    assert len(report.cells) == 4
    assert not report.rejected
    data = _strict_json((tmp_path / "report" / "report.json").read_text())
    dear = next(s for s in data["scores"] if s["agent"] == "dear")
    assert dear["spent_usd"] is None
    assert "spent_usd" in dear["overflow"]
    if dear["earned"]:
        exact = Fraction(1e308) * 2 / dear["earned"]
        assert dear["cost_per_milestone"] == (float(exact) if exact <= LARGEST else None)
    agent = next(a for a in data["agents"] if a["agent"] == "dear")
    assert agent["mean_cost_usd"] == 1e308
    cheap = next(s for s in data["scores"] if s["agent"] == "cheap")
    assert (cheap["spent_usd"], cheap["overflow"]) == (0.0, [])
    for name in ("report.md", "report.html"):
        text = (tmp_path / "report" / name).read_text()
        assert "inf" not in text.replace("Info", "")
        assert "nan" not in text.lower()
        assert "over $1.8e308" in text


def _cell(agent: str, spent: float, earned: int) -> CellRow:
    return CellRow(
        file=f"{agent}.json",
        agent=agent,
        target="t",
        seed=0,
        repetition=0,
        earned=earned,
        earnable=7,
        score=earned / 7,
        spent_usd=spent,
        unmeasured_decisions=0,
        turns=1,
        stop_reason="turn-limit",
        verified_by="replay",
    )


def test_a_total_and_a_cost_per_milestone_past_the_largest_float_are_named() -> None:
    rows = [_cell("a", LARGEST, 1), _cell("a", LARGEST, 0)]
    score = _score_row("a", "t", rows)
    assert (score.spent_usd, score.cost_per_milestone) == (None, None)
    assert score.overflow == ["spent_usd", "cost_per_milestone"]
    (agent,) = _agent_rows(["a"], ["t"], rows, {("a", "t"): score.mean})
    assert agent.mean_cost_usd == LARGEST
    assert agent.cost_per_milestone is None
    assert agent.overflow == ["cost_per_milestone"]


def test_nothing_earned_is_not_an_overflow() -> None:
    rows = [_cell("a", LARGEST, 0), _cell("a", LARGEST, 0)]
    score = _score_row("a", "t", rows)
    assert score.cost_per_milestone is None
    assert score.overflow == ["spent_usd"]
    (agent,) = _agent_rows(["a"], ["t"], rows, {("a", "t"): score.mean})
    assert agent.overflow == []


def test_totals_are_exact_sums_rounded_once() -> None:
    rows = [_cell("a", 0.1, 1) for _ in range(10)]
    score = _score_row("a", "t", rows)
    assert score.spent_usd == 1.0  # a float sum of ten 0.1 is 0.9999999999999999
    assert score.overflow == []


@pytest.mark.parametrize("cost", [LARGEST, 1e308, 1e101])
def test_plots_draw_amounts_near_the_largest_float(cost: float) -> None:
    scores = [
        ScoreRow(agent=a, target="t", cells=1, mean=0.5, low=None, high=None, earned=1,
                 spent_usd=c, cost_per_milestone=c, unmeasured_decisions=0)
        for a, c in (("a", cost), ("b", 0.0))
    ]  # fmt: skip
    agents = [
        AgentRow(agent=a, targets=1, mean_score=s, mean_cost_usd=c, cost_per_milestone=c,
                 frontier=True)
        for a, c, s in (("a", cost, 0.9), ("b", 0.0, 0.1))
    ]  # fmt: skip
    report = MatrixReport(name="x", cells=[], scores=scores, agents=agents, ranks=[], taus=[],
                          kendall_w=None, w_agents=[], w_targets=[], rejected=[],
                          missing=[])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for draw in (cost_svg, frontier_svg, scores_svg):
            assert "<svg" in draw(report)
