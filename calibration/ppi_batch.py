"""The PPI++ estimator's arithmetic, on R samples at once (``calibration.ppi`` has the method,
its estimand and its two variances; this module is the vectorised core the public estimators
and the simulation bench share).

Every array is (R, L): one row per sample, one column per run. A sample's estimate is built in
three steps: each run's influence on the estimate (:func:`influences`), their sums of squares
under the chosen population (:func:`variance_sums`), then lambda, the standard error and the
Student-t interval (:func:`interval`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

Population = Literal["tasks", "runs"]
POPULATIONS: tuple[str, ...] = ("tasks", "runs")
#: Below this, sum(beta^2) counts as zero: the judge's scores carry no information to tune on.
_TINY = 1e-24


@dataclass(frozen=True)
class Batch:
    """The estimator on R samples at once (arrays of shape (R,)); NaN where undefined."""

    value: np.ndarray
    se: np.ndarray
    se_labels_only: np.ndarray
    lam: np.ndarray
    #: Labelled units (tasks with a label, or labelled runs) and labelled runs.
    units: np.ndarray
    n_labels: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass(frozen=True)
class Influences:
    """Each run's influence on the estimate, and the estimate's two parts, per sample."""

    #: Influence of the labels (centred at the labelled mean).
    alpha: np.ndarray
    #: d(influence)/d(lam): the all-runs part minus the labelled part.
    beta: np.ndarray
    #: The labelled part of beta only (the "runs" population).
    delta: np.ndarray
    #: The estimate is value0 + lam * slope: value0 is the labels-only estimate.
    value0: np.ndarray
    slope: np.ndarray


@dataclass(frozen=True)
class VarianceSums:
    """The variance at lambda is (saa + 2 lam sab + lam^2 sbb) * units / (units - 1)."""

    saa: np.ndarray
    sab: np.ndarray
    sbb: np.ndarray
    #: Labelled units: tasks with a labelled run, or labelled runs.
    units: np.ndarray


def influences(
    f: np.ndarray,
    y: np.ndarray,
    lab: np.ndarray,
    w: np.ndarray,
    pi: np.ndarray,
    grp: np.ndarray,
    signs: Sequence[float],
) -> Influences:
    """The influences of every run, the estimand being sum_g signs[g] * theta_g (``y`` is 0
    where unlabelled, ``lab`` the labelled runs of positive weight)."""
    import numpy as np

    xi = lab.astype(float)
    n_rows = f.shape[0]
    alpha = np.zeros(f.shape)
    beta = np.zeros(f.shape)
    delta = np.zeros(f.shape)
    value0 = np.zeros(n_rows)
    slope = np.zeros(n_rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        for g, sign in enumerate(signs):
            wg = np.where(grp == g, w, 0.0)
            wn = wg / wg.sum(axis=1, keepdims=True)
            f_all = (wn * f).sum(axis=1, keepdims=True)
            a = wn * xi / pi
            an = a / a.sum(axis=1, keepdims=True)
            y_lab = (an * y).sum(axis=1, keepdims=True)
            f_lab = (an * f).sum(axis=1, keepdims=True)
            alpha += np.where(lab, sign * an * (y - y_lab), 0.0)
            part = np.where(lab, -sign * an * (f - f_lab), 0.0)
            delta += part
            beta += np.where(wg > 0, sign * wn * (f - f_all), 0.0) + part
            value0 += sign * y_lab[:, 0]
            slope += sign * (f_all - f_lab)[:, 0]
    return Influences(alpha, beta, delta, value0, slope)


def variance_sums(
    inf: Influences,
    lab: np.ndarray,
    pi: np.ndarray,
    cl: np.ndarray,
    n_clusters: int,
    population: str,
) -> VarianceSums:
    """The sums of squares of the influences: summed per task first (``"tasks"``), or run by
    run with the design's finite-population factor (``"runs"``)."""
    import numpy as np

    n_rows = lab.shape[0]
    if population == "tasks":
        offset = (np.arange(n_rows)[:, None] * n_clusters + cl).ravel()
        size = n_rows * n_clusters

        def per_cluster(v: np.ndarray) -> np.ndarray:
            return np.bincount(offset, weights=v.ravel(), minlength=size).reshape(
                n_rows, n_clusters
            )

        ua, ub = per_cluster(inf.alpha), per_cluster(inf.beta)
        mult = np.ones_like(ua)
        units = (per_cluster(lab.astype(float)) > 0).sum(axis=1)
    elif population == "runs":
        ua, ub = inf.alpha, inf.delta
        mult = np.where(lab, 1.0 - pi, 0.0)  # a run labelled with certainty adds no variance
        units = lab.sum(axis=1)
    else:
        raise ValueError(f"population must be one of {POPULATIONS}, got {population!r}")
    saa = (mult * ua * ua).sum(axis=1)
    sab = (mult * ua * ub).sum(axis=1)
    sbb = (mult * ub * ub).sum(axis=1)
    return VarianceSums(saa, sab, sbb, units)


