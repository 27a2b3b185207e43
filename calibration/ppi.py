"""Pass rates from a judge plus a few human labels: prediction-powered inference (PPI++).

The judge scores every run (a score in [0, 1]: P(pass), or its 0/1 verdict); people label a
random subset. The estimate uses both and stays consistent whatever the judge's quality (exactly
unbiased for a fixed lambda with equal weights and uniform sampling; the ratio form below and a
tuned lambda add a bias of order 1/n_labels); its interval is valid asymptotically and, with
power tuning, never wider (as estimated on the sample) than the interval from the labels alone,
and narrower the better the judge's scores correlate with the labels (variance about
1 - corr^2 of the labels-only one when few runs are labelled).

The estimand is the report's pass@1: the macro average over tasks of each task's success rate,
i.e. ``sum_i w_i Y_i`` with run weights ``w_i = 1 / (T n_t)`` (a task's runs share its weight;
equal to the run mean when tasks have equal run counts). Callers may pass other weights.

The estimator (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, Science 2023; PPI++, Angelopoulos,
Duchi, Zrnic 2023; with inclusion probabilities, Zrnic & Candes, ICML 2024)::

    theta(lam) = lam * F + R(lam),   F = sum_i w_i f_i                       (all runs)
                                     R = sum_lab a_i (Y_i - lam f_i) / sum_lab a_i,
                                     a_i = w_i / pi_i                        (labelled runs)

``pi_i`` is run i's inclusion probability (uniform sampling: n/N for every run). R is the
inverse-probability-weighted mean residual in its ratio (Hajek) form, so lam = 0 is exactly the
labels-only estimate (the weighted labelled mean), and adding a constant to Y moves the estimate
by that constant. Because the labelled runs are a subset of the N runs (not a separate sample),
the variance-minimising lam is the regression slope Cov(Y, f) / Var(f); PPI++'s
Cov / ((1 + n/N) Var) is the same estimator written for a disjoint unlabelled set (ppi_py's
lam' = lam (1 - n/N)). Here lam minimises the estimated variance below directly (a quadratic
in lam), which is the cluster-aware version; it is clipped to [0, 1] (lam = 0: labels only;
lam = 1: plain PPI).

Two populations, two variances (``population=``):

- ``"tasks"`` (default): the tasks are a sample from a population of tasks, as in the report's
  task-cluster bootstrap intervals; the interval covers the pass rate on that population. The
  variance is cluster-robust over tasks: each run's influence on the estimate (label sampling
  and task sampling both) is summed per task and the task sums are squared and added
  (CR1: times m / (m - 1)). Runs of one task are correlated, so a task is the unit.
- ``"runs"``: the estimand is the pass rate of exactly these N runs (what labelling all of them
  would give); only the choice of labelled runs is random. Design-based (Poisson-sampling)
  variance ``sum_lab (1 - pi_i) (a_i (r_i - R) / sum a)^2``; runs are labelled independently,
  so clustering does not enter. With every run labelled the interval is a point.

Small-sample choices, fixed before measuring: the variance is scaled by m / (m - 1) and the
critical value is Student's t with m - 1 degrees of freedom, m = the number of labelled units
(tasks with a labelled run, or labelled runs). With all labels of one class the variance
estimate is zero and the interval degenerates to a point (as any Wald interval); the result
says so in ``note``. The interval and value are clipped to [0, 1] ([-1, 1] for a difference).

Validity needs labels drawn by a recorded random plan (:func:`plan_labels`); hand-picked labels
are detected by :func:`plan_covers`. Measured coverage and widths: CALIBRATION_RESULTS.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from judge.errors import InputError

if TYPE_CHECKING:
    import numpy as np

Population = Literal["tasks", "runs"]
POPULATIONS: tuple[str, ...] = ("tasks", "runs")
#: Label values read as a pass / a fail (besides 1 / 0 and True / False).
PASS_VALUES = frozenset({"pass", "1", "true"})
FAIL_VALUES = frozenset({"fail", "0", "false"})
#: Fewer labelled units than this get a note: the t interval under-covers on so few binary
#: labels (measured on real judges in CALIBRATION_RESULTS.md: about 92-93% at 12 labels).
MIN_UNITS_FOR_TRUST = 30
#: Below this, sum(beta^2) counts as zero: the judge's scores carry no information to tune on.
_TINY = 1e-24


# --------------------------------------------------------------------------- typed results


@dataclass(frozen=True)
class PPIResult:
    """An estimate of pass@1 (or of a paired difference) with its interval."""

    value: float
    ci95: tuple[float, float]
    #: Standard error at the chosen lambda, and with lambda = 0 (labels only, same sample).
    se: float
    se_labels_only: float
    n_labels: int
    n_runs: int
    n_tasks: int
    #: "labels_only", "ppi" (lambda given), "ppi++" (lambda tuned); sampling says how labels
    #: were drawn: "uniform" or "weighted" (inclusion probabilities given: active sampling).
    method: str
    lam: float
    sampling: str
    population: str
    estimand: str = "pass@1"
    #: Degrees of freedom of the t critical value (labelled units - 1).
    df: int = 0
    level: float = 0.95
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``lambda`` spelled out)."""
        return {
            "estimand": self.estimand,
            "value": self.value,
            "ci95": list(self.ci95),
            "se": self.se,
            "se_labels_only": self.se_labels_only,
            "n_labels": self.n_labels,
            "n_runs": self.n_runs,
            "n_tasks": self.n_tasks,
            "method": self.method,
            "lambda": self.lam,
            "sampling": self.sampling,
            "population": self.population,
            "df": self.df,
            "level": self.level,
            "effective_labels": effective_labels(self),
            "note": self.note,
        }


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
class LabelPlan:
    """Which runs to label, drawn at random with recorded inclusion probabilities.

    ``design``: "uniform" (a simple random sample of exactly ``budget`` runs) or "active"
    (each run independently with its own probability; ``budget`` runs expected).
    """

    run_ids: tuple[str, ...]
    probs: tuple[float, ...]
    chosen: tuple[str, ...]
    seed: int
    budget: int
    design: str
    mix: float = 0.0

    def prob_of(self) -> dict[str, float]:
        """Inclusion probability by run id."""
        return dict(zip(self.run_ids, self.probs, strict=True))

    def to_dict(self) -> dict[str, Any]:
        """JSON form (stored beside the labels so the sample can be checked later)."""
        return {
            "run_ids": list(self.run_ids),
            "probs": list(self.probs),
            "chosen": list(self.chosen),
            "seed": self.seed,
            "budget": self.budget,
            "design": self.design,
            "mix": self.mix,
        }


