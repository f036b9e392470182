"""The numbers of a matrix report: bootstrap intervals, ranks, rank agreement, the frontier.

Needs the ``report`` extra (numpy, scipy, matplotlib); :func:`require_report_extra`
says so clearly when it is missing.

- A score interval is a percentile bootstrap of the mean over cells:
  :data:`BOOTSTRAP_RESAMPLES` resamples, 95 %, a generator seeded with
  :data:`BOOTSTRAP_SEED` afresh for every (agent, target), so a report is
  reproducible and does not depend on the order of its rows.
- Ranks: 1 is best (highest mean score); tied agents share the average rank.
- Kendall's tau between two targets is tau-b (ties corrected) over the agents
  scored on both; Kendall's W over all targets uses the agents scored on
  every target, with the usual tie correction:
  ``W = 12 S / (m^2 (n^3 - n) - m sum(t^3 - t))``, ``m`` targets, ``n``
  agents, ``S`` the squared deviations of the agents' rank sums.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

from playproof.errors import NotSupportedError

__all__ = [
    "BOOTSTRAP_CONFIDENCE",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "bootstrap_interval",
    "kendall_tau",
    "kendall_w",
    "pareto_front",
    "ranks",
    "require_report_extra",
]

BOOTSTRAP_RESAMPLES = 10_000
"""Bootstrap resamples per interval."""
BOOTSTRAP_SEED = 20_240_601
"""The seed of every interval's resampling generator."""
BOOTSTRAP_CONFIDENCE = 0.95
REPORT_MODULES = ("numpy", "scipy.stats", "matplotlib")


def require_report_extra() -> None:
    """Raise a clear error naming the ``report`` extra if numpy, scipy or matplotlib is missing."""
    missing = []
    for name in REPORT_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name.partition(".")[0])
    if missing:
        raise NotSupportedError(
            f"the matrix report needs the report extra ({', '.join(missing)} missing): "
            "pip install 'playproof[report]'"
        )


def _np() -> Any:
    return importlib.import_module("numpy")


def _stats() -> Any:
    return importlib.import_module("scipy.stats")


def bootstrap_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95 % percentile-bootstrap interval of the mean (None for fewer than two values)."""
    if len(values) < 2:
        return None
    if len(set(values)) == 1:
        return float(values[0]), float(values[0])
    np = _np()
    result = _stats().bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=BOOTSTRAP_CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    )
    low, high = result.confidence_interval
    # A resample's mean lies between the sample's extremes; np.mean's rounding can
    # step a hair outside them (7 x 1/7 averages to just under 1/7), so clamp.
    return max(float(low), min(values)), min(float(high), max(values))


def ranks(scores: Sequence[float]) -> list[float]:
    """Rank 1 for the highest score; ties share the average of their ranks."""
    np = _np()
    ranked = _stats().rankdata(-np.asarray(scores, dtype=float), method="average")
    return [float(r) for r in ranked]


def kendall_tau(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Kendall's tau-b between two score lists (None when it is undefined: fewer than two
    agents, or one list constant)."""
    if len(first) < 2 or len(set(first)) == 1 or len(set(second)) == 1:
        return None
    tau = _stats().kendalltau(first, second).statistic
    return None if math.isnan(tau) else float(tau)


def kendall_w(table: Sequence[Sequence[float]]) -> float | None:
    """Kendall's W of ``table`` (one row of scores per target, one column per agent).

    None when undefined: fewer than two targets or two agents, or every
    target ties every agent.
    """
    m = len(table)
    n = len(table[0]) if m else 0
    if m < 2 or n < 2:
        return None
    stats = _stats()
    np = _np()
    rows = [stats.rankdata(np.asarray(row, dtype=float)) for row in table]
    sums = np.sum(rows, axis=0)
    s = float(np.sum((sums - sums.mean()) ** 2))
    ties = 0.0
    for row in rows:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts.astype(float) ** 3 - counts))
    denominator = m * m * (n**3 - n) - m * ties
    return None if denominator <= 0 else 12.0 * s / denominator


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (cost, score): True when no other point costs no more and scores no less,
    being strictly better in one of the two."""
    front = []
    for i, (cost, score) in enumerate(points):
        dominated = any(
            j != i and c <= cost and s >= score and (c < cost or s > score)
            for j, (c, s) in enumerate(points)
        )
        front.append(not dominated)
    return front
