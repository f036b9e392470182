"""Rank statistics, intervals and the frontier, against numbers worked out by hand.

The tiny matrix: four agents p, q, r, s on three targets A, B, C (mean scores).

    A: p .9  q .6  r .3  s .1      order p > q > r > s
    B: p .8  q .4  r .5  s .2      order p > r > q > s
    C: p .7  q .7  r .2  s .1      p and q tie

Kendall's tau (tau-b), pair by pair over the 6 agent pairs:
- A,B: only (q, r) is discordant: (5 - 1) / 6 = 2/3.
- A,C: (p, q) is tied in C, the other 5 concordant: 5 / sqrt(6 * 5) = 5 / sqrt(30).
- B,C: (p, q) tied in C, (q, r) discordant, 4 concordant: 3 / sqrt(30).

Kendall's W (ranks ascending; C gives p and q 3.5 each):
rank sums p 11.5, q 8.5, r 7, s 3 (mean 7.5); S = 16 + 1 + 0.25 + 20.25 = 37.5;
m = 3 targets, n = 4 agents, one tie of two in C: sum(t^3 - t) = 6;
W = 12 * 37.5 / (9 * 60 - 3 * 6) = 450 / 522 = 25/29.
"""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("scipy")
import numpy as np
from scipy import stats

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

AGENTS = ["p", "q", "r", "s"]
A = [0.9, 0.6, 0.3, 0.1]
B = [0.8, 0.4, 0.5, 0.2]
C = [0.7, 0.7, 0.2, 0.1]


def test_kendall_tau_by_hand() -> None:
    assert kendall_tau(A, B) == pytest.approx(2 / 3)
    assert kendall_tau(A, C) == pytest.approx(5 / math.sqrt(30))
    assert kendall_tau(B, C) == pytest.approx(3 / math.sqrt(30))
    # scipy's tau-b agrees with the hand calculation.
    assert stats.kendalltau(A, C).statistic == pytest.approx(5 / math.sqrt(30))


def test_kendall_w_by_hand_and_through_friedman() -> None:
    w = kendall_w([A, B, C])
    assert w == pytest.approx(25 / 29)
    # Friedman's chi-square (tie-corrected) is m (n - 1) W.
    chi2 = stats.friedmanchisquare(*zip(A, B, C, strict=True)).statistic
    assert w == pytest.approx(chi2 / (3 * (4 - 1)))


def test_w_is_one_when_targets_agree_and_undefined_when_everything_ties() -> None:
    assert kendall_w([A, A, A]) == pytest.approx(1.0)
    assert kendall_w([[0.5, 0.5], [0.2, 0.2]]) is None
    assert kendall_w([A]) is None


def test_tau_is_undefined_for_a_constant_target_or_one_agent() -> None:
    assert kendall_tau([0.0, 0.0, 0.0], A[:3]) is None
    assert kendall_tau([0.4], [0.1]) is None


def test_ranks_put_the_best_first_and_share_ties() -> None:
    assert ranks(A) == [1.0, 2.0, 3.0, 4.0]
    assert ranks(C) == [1.5, 1.5, 3.0, 4.0]


def test_pareto_front() -> None:
    points = [(0.0, 0.5), (1.0, 0.9), (1.0, 0.4), (0.5, 0.5)]
    assert pareto_front(points) == [True, True, False, False]


def test_bootstrap_interval_is_scipys_percentile_interval_with_the_documented_seed() -> None:
    values = [0.25, 0.5, 0.5, 0.75, 1.0, 0.0]
    expected = stats.bootstrap(
        (np.asarray(values),),
        np.mean,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=BOOTSTRAP_CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    ).confidence_interval
    assert bootstrap_interval(values) == (expected.low, expected.high)
    assert bootstrap_interval(values) == bootstrap_interval(values)


def test_bootstrap_interval_of_degenerate_samples() -> None:
    assert bootstrap_interval([0.5]) is None
    assert bootstrap_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)


@given(st.lists(st.integers(0, 7), min_size=2, max_size=12))
def test_bootstrap_interval_brackets_the_mean(earned: list[int]) -> None:
    values = [e / 7 for e in earned]
    interval = bootstrap_interval(values)
    assert interval is not None
    low, high = interval
    mean = sum(values) / len(values)
    assert min(values) <= low <= mean + 1e-12
    assert mean - 1e-12 <= high <= max(values)