@dataclass(frozen=True)
class PlanCheck:
    """Whether a set of labelled runs is the sample a plan drew (then PPI is valid)."""

    valid: bool
    #: Labelled runs the plan did not choose (hand-picked), and chosen runs left unlabelled.
    unplanned: tuple[str, ...] = ()
    unlabelled: tuple[str, ...] = ()
    #: Re-drawing from the plan's seed and probabilities gives the plan's own choice.
    reproducible: bool = True
    reason: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------- the core


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
    from scipy.stats import t as student_t

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
    xi = lab.astype(float)
    y = np.where(lab, y, 0.0)
    n_rows = f.shape[0]
    alpha = np.zeros(f.shape)  # influence of the labels (centred at the labelled mean)
    beta = np.zeros(f.shape)  # d(influence)/d(lam): all-runs part minus labelled part
    delta = np.zeros(f.shape)  # the labelled part of beta only (the "runs" population)
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
    if population == "tasks":
        offset = (np.arange(n_rows)[:, None] * n_clusters + cl).ravel()
        size = n_rows * n_clusters

        def per_cluster(v: np.ndarray) -> np.ndarray:
            return np.bincount(offset, weights=v.ravel(), minlength=size).reshape(
                n_rows, n_clusters
            )

        ua, ub = per_cluster(alpha), per_cluster(beta)
        mult = np.ones_like(ua)
        units = (per_cluster(xi) > 0).sum(axis=1)
    elif population == "runs":
        ua, ub = alpha, delta
        mult = np.where(lab, 1.0 - pi, 0.0)  # a run labelled with certainty adds no variance
        units = lab.sum(axis=1)
    else:
        raise ValueError(f"population must be one of {POPULATIONS}, got {population!r}")
    saa = (mult * ua * ua).sum(axis=1)
    sab = (mult * ua * ub).sum(axis=1)
    sbb = (mult * ub * ub).sum(axis=1)
    if lam is None:
        # The variance is saa + 2 lam sab + lam^2 sbb: minimised at -sab / sbb, kept in [0, 1].
        with np.errstate(invalid="ignore", divide="ignore"):
            lam_v = np.where(sbb > _TINY, np.clip(-sab / sbb, 0.0, 1.0), 0.0)
    else:
        lam_v = np.full(n_rows, float(lam))
    with np.errstate(invalid="ignore", divide="ignore"):
        small = np.where(units > 1, units / (units - 1.0), np.nan)
        var = np.maximum(saa + 2 * lam_v * sab + lam_v**2 * sbb, 0.0) * small
        se = np.sqrt(var)
        se0 = np.sqrt(np.maximum(saa, 0.0) * small)
        crit = student_t.ppf(0.5 + level / 2.0, np.maximum(units - 1, 1))
        crit = np.where(units > 1, crit, np.nan)
    value = value0 + lam_v * slope
    lo = np.clip(value - crit * se, *bounds)
    hi = np.clip(value + crit * se, *bounds)
    return Batch(value, se, se0, lam_v, units, lab.sum(axis=1), lo, hi)