def interval(
    inf: Influences,
    sums: VarianceSums,
    n_labels: np.ndarray,
    *,
    lam: float | None,
    level: float,
    bounds: tuple[float, float],
) -> Batch:
    """Lambda (tuned, or given), the estimate, its standard errors and its t interval."""
    import numpy as np
    from scipy.stats import t as student_t

    saa, sab, sbb, units = sums.saa, sums.sab, sums.sbb, sums.units
    if lam is None:
        # The variance is saa + 2 lam sab + lam^2 sbb: minimised at -sab / sbb, kept in [0, 1].
        with np.errstate(invalid="ignore", divide="ignore"):
            lam_v = np.where(sbb > _TINY, np.clip(-sab / sbb, 0.0, 1.0), 0.0)
    else:
        lam_v = np.full(saa.shape[0], float(lam))
    with np.errstate(invalid="ignore", divide="ignore"):
        small = np.where(units > 1, units / (units - 1.0), np.nan)
        var = np.maximum(saa + 2 * lam_v * sab + lam_v**2 * sbb, 0.0) * small
        se = np.sqrt(var)
        se0 = np.sqrt(np.maximum(saa, 0.0) * small)
        crit = student_t.ppf(0.5 + level / 2.0, np.maximum(units - 1, 1))
        crit = np.where(units > 1, crit, np.nan)
    value = inf.value0 + lam_v * inf.slope
    lo = np.clip(value - crit * se, *bounds)
    hi = np.clip(value + crit * se, *bounds)
    return Batch(value, se, se0, lam_v, units, n_labels, lo, hi)


def estimate_batch(
    scores: np.ndarray,
    labels: np.ndarray,
    labelled: np.ndarray,
    weights: np.ndarray,
    probs: np.ndarray,
    clusters: np.ndarray,
    n_clusters: int,
    *,
    groups: np.ndarray | None = None,
    signs: Sequence[float] = (1.0,),
    lam: float | None = None,
    population: str = "tasks",
    level: float = 0.95,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> Batch:
    """The estimator on R samples at once: every array is (R, L), one row per sample.

    No input checks (the public functions check); the simulation bench calls this directly so
    that it measures exactly the production arithmetic. ``clusters`` are codes 0..n_clusters-1;
    ``groups`` codes 0..len(signs)-1 (the estimand is sum_g signs[g] * theta_g, each theta_g a
    weighted mean over its group's runs); ``lam`` None: tuned per sample.
    """
    import numpy as np

    f, y, lab, w, pi, cl = np.broadcast_arrays(
        np.asarray(scores, float),
        np.asarray(labels, float),
        np.asarray(labelled, bool),
        np.asarray(weights, float),
        np.asarray(probs, float),
        np.asarray(clusters, np.int64),
    )
    if f.ndim != 2:
        raise ValueError("estimate_batch wants (R, L) arrays")
    grp = np.zeros(f.shape, np.int64) if groups is None else np.broadcast_to(groups, f.shape)
    lab = lab & (w > 0)  # a labelled run of weight 0 says nothing about the estimand
    y = np.where(lab, y, 0.0)
    inf = influences(f, y, lab, w, pi, grp, signs)
    sums = variance_sums(inf, lab, pi, cl, n_clusters, population)
    return interval(inf, sums, lab.sum(axis=1), lam=lam, level=level, bounds=bounds)
