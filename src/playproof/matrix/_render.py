"""Write a matrix report: ``report.json``, ``report.md`` (with SVG files) and ``report.html``.

The HTML page is self-contained: styles inline, plots as inline SVG, no
script and no external asset. Every name that came from a record or a spec
is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from playproof.errors import RunError
from playproof.matrix._plots import cost_svg, frontier_svg, scores_svg
from playproof.matrix._report import AgentRow, MatrixReport, ScoreRow
from playproof.matrix._store import write_atomic

__all__ = ["PLOTS", "render_html", "render_markdown", "write_report"]

PLOTS: dict[str, tuple[str, Callable[[MatrixReport], str]]] = {
    "scores.svg": ("Score per agent and target", scores_svg),
    "cost.svg": ("Cost per earned milestone", cost_svg),
    "frontier.svg": ("Score against cost", frontier_svg),
}
"""Plot file -> (caption, drawer)."""


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}"


TOO_LARGE = "over $1.8e308"
"""Shown for an amount past the largest float (named in a row's ``overflow``)."""


def _spend(row: ScoreRow | AgentRow, field: str) -> str:
    """A row's amount, or that it is past the largest float."""
    value = getattr(row, field)
    return TOO_LARGE if value is None and field in row.overflow else _usd(value)


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _md_cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _tables(report: MatrixReport) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(title, note, header, rows) for every table both formats show."""
    boot = report.bootstrap
    tables = [
        (
            "Scores",
            f"Mean of earned / earnable over cells; {boot.confidence:.0%} percentile bootstrap "
            f"interval ({boot.resamples} resamples, seed {boot.seed}). Cost per milestone is "
            "spend over earned milestones.",
            ["agent", "target", "cells", "mean", "interval", "earned", "spent", "per milestone"],
            [
                [
                    s.agent,
                    s.target,
                    str(s.cells),
                    _number(s.mean),
                    _interval(s.low, s.high),
                    str(s.earned),
                    _spend(s, "spent_usd") + (" (+unmeasured)" if s.unmeasured_decisions else ""),
                    _spend(s, "cost_per_milestone"),
                ]
                for s in report.scores
            ],
        ),
        (
            "Agents",
            "Mean score over targets, mean spend per episode; frontier: no other agent scores "
            "at least as well for no more money.",
            ["agent", "targets", "mean score", "mean cost", "per milestone", "frontier"],
            [
                [
                    a.agent,
                    str(a.targets),
                    _number(a.mean_score),
                    _usd(a.mean_cost_usd),
                    _spend(a, "cost_per_milestone"),
                    "yes" if a.frontier else "no",
                ]
                for a in report.agents
            ],
        ),
        (
            "Rank per target",
            "1 is best; tied agents share the average rank.",
            ["target", "agent", "rank", "mean"],
            [[r.target, r.agent, _number(r.rank, 1), _number(r.mean)] for r in report.ranks],
        ),
        (
            "Rank agreement",
            f"Kendall's tau-b between each pair of targets; Kendall's W over all targets: "
            f"{_number(report.kendall_w)} ({len(report.w_agents)} agents scored on every one "
            f"of {len(report.w_targets)} targets). '-' means undefined (fewer than two agents, "
            "or a target where every agent ties).",
            ["first", "second", "agents", "tau"],
            [[t.first, t.second, str(t.agents), _number(t.tau)] for t in report.taus],
        ),
        (
            "Rejected records",
            "Left out of every score.",
            ["file", "reasons"],
            [[r.file, "; ".join(r.reasons)] for r in report.rejected],
        ),
    ]
    if report.missing:
        tables.append(
            (
                "Missing cells",
                "Named by the spec, no record.",
                ["cell"],
                [[m] for m in report.missing],
            )
        )
    return tables


def _summary(report: MatrixReport) -> str:
    return (
        f"{len(report.cells)} verified records, {len(report.rejected)} rejected, "
        f"{len(report.missing)} missing."
    )


def render_markdown(report: MatrixReport) -> str:
    """``report.md``: the tables, with the plots as images beside it."""
    lines = [f"# Matrix report: {_md_cell(report.name)}", "", _summary(report), ""]
    for file, (caption, _) in PLOTS.items():
        lines += [f"![{caption}]({file})", ""]
    for title, note, header, rows in _tables(report):
        lines += [f"## {title}", "", note, ""]
        if not rows:
            lines += ["None.", ""]
            continue
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


_CSS = (
    "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}"
    "th{background:#f2f2f2}figure{margin:1em 0}svg{max-width:100%;height:auto}"
)


def render_html(report: MatrixReport, plots: dict[str, str]) -> str:
    """``report.html``: one self-contained page (inline CSS and SVG, no script)."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Matrix report: {esc(report.name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Matrix report: {esc(report.name)}</h1><p>{esc(_summary(report))}</p>",
    ]
    for file, (caption, _) in PLOTS.items():
        parts.append(f"<figure>{plots[file]}<figcaption>{esc(caption)}</figcaption></figure>")
    for title, note, header, rows in _tables(report):
        parts.append(f"<h2>{esc(title)}</h2><p>{esc(note)}</p>")
        if not rows:
            parts.append("<p>None.</p>")
            continue
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(report: MatrixReport, folder: Path) -> list[Path]:
    """Write report.json, the SVG plots, report.md and report.html into ``folder``.

    A folder that cannot be made or written (a file in its place) is a RunError.
    """
    plots = {file: draw(report) for file, (_, draw) in PLOTS.items()}
    written = []
    documents = {
        "report.json": report.model_dump_json(by_alias=True, indent=2) + "\n",
        **plots,
        "report.md": render_markdown(report),
        "report.html": render_html(report, plots),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in documents.items():
            path = folder / name
            write_atomic(path, text.encode("utf-8"))
            written.append(path)
    except OSError as exc:
        raise RunError(f"cannot write the report into {folder}: {exc.strerror or exc}") from exc
    return written
