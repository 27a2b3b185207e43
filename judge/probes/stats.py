"""The statistics of a probe: the share of verdicts that moved as they should and the mean shift
of P(pass), each with a 95% interval clustered by task.

Rates: a Wilson interval on the *effective* number of cases, n / deff, where the design effect
deff is the variance of the rate estimated over task clusters (the ratio estimator's
linearised variance, m / (m - 1) * sum_c (k_c - p n_c)^2 / n^2) over the binomial variance
p (1 - p) / n, floored at 1 (clustering never makes a rate surer than independent cases would;
a rate of 0 or 1 has no spread to estimate, and deff is 1 there). With one case per task this
is Wilson's interval with a factor m / (m - 1) of caution. Wilson keeps an honest width at 0/n
and n/n, where a percentile bootstrap collapses to a point.

Shifts: a percentile bootstrap over tasks (:func:`calibration.intervals.ratio_interval`,
2,000 resamples, seed 0) of the mean of (P(pass) perturbed - P(pass) original).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from calibration.intervals import ratio_interval

Z95 = 1.959963984540054
N_BOOT = 2000


def wilson_interval(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed on ``n`` (possibly fractional,
    effective) cases; (0, 1) when n is 0. The lower bound is exactly 0 at p = 0 and the upper
    exactly 1 at p = 1, where centre and half-width are equal (floating point left 1e-17 or
    0.9999999999999999 there)."""
    if n <= 0:
        return (0.0, 1.0)
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (
        0.0 if p <= 0.0 else max(0.0, centre - half),
        1.0 if p >= 1.0 else min(1.0, centre + half),
    )


def design_effect(hits: Sequence[bool], clusters: Sequence[str]) -> float:
    """Variance of the rate over task clusters / its binomial variance, at least 1."""
    n = len(hits)
    if n == 0:
        return 1.0
    k_by: dict[str, int] = defaultdict(int)
    n_by: dict[str, int] = defaultdict(int)
    for hit, cluster in zip(hits, clusters, strict=True):
        k_by[cluster] += int(hit)
        n_by[cluster] += 1
    m = len(n_by)
    p = sum(k_by.values()) / n
    if m < 2 or p in (0.0, 1.0):
        return 1.0
    spread = sum((k_by[c] - p * n_by[c]) ** 2 for c in n_by)
    clustered = m / (m - 1) * spread / (n * n)
    binomial = p * (1 - p) / n
    return max(1.0, clustered / binomial)


@dataclass(frozen=True)
class Rate:
    """k of n as a share, with its task-clustered 95% interval."""

    k: int
    n: int
    rate: float | None
    ci95: tuple[float, float] | None
    design_effect: float


def clustered_rate(hits: Sequence[bool], clusters: Sequence[str]) -> Rate:
    """The share of ``hits`` and its Wilson interval on n / deff (see the module)."""
    n = len(hits)
    k = sum(1 for h in hits if h)
    if n == 0:
        return Rate(0, 0, None, None, 1.0)
    deff = design_effect(hits, clusters)
    p = k / n
    return Rate(k, n, p, wilson_interval(p, n / deff), deff)


@dataclass(frozen=True)
class Shift:
    """The mean of per-case shifts, with its task-cluster bootstrap 95% interval."""

    n: int
    mean: float | None
    ci95: tuple[float, float] | None


def clustered_mean(values: Sequence[float], clusters: Sequence[str], seed: int = 0) -> Shift:
    """The mean of ``values`` and its percentile interval under resampling of the clusters."""
    import numpy as np

    n = len(values)
    if n == 0:
        return Shift(0, None, None)
    v = np.asarray(values, dtype=float)
    ci = ratio_interval(v, np.ones_like(v), np.asarray(list(clusters)), N_BOOT, seed)
    return Shift(n, float(v.mean()), ci)


def verdict_of(score: float, kind: str) -> str:
    """The verdict a pooled score gives: pass above 0.5 and fail below for binary rubrics
    (0.5 exactly is fail: not shown to pass); A above 0.5, B below, tie at 0.5 for pairs."""
    if kind == "pairwise":
        return "A" if score > 0.5 else "B" if score < 0.5 else "tie"
    return "pass" if score > 0.5 else "fail"


Status = str
#: Statuses of a probe, from its as-expected rate's interval against the bar.
STATUSES = ("pass", "fail", "inconclusive", "no data")


def status_of(rate: Rate, bar: float) -> Status:
    """``pass`` when the interval's lower end reaches the bar, ``fail`` when its upper end is
    below it, ``inconclusive`` in between, ``no data`` without eligible cases."""
    if rate.ci95 is None:
        return "no data"
    low, high = rate.ci95
    if low >= bar:
        return "pass"
    if high < bar:
        return "fail"
    return "inconclusive"