# --------------------------------------------------------------------------- input checks


def _n_runs(values: Sequence[Any] | np.ndarray | Mapping[str, Any], name: str) -> int:
    try:
        return len(values)
    except TypeError as err:
        raise InputError(f"expected a sequence, got {type(values).__name__}", field=name) from err


def _run_ids(run_ids: Sequence[str] | None, n: int) -> list[str]:
    if run_ids is None:
        return [str(i) for i in range(n)]
    ids = [str(r) for r in run_ids]
    if len(ids) != n:
        raise InputError(
            f"{len(ids)} run ids for {n} runs",
            field="run_ids",
            hint="give one id per run, in the order of the scores",
        )
    if len(set(ids)) != n:
        seen: set[str] = set()
        dup = ""
        for r in ids:
            if r in seen:
                dup = r
                break
            seen.add(r)
        raise InputError(
            f"duplicate run id {dup!r}", field="run_ids", hint="each run must have its own id"
        )
    return ids


def _scores(scores: Sequence[float] | np.ndarray, n: int | None = None) -> np.ndarray:
    import numpy as np

    try:
        f = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as err:
        raise InputError(f"scores must be numbers in [0, 1]: {err}", field="scores") from err
    if f.ndim != 1:
        raise InputError("scores must be one number per run", field="scores")
    if n is not None and f.size != n:
        raise InputError(
            f"{f.size} scores for {n} runs", field="scores", hint="give one judge score per run"
        )
    bad = ~np.isfinite(f) | (f < 0) | (f > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"score {f[i]!r} of run {i} is not in [0, 1]",
            field="scores",
            hint="pass P(pass) or the 0/1 verdict; a failed judgment has no score",
        )
    return f


def _label_value(v: Any, where: str) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float) and v in (0, 1):
        return float(v)
    if isinstance(v, str) and v.strip().lower() in PASS_VALUES | FAIL_VALUES:
        return 1.0 if v.strip().lower() in PASS_VALUES else 0.0
    try:  # numpy scalars
        if float(v) in (0.0, 1.0):
            return float(v)
    except (TypeError, ValueError):
        pass
    raise InputError(
        f"label {v!r} of {where} is not 0/1 or pass/fail",
        field="labels",
        hint="human labels are binary; leave unlabelled runs as None",
    )


