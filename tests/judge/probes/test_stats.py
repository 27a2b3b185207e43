"""The probe statistics on cases worked by hand."""

from __future__ import annotations

import math

import pytest

from calibration.intervals import wilson
from judge.probes.stats import (
    Z95,
    clustered_mean,
    clustered_rate,
    design_effect,
    status_of,
    verdict_of,
    wilson_interval,
)


def test_wilson_interval_matches_the_formula_and_statsmodels() -> None:
    # 10 of 10: centre (1 + z²/20) / (1 + z²/10), half z sqrt(z²/400) / (1 + z²/10).
    z2 = Z95**2
    denom = 1 + z2 / 10
    centre = (1 + z2 / 20) / denom
    half = Z95 * math.sqrt(z2 / 400) / denom
    assert wilson_interval(1.0, 10) == pytest.approx((centre - half, 1.0))
    assert wilson_interval(1.0, 10)[0] == pytest.approx(10 / (10 + z2))  # the k = n closed form
    for k, n in [(0, 5), (3, 7), (29, 29), (50, 100)]:
        assert wilson_interval(k / n, n) == pytest.approx(wilson(k, n), abs=1e-9)
    assert wilson_interval(0.5, 0) == (0.0, 1.0)


def test_wilson_interval_bounds_are_exact_at_zero_and_one() -> None:
    # At p = 0 centre and half are both (z²/2n) / (1 + z²/n): the lower bound is 0, the upper
    # z² / (n + z²); at p = 1 the upper bound is 1. Floating point left 1.4e-17 at p = 0,
    # n = 14 and 0.9999999999999999 at p = 1, n = 10.
    z2 = Z95**2
    assert wilson_interval(0.0, 14) == (0.0, pytest.approx(z2 / (14 + z2), abs=1e-12))
    assert wilson_interval(1.0, 10) == (pytest.approx(10 / (10 + z2), abs=1e-12), 1.0)
    for n in [*range(1, 301), 2.5, 7.25, 13.7, 99.9]:
        assert wilson_interval(0.0, n)[0] == 0.0, n
        assert wilson_interval(1.0, n)[1] == 1.0, n


def test_design_effect_by_hand() -> None:
    # One case per task: m / (m - 1) * sum (k_c - p)^2 / n^2 over p (1 - p) / n.
    # hits 1, 1, 0, 0: p = 1/2, sum of squares 4 * 1/4 = 1; clustered 4/3 * 1/16 = 1/12;
    # binomial 1/4 / 4 = 1/16; deff = (1/12) / (1/16) = 4/3.
    assert design_effect([True, True, False, False], ["a", "b", "c", "d"]) == pytest.approx(4 / 3)
    # Two tasks of two cases, one all hits and one all misses: p = 1/2;
    # sum (2 - 1)^2 + (0 - 1)^2 = 2; clustered 2/1 * 2/16 = 1/4; binomial 1/16; deff 4.
    assert design_effect([True, True, False, False], ["a", "a", "b", "b"]) == pytest.approx(4.0)
    # Hits spread evenly across tasks: no spread between them, deff floored at 1.
    assert design_effect([True, False, True, False], ["a", "a", "b", "b"]) == 1.0
    # All hits, one task, no cases: 1.
    assert design_effect([True, True], ["a", "b"]) == 1.0
    assert design_effect([True, False], ["a", "a"]) == 1.0
    assert design_effect([], []) == 1.0


def test_clustered_rate_is_wilson_on_the_effective_number_of_cases() -> None:
    # Two tasks, all hits in one, none in the other: deff 4, n_eff = 1, Wilson(0.5, 1):
    # centre 0.5, half z sqrt(1/4 + z²/4) / (1 + z²).
    rate = clustered_rate([True, True, False, False], ["a", "a", "b", "b"])
    half = Z95 * math.sqrt(0.25 + Z95**2 / 4) / (1 + Z95**2)
    assert (rate.k, rate.n, rate.rate, rate.design_effect) == (2, 4, 0.5, 4.0)
    assert rate.ci95 == pytest.approx((0.5 - half, 0.5 + half))
    assert rate.ci95[0] == pytest.approx(0.0546, abs=1e-4)  # type: ignore[index]
    # The same hits, each its own task: Wilson on 4 / (4/3) = 3 cases.
    spread = clustered_rate([True, True, False, False], ["a", "b", "c", "d"])
    assert spread.ci95 == pytest.approx(wilson_interval(0.5, 3))
    assert spread.ci95[1] - spread.ci95[0] < rate.ci95[1] - rate.ci95[0]  # type: ignore[index]
    # 9 of 9, one case per task: Wilson's 9/9 interval, lower 9 / (9 + z²).
    nine = clustered_rate([True] * 9, [str(i) for i in range(9)])
    assert nine.ci95 == pytest.approx((9 / (9 + Z95**2), 1.0))
    empty = clustered_rate([], [])
    assert (empty.n, empty.rate, empty.ci95) == (0, None, None)


def test_clustered_mean_bootstrap_by_hand() -> None:
    # Identical shifts: every resample has the same mean.
    same = clustered_mean([0.8, 0.8, 0.8], ["a", "b", "c"])
    assert same.mean == pytest.approx(0.8) and same.ci95 == pytest.approx((0.8, 0.8))
    # Two tasks with means -0.8 and 0: a resample draws (a, a), (a, b), (b, a) or (b, b), so its
    # mean is -0.8 (1/4), -0.4 (1/2) or 0 (1/4): the 2.5% and 97.5% points are -0.8 and 0.
    two = clustered_mean([-0.8, 0.0], ["a", "b"])
    assert two.mean == pytest.approx(-0.4)
    assert two.ci95 == pytest.approx((-0.8, 0.0), abs=1e-6)
    # A task is resampled whole: three cases of task a at -0.6, one of task b at 0.
    # Resamples (a, a) -> -0.6, (a, b) -> (3 * -0.6) / 4 = -0.45, (b, b) -> 0.
    clustered = clustered_mean([-0.6, -0.6, -0.6, 0.0], ["a", "a", "a", "b"])
    assert clustered.mean == pytest.approx(-0.45)
    assert clustered.ci95 == pytest.approx((-0.6, 0.0), abs=1e-6)
    assert clustered_mean([], []).ci95 is None


def test_verdicts_and_statuses() -> None:
    assert [verdict_of(s, "binary") for s in (0.9, 0.5, 0.1)] == ["pass", "fail", "fail"]
    assert [verdict_of(s, "pairwise") for s in (0.9, 0.5, 0.1)] == ["A", "tie", "B"]
    assert status_of(clustered_rate([True] * 30, [str(i) for i in range(30)]), 0.8) == "pass"
    assert status_of(clustered_rate([False] * 30, [str(i) for i in range(30)]), 0.8) == "fail"
    assert status_of(clustered_rate([True] * 5, [str(i) for i in range(5)]), 0.8) == (
        "inconclusive"  # 5/5: Wilson lower 0.57
    )
    assert status_of(clustered_rate([], []), 0.8) == "no data"
