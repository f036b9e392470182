"""The report's plots, drawn with matplotlib straight to SVG text (no pyplot, no global state).

Fonts are drawn as paths and the SVG ids are salted with a constant, so a
plot is self-contained and the same report gives the same bytes.

Amounts are plotted in units of a power of ten when the largest is past
:data:`LARGEST_PLOTTED`: matplotlib's axis arithmetic overflows on values near
the largest float (which a signed record may declare) and the axes come out broken.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from playproof.matrix._report import MatrixReport

__all__ = ["cost_svg", "frontier_svg", "scores_svg"]

_STYLE: dict[Any, Any] = {
    "svg.fonttype": "path",
    "svg.hashsalt": "playproof-matrix",
    "font.size": 9.0,
}


LARGEST_PLOTTED = 1e100
"""Amounts past this are drawn in units of a power of ten (named on the axis)."""


def _unit(values: Sequence[float]) -> tuple[float, str]:
    """(divisor, axis note) that bring every amount within :data:`LARGEST_PLOTTED`."""
    largest = max(values, default=0.0)
    if largest <= LARGEST_PLOTTED:
        return 1.0, ""
    exponent = math.floor(math.log10(largest))
    return 10.0**exponent, f" x 1e{exponent}"


def _svg(figure: Any) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(_STYLE):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    # Inline in HTML: drop the XML prolog and doctype, keep the <svg> element.
    return text[text.index("<svg") :]


def _figure(width: float = 7.0, height: float = 3.6) -> tuple[Any, Any]:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_STYLE):
        figure = Figure(figsize=(width, height))
        axes = figure.add_subplot()
    return figure, axes


def _grouped(report: MatrixReport, value: str, title: str, ylabel: str) -> str:
    """Bars per target, one per agent; ``value`` is ``mean`` (with intervals) or cost."""
    targets = list(dict.fromkeys(s.target for s in report.scores))
    agents = list(dict.fromkeys(s.agent for s in report.scores))
    figure, axes = _figure()
    width = 0.8 / max(1, len(agents))
    costs = [s.cost_per_milestone for s in report.scores if s.cost_per_milestone is not None]
    divisor, note = _unit(costs) if value != "mean" else (1.0, "")
    for index, agent in enumerate(agents):
        xs, ys, low, high = [], [], [], []
        for position, target in enumerate(targets):
            row = next((s for s in report.scores if s.agent == agent and s.target == target), None)
            if row is None:
                continue
            y = row.mean if value == "mean" else row.cost_per_milestone
            if y is None:
                continue
            y /= divisor
            xs.append(position + (index - (len(agents) - 1) / 2) * width)
            ys.append(y)
            low.append(y - row.low if value == "mean" and row.low is not None else 0.0)
            high.append(row.high - y if value == "mean" and row.high is not None else 0.0)
        errors = [low, high] if value == "mean" else None
        axes.bar(xs, ys, width, yerr=errors, capsize=3, label=agent)
    axes.set_xticks(range(len(targets)), targets)
    axes.set_title(title)
    axes.set_ylabel(ylabel + (f" ({note.strip()})" if note else ""))
    if value == "mean":
        axes.set_ylim(0, 1.05)
    axes.legend(fontsize=8)
    return _svg(figure)


def scores_svg(report: MatrixReport) -> str:
    """Earned over earnable per agent and target, with the bootstrap intervals."""
    title = f"score per target ({report.bootstrap.confidence:.0%} bootstrap intervals)"
    return _grouped(report, "mean", title, "earned / earnable")


def cost_svg(report: MatrixReport) -> str:
    """Cost per earned milestone per agent and target (no bar: nothing earned)."""
    return _grouped(report, "cost", "cost per earned milestone", "USD per milestone")


def frontier_svg(report: MatrixReport) -> str:
    """Mean score against mean cost per episode; the frontier agents joined by a line."""
    figure, axes = _figure(6.0, 4.0)
    divisor, note = _unit([r.mean_cost_usd for r in report.agents])
    for row in report.agents:
        cost = row.mean_cost_usd / divisor
        axes.scatter([cost], [row.mean_score], marker="o" if row.frontier else "x", zorder=3)
        axes.annotate(row.agent, (cost, row.mean_score), fontsize=8)
    front = sorted((r.mean_cost_usd / divisor, r.mean_score) for r in report.agents if r.frontier)
    if front:
        axes.step(
            [c for c, _ in front], [s for _, s in front], where="post", linestyle="--", zorder=2
        )
    axes.set_xlabel(f"mean cost per episode (USD{note})")
    axes.set_ylabel("mean score over targets")
    axes.set_title("score against cost (o: on the frontier)")
    return _svg(figure)