def _labels(
    labels: Sequence[Any] | np.ndarray | Mapping[str, Any], ids: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(y, labelled mask) from labels aligned with the runs (None = unlabelled) or a mapping
    run id -> label."""
    import numpy as np

    n = len(ids)
    y = np.zeros(n)
    lab = np.zeros(n, bool)
    if isinstance(labels, Mapping):
        index = {r: i for i, r in enumerate(ids)}
        for run, v in labels.items():
            i = index.get(str(run))
            if i is None:
                raise InputError(
                    f"label for unknown run {run!r}",
                    field="labels",
                    hint="label ids must be among the run ids",
                )
            value = _label_value(v, f"run {run!r}")
            if value is not None:
                y[i], lab[i] = value, True
    else:
        if _n_runs(labels, "labels") != n:
            raise InputError(
                f"{len(labels)} labels for {n} runs",
                field="labels",
                hint="one entry per run, None where unlabelled",
            )
        for i, v in enumerate(labels):
            value = _label_value(v, f"run {ids[i]!r}")
            if value is not None:
                y[i], lab[i] = value, True
    return y, lab


def _probs(probs: Sequence[float] | np.ndarray | None, n: int) -> np.ndarray | None:
    import numpy as np

    if probs is None:
        return None
    try:
        p = np.asarray(probs, dtype=float)
    except (TypeError, ValueError) as err:
        raise InputError(f"probabilities must be numbers: {err}", field="probs") from err
    if p.ndim != 1 or p.size != n:
        raise InputError(
            f"{p.size} inclusion probabilities for {n} runs",
            field="probs",
            hint="one inclusion probability per run (the label plan's)",
        )
    bad = ~np.isfinite(p) | (p <= 0) | (p > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"inclusion probability {p[i]!r} of run {i} is not in (0, 1]",
            field="probs",
            hint="every run must have a chance to be labelled",
        )
    return p


def _codes(values: Sequence[Any] | None, n: int, name: str) -> tuple[np.ndarray, list[Any]]:
    import numpy as np

    if values is None:
        return np.arange(n, dtype=np.int64), list(range(n))
    if _n_runs(values, name) != n:
        raise InputError(f"{len(values)} {name} for {n} runs", field=name, hint="one entry per run")
    index: dict[Any, int] = {}
    codes = [index.setdefault(v, len(index)) for v in values]
    return np.asarray(codes, dtype=np.int64), list(index)


def _weights(
    weights: Sequence[float] | np.ndarray | None, task: np.ndarray, group: np.ndarray
) -> np.ndarray:
    """Caller's weights, or the macro weights 1 / (runs of the task in the group)."""
    import numpy as np

    n = task.size
    if weights is not None:
        try:
            w = np.asarray(weights, dtype=float)
        except (TypeError, ValueError) as err:
            raise InputError(f"weights must be numbers: {err}", field="weights") from err
        if w.ndim != 1 or w.size != n:
            raise InputError(f"{w.size} weights for {n} runs", field="weights")
        if (~np.isfinite(w) | (w < 0)).any():
            raise InputError("weights must be finite and >= 0", field="weights")
        return w
    key = task * (int(group.max()) + 1 if n else 1) + group
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse.reshape(-1)]


# --------------------------------------------------------------------------- public estimators


def _finish(
    batch: Batch,
    *,
    method: str,
    sampling: str,
    population: str,
    n_runs: int,
    n_tasks: int,
    level: float,
    estimand: str,
    bounds: tuple[float, float],
    labels: np.ndarray,
) -> PPIResult:
    import numpy as np

    units = int(batch.units[0])
    if units < 2:
        what = "tasks" if population == "tasks" else "runs"
        raise InputError(
            f"labels fall in {units} {what}: an interval needs at least 2",
            field="labels",
            hint=f"label runs of at least two {what}",
        )
    notes = []
    if np.unique(labels).size < 2:
        notes.append(
            "every label is the same class: the variance estimate is zero and the "
            "interval is not trustworthy; label more runs"
        )
    if units < MIN_UNITS_FOR_TRUST:
        notes.append(
            f"only {units} labelled {'tasks' if population == 'tasks' else 'runs'}: "
            f"with fewer than {MIN_UNITS_FOR_TRUST} the interval tends to under-cover"
        )
    note = "; ".join(notes) or None
    value = float(np.clip(batch.value[0], *bounds))
    return PPIResult(
        value=value,
        ci95=(float(batch.lo[0]), float(batch.hi[0])),
        se=float(batch.se[0]),
        se_labels_only=float(batch.se_labels_only[0]),
        n_labels=int(batch.n_labels[0]),
        n_runs=n_runs,
        n_tasks=n_tasks,
        method=method,
        lam=float(batch.lam[0]),
        sampling=sampling,
        population=population,
        estimand=estimand,
        df=units - 1,
        level=level,
        note=note,
    )


