"""pass@k and pass^k: unbiased per-task estimators and their macro averages (docs/metrics.md s.6).

For one task with ``n`` scored runs of which ``c`` succeeded:

- pass@k = 1 - C(n - c, k) / C(n, k): the chance that at least one of k runs drawn without
  replacement from the n succeeds (HumanEval's unbiased estimator);
- pass^k = C(c, k) / C(n, k): the chance that all k drawn runs succeed (tau-bench).

Both are undefined when k > n: a task with fewer runs than k says nothing about k runs, so it is
**omitted** from the macro average at that k and the omission is reported (never filled in with
``mean(p) ** k`` or a smaller k). The macro average is the plain mean over the tasks that have at
least k runs; its interval is the task-cluster bootstrap (tasks resampled, never runs: the runs
of one task are correlated).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from calibration.intervals import bootstrap_sums, percentile_interval

#: Fewer tasks than this get no macro interval: a bootstrap over one task is a point.
MIN_TASKS_FOR_INTERVAL = 2


def _check(n: int, c: int, k: int) -> None:
    if n < 0 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k for one task: 1 - C(n-c, k) / C(n, k); None when k > n."""
    _check(n, c, k)
    if k > n:
        return None
    # math.comb is exact (integers); one division at the end keeps it exact until then.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass^k for one task: C(c, k) / C(n, k); None when k > n."""
    _check(n, c, k)
    if k > n:
        return None
    return math.comb(c, k) / math.comb(n, k)


Estimator = Callable[[int, int, int], float | None]

#: The estimators by the name used in reports ("pass@k", "pass^k").
ESTIMATORS: Mapping[str, Estimator] = MappingProxyType({"pass@k": pass_at_k, "pass^k": pass_hat_k})


def metric_name(metric: str, k: int) -> str:
    """``("pass^k", 3)`` -> ``"pass^3"``."""
    return metric.removesuffix("k") + str(k)


@dataclass(frozen=True)
class TaskCount:
    """Scored runs ``n`` and successes ``c`` of one task (in one treatment)."""

    task_id: str
    n: int
    c: int


@dataclass(frozen=True)
class MacroEstimate:
    """A macro average over tasks, with the tasks it could not use."""

    metric: str
    k: int
    value: float | None
    n_tasks: int
    omitted: tuple[str, ...] = ()
    ci95: tuple[float, float] | None = None
    per_task: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """ "pass@3", "pass^2", ..."""
        return metric_name(self.metric, self.k)

    @property
    def note(self) -> str | None:
        """Why tasks were left out or the interval is missing, in words (None if neither)."""
        parts = []
        if self.omitted:
            parts.append(
                f"{len(self.omitted)} task(s) with fewer than {self.k} scored runs omitted "
                f"({self.name} is undefined for them)"
            )
        if self.value is None:
            parts.append(f"no task has {self.k} scored runs: {self.name} is undefined")
        elif self.ci95 is None:
            parts.append(f"no interval: fewer than {MIN_TASKS_FOR_INTERVAL} tasks")
        return "; ".join(parts) or None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "metric": self.name,
            "k": self.k,
            "value": self.value,
            "ci95": list(self.ci95) if self.ci95 else None,
            "method": "task_cluster_bootstrap" if self.ci95 else "none",
            "n_tasks": self.n_tasks,
            "n_omitted": len(self.omitted),
            "omitted": list(self.omitted),
            "note": self.note,
        }


def per_task(counts: Sequence[TaskCount], metric: str, k: int) -> dict[str, float]:
    """The estimator's value for every task with at least k runs (the others are absent)."""
    estimator = _estimator(metric)
    out: dict[str, float] = {}
    for t in counts:
        value = estimator(t.n, t.c, k)
        if value is not None:
            out[t.task_id] = value
    return out


def macro(
    counts: Sequence[TaskCount],
    metric: str,
    k: int,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> MacroEstimate:
    """Mean of the per-task estimator over tasks with >= k runs, with a task-bootstrap interval."""
    values = per_task(counts, metric, k)
    omitted = tuple(t.task_id for t in counts if t.task_id not in values)
    ordered = [values[t.task_id] for t in counts if t.task_id in values]
    mean = sum(ordered) / len(ordered) if ordered else None
    ci = mean_interval(ordered, n_boot=n_boot, seed=seed, level=level)
    return MacroEstimate(metric, k, mean, len(ordered), omitted, ci, values)


def mean_interval(
    values: Sequence[float], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Task-cluster bootstrap percentile interval of the mean of per-task values.

    Each value is one task (a cluster), so resampling values is resampling tasks. Used for macro
    figures and, with per-task differences, for paired comparisons. None with < 2 tasks.
    """
    if len(values) < MIN_TASKS_FOR_INTERVAL or n_boot <= 0:
        return None
    return _bootstrap_ratio([(float(v), 1.0) for v in values], n_boot, seed, level)


def _bootstrap_ratio(
    pairs: Sequence[tuple[float, float]], n_boot: int, seed: int, level: float
) -> tuple[float, float] | None:
    """Percentile interval of sum(num)/sum(den) over resampled clusters (one pair each)."""
    import numpy as np

    sums = bootstrap_sums(np.asarray(pairs, dtype=np.float64), n_boot=n_boot, seed=seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return percentile_interval(sums[:, 0] / sums[:, 1], level)


def pooled_interval(
    counts: Sequence[TaskCount], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Task-cluster bootstrap interval of the pooled rate sum(c) / sum(n)."""
    pairs = [(float(t.c), float(t.n)) for t in counts if t.n > 0]
    if len(pairs) < MIN_TASKS_FOR_INTERVAL or n_boot <= 0:
        return None
    return _bootstrap_ratio(pairs, n_boot, seed, level)


def _estimator(metric: str) -> Estimator:
    found = ESTIMATORS.get(metric)
    if found is None:
        raise ValueError(f"unknown metric {metric!r}; use one of {sorted(ESTIMATORS)}")
    return found
