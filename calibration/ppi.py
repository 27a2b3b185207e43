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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calibration.label_plans import (
    LabelPlan,
    PlanCheck,
    plan_covers,
    plan_labels,
    uncertainty_probs,
)
from calibration.ppi_batch import POPULATIONS, Batch, Population, estimate_batch
from calibration.ppi_inputs import (
    FAIL_VALUES,
    PASS_VALUES,
    checked_labels,
    checked_probs,
    checked_run_ids,
    checked_scores,
    codes,
    length_of,
    run_weights,
)
from judge.errors import InputError

if TYPE_CHECKING:
    import numpy as np

#: Fewer labelled units than this get a note: the t interval under-covers on so few binary
#: labels (measured on real judges in CALIBRATION_RESULTS.md: about 92-93% at 12 labels).
MIN_UNITS_FOR_TRUST = 30


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
    n = length_of(scores, "scores")
    f = checked_scores(scores, n)
    ids = checked_run_ids(run_ids, n)
    y, lab = checked_labels(labels, ids)
    if not lab.any():
        raise InputError(
            "no run is labelled",
            field="labels",
            hint="label a random subset of the runs (judge review plan)",
        )
    return _mean(
        f,
        y,
        lab,
        ids,
        task_ids,
        weights,
        checked_probs(probs, n),
        lam,
        population,
        level,
        method=None,
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
        else (n_runs if n_runs is not None else length_of(labels, "labels"))
    )
    ids = checked_run_ids(run_ids, n)
    y, lab = checked_labels(labels, ids)
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
        checked_probs(probs, n),
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


def _method(lam: float | None) -> str:
    """The method a lambda makes: tuned (PPI++), 0 (labels only) or given (PPI)."""
    return "ppi++" if lam is None else ("labels_only" if lam == 0 else "ppi")


def _estimate(
    f: np.ndarray,
    y: np.ndarray,
    lab: np.ndarray,
    w: np.ndarray,
    probs: np.ndarray | None,
    task: np.ndarray,
    n_tasks: int,
    **options: Any,
) -> Batch:
    """:func:`estimate_batch` on one sample; without inclusion probabilities the labels are a
    uniform sample (every run's probability: labelled runs / runs)."""
    import numpy as np

    n = f.size
    pi = probs if probs is not None else np.full(n, max(int(lab.sum()), 1) / n)
    return estimate_batch(
        f[None], y[None], lab[None], w[None], pi[None], task[None], n_tasks, **options
    )


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
    task, names = codes(task_ids, n, "task_ids")
    w = run_weights(weights, task, np.zeros(n, np.int64))
    if w.sum() <= 0:
        raise InputError("the weights sum to zero", field="weights")
    batch = _estimate(
        f, y, lab, w, probs, task, len(names), lam=lam, population=population, level=level
    )
    return _finish(
        batch,
        method=method if method is not None else _method(lam),
        sampling="uniform" if probs is None else "weighted",
        population=population,
        n_runs=n,
        n_tasks=len(names),
        level=level,
        estimand="pass@1",
        bounds=(0.0, 1.0),
        labels=y[lab & (w > 0)],
    )


@dataclass(frozen=True)
class _Pairing:
    """Two treatments' runs paired by task: which runs count (tasks both treatments ran)."""

    first: Any
    second: Any
    #: Task codes of the runs, and how many tasks there are in all.
    task: np.ndarray
    n_tasks: int
    #: 0: a run of ``first``; 1: of ``second``; -1: of another treatment.
    group: np.ndarray
    #: Task codes both treatments ran, and the runs on them.
    shared: np.ndarray
    keep: np.ndarray

    @property
    def dropped(self) -> int:
        """Runs of the two treatments on tasks only one of them ran."""
        return int(((self.group >= 0) & ~self.keep).sum())

    def check_labelled(self, lab: np.ndarray) -> None:
        """Both treatments need a labelled run on a shared task."""
        for g, name in ((0, self.first), (1, self.second)):
            if not (lab & self.keep & (self.group == g)).any():
                raise InputError(
                    f"no labelled run of treatment {name!r} on a shared task",
                    field="labels",
                    hint="labels must fall on both treatments' runs",
                )


def _pairing(
    treatments: Sequence[Any], task_ids: Sequence[Any], n: int, first: Any, second: Any
) -> _Pairing:
    """The two treatments compared (the two present, when neither is named) and their runs on
    the tasks both ran."""
    import numpy as np

    if length_of(treatments, "treatments") != n:
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
    task, names = codes(task_ids, n, "task_ids")
    group = np.full(n, -1, np.int64)
    group[[t == first for t in treatments]] = 0
    group[[t == second for t in treatments]] = 1
    shared = np.intersect1d(task[group == 0], task[group == 1])
    keep = (group >= 0) & np.isin(task, shared)
    if shared.size == 0:
        raise InputError("the two treatments share no task", field="task_ids")
    return _Pairing(first, second, task, len(names), group, shared, keep)


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
    n = length_of(scores, "scores")
    f = checked_scores(scores, n)
    ids = checked_run_ids(run_ids, n)
    y, lab = checked_labels(labels, ids)
    pairing = _pairing(treatments, task_ids, n, first, second)
    pairing.check_labelled(lab)
    pi_given = checked_probs(probs, n)
    groups = np.maximum(pairing.group, 0)
    w = np.where(pairing.keep, run_weights(None, pairing.task, groups), 0.0)
    batch = _estimate(
        f,
        y,
        lab,
        w,
        pi_given,
        pairing.task,
        pairing.n_tasks,
        groups=groups[None],
        signs=(1.0, -1.0),
        lam=lam,
        population=population,
        level=level,
        bounds=(-1.0, 1.0),
    )
    result = _finish(
        batch,
        method=_method(lam),
        sampling="uniform" if pi_given is None else "weighted",
        population=population,
        n_runs=int(pairing.keep.sum()),
        n_tasks=int(pairing.shared.size),
        level=level,
        estimand=f"pass@1[{pairing.first}] - pass@1[{pairing.second}]",
        bounds=(-1.0, 1.0),
        labels=y[lab & pairing.keep],
    )
    if pairing.dropped:
        extra = f"{pairing.dropped} run(s) of tasks only one treatment ran left out"
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


__all__ = [
    "FAIL_VALUES",
    "MIN_UNITS_FOR_TRUST",
    "PASS_VALUES",
    "POPULATIONS",
    "Batch",
    "LabelPlan",
    "PPIResult",
    "PlanCheck",
    "Population",
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