def _check_common(population: str, level: float, lam: float | None) -> None:
    if population not in POPULATIONS:
        raise InputError(
            f"unknown population {population!r}",
            field="population",
            hint=f"use one of {', '.join(POPULATIONS)}",
        )
    if not 0 < level < 1:
        raise InputError(f"level {level!r} is not in (0, 1)", field="level")
    if lam is not None and not 0 <= lam <= 1:
        raise InputError(f"lambda {lam!r} is not in [0, 1]", field="lam")


def ppi_mean(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[Any] | np.ndarray | Mapping[str, Any],
    *,
    task_ids: Sequence[Any] | None = None,
    run_ids: Sequence[str] | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
    probs: Sequence[float] | np.ndarray | None = None,
    lam: float | None = None,
    population: Population = "tasks",
    level: float = 0.95,
) -> PPIResult:
    """PPI++ estimate of pass@1 (macro over tasks) from every run's judge score and the labels.

    ``labels``: one entry per run (1/0, True/False, "pass"/"fail"; None where unlabelled) or
    a mapping run id -> label. ``probs``: the runs' inclusion probabilities when labels were
    drawn non-uniformly (:func:`plan_labels` with ``active=True``); None means a uniform
    random sample. ``lam``: None tunes it (PPI++), 0 gives labels only, 1 plain PPI.
    """
    _check_common(population, level, lam)
    n = _n_runs(scores, "scores")
    f = _scores(scores, n)
    ids = _run_ids(run_ids, n)
    y, lab = _labels(labels, ids)
    if not lab.any():
        raise InputError(
            "no run is labelled",
            field="labels",
            hint="label a random subset of the runs (judge review plan)",
        )
    return _mean(
        f, y, lab, ids, task_ids, weights, _probs(probs, n), lam, population, level, method=None
    )


def labels_only(
    labels: Sequence[Any] | np.ndarray | Mapping[str, Any],
    *,
    n_runs: int | None = None,
    task_ids: Sequence[Any] | None = None,
    run_ids: Sequence[str] | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
    probs: Sequence[float] | np.ndarray | None = None,
    population: Population = "tasks",
    level: float = 0.95,
) -> PPIResult:
    """pass@1 and its interval from the labelled runs alone (the judge ignored).

    Macro weights still need every run's task (a task's weight is split among all its runs),
    so labels are given per run as in :func:`ppi_mean`; with a mapping, give ``run_ids``.
    """
    _check_common(population, level, None)
    n = (
        len(run_ids)
        if run_ids is not None
        else (n_runs if n_runs is not None else _n_runs(labels, "labels"))
    )
    ids = _run_ids(run_ids, n)
    y, lab = _labels(labels, ids)
    if not lab.any():
        raise InputError("no run is labelled", field="labels", hint="label some runs")
    import numpy as np

    return _mean(
        np.zeros(n),
        y,
        lab,
        ids,
        task_ids,
        weights,
        _probs(probs, n),
        0.0,
        population,
        level,
        method="labels_only",
    )


