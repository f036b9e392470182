"""Server-rendered SVG plots: cost and latency per decision, and the milestone timeline.

Every number drawn comes from the record; text is escaped by Markup, so a
plot is safe to put in a page as is. Each plot is an ``<svg role="img">``
with a title and a description a screen reader reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

__all__ = [
    "PLOT_HEIGHT",
    "PLOT_WIDTH",
    "SERIES_BUCKETS",
    "series_plot",
    "suite_chart",
    "timeline_plot",
]

PLOT_WIDTH = 720
PLOT_HEIGHT = 180
_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 64, 16, 16, 32


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.4g}"


SERIES_BUCKETS = PLOT_WIDTH - _PAD_LEFT - _PAD_RIGHT
"""The spans a long series is drawn in: one per pixel of the plot's inner width."""


def _drawn_points(values: Sequence[float | None]) -> list[list[int]]:
    """The indices of ``values`` drawn, as runs of a line (an unmeasured gap ends a run).

    A series of at most :data:`SERIES_BUCKETS` values is drawn point by point.
    A longer one is cut into that many spans of consecutive decisions, and
    each span is drawn by its lowest and its highest measured value, in turn
    order: at most two points a pixel, so a plot's size no longer grows with
    the run while every spike (and every dip) stays visible. A span with no
    measured value is a gap; a span with some is drawn from those.
    """
    count = len(values)
    if count <= SERIES_BUCKETS:
        runs: list[list[int]] = []
        current: list[int] = []
        for index, value in enumerate(values):
            if value is None:
                if current:
                    runs.append(current)
                current = []
            else:
                current.append(index)
        if current:
            runs.append(current)
        return runs
    runs = []
    current = []
    for bucket in range(SERIES_BUCKETS):
        lo = count * bucket // SERIES_BUCKETS
        hi = count * (bucket + 1) // SERIES_BUCKETS
        span = values[lo:hi]
        if None in span:
            measured = [(v, lo + i) for i, v in enumerate(span) if v is not None]
            if not measured:
                if current:
                    runs.append(current)
                current = []
                continue
            low_at = min(measured)[1]
            high_at = max(measured, key=lambda pair: (pair[0], -pair[1]))[1]
        else:
            low, high = min(span), max(span)  # type: ignore[type-var]
            low_at, high_at = lo + span.index(low), lo + span.index(high)
        current.extend(sorted({low_at, high_at}))
    if current:
        runs.append(current)
    return runs


