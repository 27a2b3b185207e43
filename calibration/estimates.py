"""Figures with 95% intervals, computed in one bootstrap pass (docs/metrics.md section 5).

A metric registers each figure on a :class:`BootstrapBatch` over the rows of one summary (a
proportion, a ratio or any statistic of per-cluster sums) and gets a :class:`Pending` figure
back; :meth:`BootstrapBatch.run` draws the task-cluster resamples once and evaluates every
registered statistic on the same draws; each pending figure then becomes an :class:`Estimate`
(or, for a card, the summary's :class:`calibration.summary.IntervalEstimate`). A proportion whose
counted rows are independent (one row per task) gets the Wilson interval instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calibration.inputs import LABEL_CODE, RowArrays, to_arrays
from calibration.intervals import (
    ResampleMatrix,
    cluster_sums,
    compact_codes,
    percentile_interval,
    single_thread_blas,
    weight_blocks,
    wilson,
)
from calibration.records import VerdictRow
from calibration.summary import IntervalEstimate, Num
from judge.kinds import SCORING, ScoringKind

if TYPE_CHECKING:
    import numpy as np

Kind = ScoringKind
Rows = Sequence[VerdictRow] | RowArrays

PASS, FAIL = LABEL_CODE["pass"], LABEL_CODE["fail"]
A, B, TIE = LABEL_CODE["A"], LABEL_CODE["B"], LABEL_CODE["tie"]
OK, ABSTAIN, PARSE_ERROR, INFRA_ERROR = 0, 1, 2, 3
AB, BA = 1, 2
#: Bound on replicates x rows held at once by row-level bootstrap statistics.
ROW_CELLS = 4_000_000


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval. ``k``/``n`` are the counts behind a proportion."""

    value: float | None
    n: int
    k: float | None = None
    ci: tuple[float, float] | None = None
    #: "wilson" (independent rows), "cluster_bootstrap", "wilson_clusters" (a clustered
    #: proportion of 0 or 1: Wilson over the number of task clusters), or "none".
    method: str = "none"
    #: The Wilson interval of k/n, kept beside a bootstrap interval for proportions.
    wilson: tuple[float, float] | None = None

    def to_model(self) -> IntervalEstimate:
        """The summary's form: value, k, n, ci95, method (and wilson95 for proportions), with
        non-finite numbers as None."""
        wilson95 = {} if self.wilson is None else {"wilson95": _pair(self.wilson)}
        return IntervalEstimate(
            value=finite_number(self.value),
            k=finite_number(self.k),
            n=self.n,
            ci95=_pair(self.ci),
            method=self.method,
            **wilson95,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: value, k, n, ci95, method (and wilson95 for proportions)."""
        out: dict[str, Any] = self.to_model().model_dump(mode="json")
        return out


def _pair(ci: tuple[float, float] | None) -> list[Num | None] | None:
    return [finite_number(ci[0]), finite_number(ci[1])] if ci else None


def finite_number(x: float | None) -> float | int | None:
    """JSON-safe number: ints stay ints, non-finite floats become None."""
    if x is None or isinstance(x, int):
        return x
    xf = float(x)
    return xf if math.isfinite(xf) else None


@dataclass
class Pending:
    """An estimate whose bootstrap interval is computed later, in one pass with the others."""

    value: float | None
    n: int
    k: float | None
    handle: int
    proportion: bool
    independent: bool
    #: Distinct task clusters among the counted rows (proportions only).
    clusters: int = 0
    #: The interval's method when it is not the plain one.
    method: str | None = None


class BootstrapBatch:
    """Rows of one summary, their task clusters, and a batch of bootstrap statistics.

    Statistics register per-cluster sums (columns); :meth:`run` draws the resamples once and
    evaluates all of them on the same draws; :meth:`resolve` turns pending figures into
    Estimates, :meth:`figures` a block of them into the summary's IntervalEstimates.
    """

    def __init__(self, a: RowArrays, n_boot: int, seed: int, level: float = 0.95) -> None:

        codes, n_clusters = compact_codes(a.cluster)
        self.a = a
        self.cluster = codes
        self.n_clusters = n_clusters
        self.n_boot = n_boot
        self.seed = seed
        self.level = level
        self._columns: list[np.ndarray] = []
        self._stats: list[tuple[slice, Callable[[np.ndarray], np.ndarray]]] = []
        self._block_stats: dict[int, tuple[Callable[[np.ndarray], np.ndarray], int]] = {}
        self._width = 0
        self._intervals: dict[int, tuple[float, float] | None] = {}

    def add(self, per_cluster: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> int:
        """Register a statistic of resampled column sums; returns its handle."""
        k = per_cluster.shape[1]
        self._columns.append(per_cluster)
        self._stats.append((slice(self._width, self._width + k), fn))
        self._width += k
        return len(self._stats) - 1

    def add_block(self, fn: Callable[[np.ndarray], np.ndarray], n_rows: int) -> int:
        """Register a statistic of the cluster weights themselves (b x n_clusters -> b values),
        for statistics that are not sums (AUROC) and expand them to ``n_rows`` rows; it is
        fed few enough replicates at a time to keep b x n_rows bounded. Returns a handle."""
        handle = -1 - len(self._block_stats)
        self._block_stats[handle] = (fn, max(1, ROW_CELLS // max(n_rows, 1)))
        return handle

    def sums(self, values: np.ndarray, cluster: np.ndarray | None = None) -> np.ndarray:
        """Per-cluster sums of row (or unit) values, in this context's cluster space."""
        return cluster_sums(values, self.cluster if cluster is None else cluster, self.n_clusters)

    def proportion(
        self, hit: np.ndarray, counted: np.ndarray, cluster: np.ndarray | None = None
    ) -> Pending:
        """sum(hit)/sum(counted) over rows (or units with ``cluster`` codes)."""
        import numpy as np

        cl = self.cluster if cluster is None else cluster
        counted = counted.astype(bool)
        n = int(counted.sum())
        k = int((hit.astype(bool) & counted).sum())
        per = self.sums(np.column_stack([hit & counted, counted]).astype(np.float64), cl)
        handle = self.add(per, _ratio)
        n_cl = int(np.count_nonzero(np.bincount(cl[counted], minlength=self.n_clusters)))
        return Pending(k / n if n else None, n, k, handle, True, n_cl == n, n_cl)

    def ratio(self, num: np.ndarray, den: np.ndarray, cluster: np.ndarray | None = None) -> Pending:
        """sum(num)/sum(den) (not a proportion of counts: always the bootstrap interval)."""
        import numpy as np

        per = self.sums(np.column_stack([num, den]).astype(np.float64), cluster)
        s_num, s_den = float(np.sum(num)), float(np.sum(den))
        handle = self.add(per, _ratio)
        value = s_num / s_den if s_den else None
        return Pending(value, int(np.count_nonzero(den)), s_num, handle, False, False)

    def custom(
        self,
        value: float | None,
        n: int,
        per_cluster: np.ndarray,
        fn: Callable[[np.ndarray], np.ndarray],
    ) -> Pending:
        """Any statistic of per-cluster sums (kappa, ECE, Brier)."""
        return Pending(value, n, None, self.add(per_cluster, fn), False, False)

    def run(self) -> None:
        """Draw the resamples once and evaluate every registered statistic on them."""
        import numpy as np

        if (not self._stats and not self._block_stats) or self.n_boot <= 0:
            return
        if self.n_clusters == 0:
            return
        matrix = ResampleMatrix(self._columns) if self._columns else None
        sums: list[np.ndarray] = []
        blocks: dict[int, list[np.ndarray]] = {h: [] for h in self._block_stats}
        with single_thread_blas():
            for w in weight_blocks(self.n_clusters, self.n_boot, self.seed):
                if matrix is not None:
                    sums.append(matrix.sums(w))
                for h, (fn, step) in self._block_stats.items():
                    for start in range(0, w.shape[0], step):
                        part = fn(w[start : start + step])
                        blocks[h].append(np.asarray(part, dtype=np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            if matrix is not None:
                reps = np.vstack(sums)
                for handle, (cols, fn) in enumerate(self._stats):
                    self._intervals[handle] = percentile_interval(fn(reps[:, cols]), self.level)
            for h, parts in blocks.items():
                self._intervals[h] = percentile_interval(np.concatenate(parts), self.level)
        self._columns, self._stats, self._block_stats = [], [], {}

    def estimate(self, p: Pending) -> Estimate:
        """The final Estimate of a pending figure (after :meth:`run`)."""
        if p.value is None:
            return Estimate(None, p.n, p.k)
        if p.proportion:
            k, n = int(p.k or 0), p.n
            w = wilson(k, n, self.level)
            boot = self._intervals.get(p.handle)
            if p.independent or boot is None:
                return Estimate(p.value, n, k, w, "wilson", w)
            if k in (0, n):
                # Every resample of an all-zero (or all-one) sample is the same, so the
                # bootstrap interval collapses to a point. Wilson over the number of task
                # clusters (the independent units) gives an honest bound instead.
                wc = wilson(0 if k == 0 else p.clusters, p.clusters, self.level)
                return Estimate(p.value, n, k, wc, "wilson_clusters", w)
            return Estimate(p.value, n, k, boot, "cluster_bootstrap", w)
        boot = self._intervals.get(p.handle)
        method = (p.method or "cluster_bootstrap") if boot else "none"
        return Estimate(p.value, p.n, p.k, boot, method)

    def resolve(self, obj: Any) -> Any:
        """Replace every pending figure inside nested dicts/lists with an Estimate."""
        if isinstance(obj, Pending):
            return self.estimate(obj)
        if isinstance(obj, dict):
            return {k: self.resolve(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.resolve(v) for v in obj]
        return obj

    def finish(self, obj: Any) -> Any:
        """run() then resolve()."""
        self.run()
        return self.resolve(obj)

    def figure(self, value: Pending | Estimate) -> IntervalEstimate:
        """A figure of the summary (after :meth:`run`)."""
        return (self.estimate(value) if isinstance(value, Pending) else value).to_model()

    def figures(self, plan: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of a summary block (after :meth:`run`): each pending figure (or Estimate)
        of ``plan`` as an IntervalEstimate, every other value as it is."""
        return {
            key: self.figure(value) if isinstance(value, Pending | Estimate) else value
            for key, value in plan.items()
        }


def label_codes(kind: str) -> tuple[int, ...]:
    """The integer codes (``LABEL_CODE``) of a scoring kind's labels, positive first."""
    return tuple(LABEL_CODE[label] for label in SCORING[kind].labels)


def _ratio(s: np.ndarray) -> np.ndarray:
    return s[:, 0] / s[:, 1]


def bootstrap_batch(rows: Rows, n_boot: int, seed: int) -> BootstrapBatch:
    """A batch over ``rows`` (or their columnar view)."""
    return BootstrapBatch(to_arrays(rows), n_boot, seed)