def active_mean(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[Any] | np.ndarray | Mapping[str, Any],
    probs: Sequence[float] | np.ndarray,
    **kwargs: Any,
) -> PPIResult:
    """Active inference (Zrnic & Candes 2024): labels drawn with probabilities ``probs`` (from
    :func:`plan_labels`), inverse-probability weighted, lambda power-tuned. Keyword arguments
    as :func:`ppi_mean`."""
    if probs is None:
        raise InputError("active inference needs the plan's inclusion probabilities", field="probs")
    return ppi_mean(scores, labels, probs=probs, **kwargs)


def _mean(
    f: np.ndarray,
    y: np.ndarray,
    lab: np.ndarray,
    ids: list[str],
    task_ids: Sequence[Any] | None,
    weights: Sequence[float] | np.ndarray | None,
    probs: np.ndarray | None,
    lam: float | None,
    population: str,
    level: float,
    method: str | None,
) -> PPIResult:
    import numpy as np

    n = len(ids)
    task, names = _codes(task_ids, n, "task_ids")
    w = _weights(weights, task, np.zeros(n, np.int64))
    if w.sum() <= 0:
        raise InputError("the weights sum to zero", field="weights")
    pi = probs if probs is not None else np.full(n, max(int(lab.sum()), 1) / n)
    batch = estimate_batch(
        f[None],
        y[None],
        lab[None],
        w[None],
        pi[None],
        task[None],
        len(names),
        lam=lam,
        population=population,
        level=level,
    )
    if method is None:
        method = "ppi++" if lam is None else ("labels_only" if lam == 0 else "ppi")
    return _finish(
        batch,
        method=method,
        sampling="uniform" if probs is None else "weighted",
        population=population,
        n_runs=n,
        n_tasks=len(names),
        level=level,
        estimand="pass@1",
        bounds=(0.0, 1.0),
        labels=y[lab & (w > 0)],
    )


def ppi_difference(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[Any] | np.ndarray | Mapping[str, Any],
    treatments: Sequence[Any],
    task_ids: Sequence[Any],
    *,
    first: Any = None,
    second: Any = None,
    run_ids: Sequence[str] | None = None,
    probs: Sequence[float] | np.ndarray | None = None,
    lam: float | None = None,
    population: Population = "tasks",
    level: float = 0.95,
) -> PPIResult:
    """pass@1(first) - pass@1(second) on the tasks both treatments ran, paired by task.

    Each treatment's pass@1 is the macro mean over the shared tasks; runs of tasks only one
    treatment ran are left out (the note counts them). Labels may fall on either treatment's
    runs; each treatment needs some. One lambda for both (the same judge scored both); with
    ``population="tasks"`` a task's contributions from both treatments are summed before
    squaring, so the interval accounts for the pairing. ``first``/``second`` default to the
    treatments in order of appearance (exactly two must then be present).
    """
    import numpy as np

    _check_common(population, level, lam)
    n = _n_runs(scores, "scores")
    f = _scores(scores, n)
    ids = _run_ids(run_ids, n)
    y, lab = _labels(labels, ids)
    if _n_runs(treatments, "treatments") != n:
        raise InputError(f"{len(treatments)} treatments for {n} runs", field="treatments")
    present = list(dict.fromkeys(treatments))
    if first is None and second is None:
        if len(present) != 2:
            raise InputError(
                f"{len(present)} treatments present; name the two to compare",
                field="treatments",
                hint="pass first= and second=",
            )
        first, second = present
    if first == second or first not in present or second not in present:
        raise InputError(
            f"treatments {first!r} and {second!r} must be two present ones", field="treatments"
        )
    task, names = _codes(task_ids, n, "task_ids")
    group = np.full(n, -1, np.int64)
    group[[t == first for t in treatments]] = 0
    group[[t == second for t in treatments]] = 1
    shared = np.intersect1d(task[group == 0], task[group == 1])
    keep = (group >= 0) & np.isin(task, shared)
    if shared.size == 0:
        raise InputError("the two treatments share no task", field="task_ids")
    for g, name in ((0, first), (1, second)):
        if not (lab & keep & (group == g)).any():
            raise InputError(
                f"no labelled run of treatment {name!r} on a shared task",
                field="labels",
                hint="labels must fall on both treatments' runs",
            )
    pi_given = _probs(probs, n)
    w = np.where(keep, _weights(None, task, np.maximum(group, 0)), 0.0)
    pi = pi_given if pi_given is not None else np.full(n, max(int(lab.sum()), 1) / n)
    batch = estimate_batch(
        f[None],
        y[None],
        lab[None],
        w[None],
        pi[None],
        task[None],
        len(names),
        groups=np.maximum(group, 0)[None],
        signs=(1.0, -1.0),
        lam=lam,
        population=population,
        level=level,
        bounds=(-1.0, 1.0),
    )
    method = "ppi++" if lam is None else ("labels_only" if lam == 0 else "ppi")
    result = _finish(
        batch,
        method=method,
        sampling="uniform" if pi_given is None else "weighted",
        population=population,
        n_runs=int(keep.sum()),
        n_tasks=int(shared.size),
        level=level,
        estimand=f"pass@1[{first}] - pass@1[{second}]",
        bounds=(-1.0, 1.0),
        labels=y[lab & keep],
    )
    dropped = int(((group >= 0) & ~keep).sum())
    if dropped:
        extra = f"{dropped} run(s) of tasks only one treatment ran left out"
        note = f"{result.note}; {extra}" if result.note else extra
        result = PPIResult(**{**result.__dict__, "note": note})
    return result