def series_plot(values: Sequence[float | None], *, title: str, unit: str, plot_id: str) -> Markup:
    """A line of ``values`` per decision (turn 1 first); unmeasured values leave gaps.

    The highest value, the total and the turn axis cover every decision; a
    run of more than :data:`SERIES_BUCKETS` decisions is drawn as the lowest
    and highest value of each span of decisions (see :func:`_drawn_points`),
    and the plot's description says so.
    """
    width, height = PLOT_WIDTH, PLOT_HEIGHT
    inner_w = width - _PAD_LEFT - _PAD_RIGHT
    inner_h = height - _PAD_TOP - _PAD_BOTTOM
    measured = [v for v in values if v is not None]
    top = max(measured, default=0.0) or 1.0
    count = max(len(values), 1)
    gaps = len(values) - len(measured)

    def x_of(index: int) -> float:
        return _PAD_LEFT + (inner_w * index / (count - 1) if count > 1 else inner_w / 2)

    def y_of(value: float) -> float:
        return _PAD_TOP + inner_h * (1 - value / top)

    def point(index: int) -> str:
        value = values[index]
        assert value is not None
        return f"{x_of(index):.1f},{y_of(value):.1f}"

    lines = [" ".join(point(index) for index in run) for run in _drawn_points(values)]
    total = sum(measured)
    description = (
        f"{len(values)} decisions; highest {_fmt(top if measured else 0)} {unit}, "
        f"total {_fmt(total)} {unit}" + (f"; {gaps} not measured" if gaps else "")
    )
    if len(values) > SERIES_BUCKETS:
        description += (
            f"; drawn as the lowest and highest value of each of {SERIES_BUCKETS} spans "
            f"of about {len(values) // SERIES_BUCKETS} decisions"
        )
    parts = [
        f'<svg class="plot" role="img" viewBox="0 0 {width} {height}" '
        f'aria-labelledby="{plot_id}-t {plot_id}-d" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{plot_id}-t">{escape(title)}</title>',
        f'<desc id="{plot_id}-d">{escape(description)}</desc>',
        f'<line class="axis" x1="{_PAD_LEFT}" y1="{_PAD_TOP + inner_h}" '
        f'x2="{_PAD_LEFT + inner_w}" y2="{_PAD_TOP + inner_h}"/>',
        f'<line class="axis" x1="{_PAD_LEFT}" y1="{_PAD_TOP}" x2="{_PAD_LEFT}" '
        f'y2="{_PAD_TOP + inner_h}"/>',
        f'<text class="tick" x="{_PAD_LEFT - 6}" y="{_PAD_TOP + 4}" text-anchor="end">'
        f"{escape(_fmt(top if measured else 0))}</text>",
        f'<text class="tick" x="{_PAD_LEFT - 6}" y="{_PAD_TOP + inner_h}" '
        'text-anchor="end">0</text>',
        f'<text class="tick" x="{_PAD_LEFT}" y="{height - 8}">turn 1</text>',
        f'<text class="tick" x="{_PAD_LEFT + inner_w}" y="{height - 8}" text-anchor="end">'
        f"turn {len(values)}</text>",
        f'<text class="unit" x="4" y="{_PAD_TOP + inner_h / 2}">{escape(unit)}</text>',
    ]
    parts.extend(f'<polyline class="series" points="{points}"/>' for points in lines)
    if len(measured) == 1:
        index = next(i for i, v in enumerate(values) if v is not None)
        value = measured[0]
        parts.append(
            f'<circle class="series-dot" cx="{x_of(index):.1f}" cy="{y_of(value):.1f}" r="3"/>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def timeline_plot(
    turns: int,
    marks: Sequence[tuple[str, int]],
    *,
    diverged_at: int | None = None,
    plot_id: str = "timeline",
) -> Markup:
    """Milestones on a line of turns ``0..turns``; the divergence turn in another colour."""
    width = PLOT_WIDTH
    height = 64 + 18 * max(len(marks), 1)
    inner_w = width - _PAD_LEFT - _PAD_RIGHT
    span = max(turns, 1)
    axis_y = 28

    def x_of(turn: int) -> float:
        return _PAD_LEFT + inner_w * min(max(turn, 0), span) / span

    described = (
        "; ".join(f"{name} at turn {turn}" for name, turn in marks) or "no milestone reached"
    )
    if diverged_at is not None:
        described += f"; replay diverges from the claim at turn {diverged_at}"
    parts = [
        f'<svg class="plot timeline" role="img" viewBox="0 0 {width} {height}" '
        f'aria-labelledby="{plot_id}-t {plot_id}-d" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{plot_id}-t">Milestones over {turns} turns</title>',
        f'<desc id="{plot_id}-d">{escape(described)}</desc>',
        f'<line class="axis" x1="{_PAD_LEFT}" y1="{axis_y}" x2="{_PAD_LEFT + inner_w}" '
        f'y2="{axis_y}"/>',
        f'<text class="tick" x="{_PAD_LEFT}" y="{axis_y - 8}">turn 0</text>',
        f'<text class="tick" x="{_PAD_LEFT + inner_w}" y="{axis_y - 8}" text-anchor="end">'
        f"turn {turns}</text>",
    ]
    if diverged_at is not None:
        x = x_of(diverged_at)
        parts.append(
            f'<line class="diverged" x1="{x:.1f}" y1="{axis_y - 12}" x2="{x:.1f}" '
            f'y2="{height - 4}"/>'
        )
    for row, (name, turn) in enumerate(marks):
        x = x_of(turn)
        y = axis_y + 22 + 18 * row
        parts.append(f'<line class="stem" x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{y - 4}"/>')
        parts.append(f'<circle class="mark" cx="{x:.1f}" cy="{axis_y}" r="4"/>')
        anchor = "end" if x > _PAD_LEFT + inner_w * 0.7 else "start"
        shift = -6 if anchor == "end" else 6
        parts.append(
            f'<text class="label" x="{x + shift:.1f}" y="{y}" text-anchor="{anchor}">'
            f"{escape(name)} · turn {turn}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def suite_chart(suites: Sequence[tuple[str, int, int]], *, plot_id: str = "suites") -> Markup:
    """Horizontal bars, one per suite: passed cases (filled) over the suite's cases (outline)."""
    width = PLOT_WIDTH
    label_w, count_w, row_h = 200, 96, 22
    bar_w = width - label_w - count_w - _PAD_RIGHT
    height = _PAD_TOP + row_h * max(len(suites), 1) + 8
    widest = max((total for _, _, total in suites), default=1) or 1
    described = "; ".join(f"{name}: {passed} of {total}" for name, passed, total in suites)
    parts = [
        f'<svg class="plot suites" role="img" viewBox="0 0 {width} {height}" '
        f'aria-labelledby="{plot_id}-t {plot_id}-d" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{plot_id}-t">Passed cases per suite</title>',
        f'<desc id="{plot_id}-d">{escape(described or "no case")}</desc>',
    ]
    for row, (name, passed, total) in enumerate(suites):
        y = _PAD_TOP + row * row_h
        full = bar_w * total / widest
        done = bar_w * passed / widest
        shown = name if len(name) <= 28 else name[:27] + "…"
        parts.append(
            f'<text class="label" x="{label_w - 8}" y="{y + 14}" text-anchor="end">'
            f"{escape(shown)}</text>"
        )
        parts.append(
            f'<rect class="bar-total" x="{label_w}" y="{y + 3}" width="{full:.1f}" height="14"/>'
        )
        if passed:
            parts.append(
                f'<rect class="bar-passed" x="{label_w}" y="{y + 3}" width="{done:.1f}" '
                'height="14"/>'
            )
        parts.append(
            f'<text class="tick" x="{label_w + bar_w + 8}" y="{y + 14}">{passed} of {total}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