def effective_labels(result: PPIResult) -> float:
    """How many labels the labels-only interval would need to be as narrow as this one.

    n_labels * (se_labels_only / se)^2, both standard errors estimated on the same labelled
    sample (widths scale as 1 / sqrt(n)); equal to n_labels when lambda is 0 (a judge at chance
    gets lambda near 0: zero gain), infinite when the interval is a point. A sample estimate,
    noisy with few labels; CALIBRATION_RESULTS.md gives simulated averages.
    """
    if result.se <= 0:
        return math.inf if result.se_labels_only > 0 else float(result.n_labels)
    return result.n_labels * (result.se_labels_only / result.se) ** 2


# --------------------------------------------------------------------------- label plans


def uncertainty_probs(
    scores: np.ndarray, budget: float | np.ndarray, mix: float, valid: np.ndarray | None = None
) -> np.ndarray:
    """Inclusion probabilities for active sampling: proportional to sqrt(f (1 - f)) (the
    judge's standard deviation if its scores are calibrated; Zrnic & Candes's optimal rule for
    a mean is proportional to the residual's conditional sd), mixed with uniform so every run
    has probability >= mix * budget / N, scaled to sum to ``budget``, capped at 1 (the excess
    spread over the others). Works row-wise on (R, N) arrays too (``budget`` then (R, 1)
    and ``valid`` masking padding out: a masked entry gets probability 0)."""
    import numpy as np

    f = np.atleast_2d(np.asarray(scores, float))
    ok = np.ones(f.shape, bool) if valid is None else np.atleast_2d(valid)
    u = np.where(ok, np.sqrt(np.clip(f * (1.0 - f), 0.0, None)), 0.0)
    total = u.sum(axis=1, keepdims=True)
    n = ok.sum(axis=1, keepdims=True)
    uniform = np.where(ok, 1.0 / n, 0.0)
    # Hard 0/1 verdicts carry no uncertainty: then the plan is uniform.
    share = np.where(total > 0, u / np.where(total > 0, total, 1.0), uniform)
    pi = budget * ((1.0 - mix) * share + mix * uniform)
    fixed = np.zeros(pi.shape, bool)
    for _ in range(f.shape[1]):
        over = (pi > 1.0) & ~fixed
        if not over.any():
            break
        # Cap at 1 and spread what was cut over the runs not yet capped, in proportion.
        fixed |= over
        free = np.where(fixed, 0.0, pi)
        free_total = free.sum(axis=1, keepdims=True)
        rest = budget - fixed.sum(axis=1, keepdims=True)
        pi = np.where(fixed, 1.0, free * rest / np.where(free_total > 0, free_total, 1.0))
    return np.minimum(pi, 1.0).reshape(np.shape(scores))


def plan_labels(
    scores: Sequence[float] | np.ndarray,
    budget: int,
    *,
    active: bool,
    seed: int,
    run_ids: Sequence[str] | None = None,
    mix: float = 0.2,
) -> LabelPlan:
    """Choose which runs people should label, at random, recording how.

    Uniform: a simple random sample of exactly ``budget`` runs (each with probability
    budget / N). Active: each run independently with probability from
    :func:`uncertainty_probs` (``budget`` runs expected, the count varies). Reproducible
    from ``seed``; :func:`plan_covers` checks labelled runs against the plan.
    """
    import numpy as np

    n = _n_runs(scores, "scores")
    f = _scores(scores, n)
    ids = _run_ids(run_ids, n)
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or not 1 <= budget <= n:
        raise InputError(f"budget {budget!r} is not a whole number in [1, {n}]", field="budget")
    if not 0 < mix <= 1:
        raise InputError(
            f"mix {mix!r} is not in (0, 1]",
            field="mix",
            hint="some uniform mixing keeps every probability above zero",
        )
    design = "active" if active else "uniform"
    probs = uncertainty_probs(f, float(budget), mix) if active else np.full(n, budget / n)
    chosen = _draw(design, probs, int(budget), int(seed))
    return LabelPlan(
        run_ids=tuple(ids),
        probs=tuple(float(p) for p in probs),
        chosen=tuple(ids[i] for i in chosen),
        seed=int(seed),
        budget=int(budget),
        design=design,
        mix=float(mix) if active else 0.0,
    )


def _draw(design: str, probs: np.ndarray, budget: int, seed: int) -> list[int]:
    """The plan's random choice (indices, ascending): the only place a plan uses the seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if design == "uniform":
        return sorted(int(i) for i in rng.permutation(probs.size)[:budget])
    return [int(i) for i in np.flatnonzero(rng.random(probs.size) < probs)]


def plan_covers(plan: LabelPlan, labelled_ids: Sequence[str] | set[str]) -> PlanCheck:
    """Whether ``labelled_ids`` are exactly the runs the plan drew.

    Invalid for PPI when a labelled run was not drawn (hand-picked), when a drawn run is left
    unlabelled (the missing labels may not be missing at random), or when re-drawing from the
    plan's seed and probabilities does not give the plan's own choice (an edited plan).
    """
    import numpy as np

    labelled = {str(r) for r in labelled_ids}
    chosen = set(plan.chosen)
    known = set(plan.run_ids)
    unknown = sorted(labelled - known)
    if unknown:
        raise InputError(
            f"{len(unknown)} labelled id(s) not in the plan, e.g. {unknown[0]!r}",
            field="labelled_ids",
            hint="check against the plan of this run set",
        )
    redraw = _draw(plan.design, np.asarray(plan.probs, float), plan.budget, plan.seed)
    reproducible = [plan.run_ids[i] for i in redraw] == list(plan.chosen)
    unplanned = tuple(sorted(labelled - chosen))
    unlabelled = tuple(sorted(chosen - labelled))
    reasons = []
    if not reproducible:
        reasons.append("the plan's choice is not what its seed and probabilities draw")
    if unplanned:
        reasons.append(
            f"{len(unplanned)} labelled run(s) were not drawn by the plan "
            "(hand-picked): not valid for PPI"
        )
    if unlabelled:
        reasons.append(
            f"{len(unlabelled)} drawn run(s) have no label: label them, or the "
            "sample is not the planned one"
        )
    return PlanCheck(
        valid=not reasons,
        unplanned=unplanned,
        unlabelled=unlabelled,
        reproducible=reproducible,
        reason="; ".join(reasons) or None,
    )


__all__ = [
    "Batch",
    "LabelPlan",
    "PPIResult",
    "PlanCheck",
    "active_mean",
    "effective_labels",
    "estimate_batch",
    "labels_only",
    "plan_covers",
    "plan_labels",
    "ppi_difference",
    "ppi_mean",
    "uncertainty_probs",
]
