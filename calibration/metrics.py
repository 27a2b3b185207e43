"""Calibration metrics with intervals (docs/CALIBRATION.md sections 1-3 and 5).

Every figure is computed from :class:`VerdictRow` values (or their columnar view,
:class:`calibration.inputs.RowArrays`) and comes with a 95% interval:
- a proportion whose counted rows are independent (one row per task) gets the Wilson interval;
- anything else (several rows per task: both orders, repeated samples, trials of one task; and
  every statistic that is not a proportion: kappa, ECE, Brier, AUROC, ...) gets the
  task-cluster bootstrap percentile interval (task ids resampled, not rows).

Counting rules (the same everywhere):
- only status ``ok`` rows enter a confusion matrix or an accuracy; ``abstain``,
  ``parse_error`` and ``infra_error`` are rates over all attempted rows, never pass or fail;
- ``accuracy_attempted`` (pairwise) is the exception made to match published figures: correct
  verdicts over every row that has gold, a failed row counting as not correct;
- pairwise rows count one verdict each (both orders, every sample) unless a metric says it
  aggregates (pair score, order flip, position consistency work on (judge, item, sample) pairs);
- a pairwise verdict ``tie`` against gold A or B is wrong; gold ``tie`` is matched only by tie.

:func:`summarize` returns all of it as one JSON-serialisable dict (for cards and reports).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calibration.inputs import LABEL_CODE, RowArrays, iter_slice_values, to_arrays
from calibration.intervals import (
    cluster_sums,
    compact_codes,
    percentile_interval,
    single_thread_blas,
    weight_blocks,
    wilson,
)
from calibration.records import VerdictRow
from judge.kinds import ALL_LABELS, SCORING, ScoringKind

if TYPE_CHECKING:
    import numpy as np

Kind = ScoringKind
Rows = Sequence[VerdictRow] | RowArrays

PASS, FAIL = LABEL_CODE["pass"], LABEL_CODE["fail"]
A, B, TIE = LABEL_CODE["A"], LABEL_CODE["B"], LABEL_CODE["tie"]
OK, ABSTAIN, PARSE_ERROR, INFRA_ERROR = 0, 1, 2, 3
AB, BA = 1, 2
N_BINS = 10
#: Bound on replicates x rows held at once by row-level bootstrap statistics.
_ROW_CELLS = 4_000_000
#: Above this many (rows x replicates), the AUROC interval uses the linearised bootstrap.
_EXACT_AUROC_CELLS = 200_000_000


# --------------------------------------------------------------------------- estimates


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

    def to_dict(self) -> dict[str, Any]:
        """JSON form: value, k, n, ci95, method (and wilson95 for proportions)."""
        out: dict[str, Any] = {
            "value": _num(self.value),
            "k": _num(self.k),
            "n": self.n,
            "ci95": [_num(self.ci[0]), _num(self.ci[1])] if self.ci else None,
            "method": self.method,
        }
        if self.wilson is not None:
            out["wilson95"] = [_num(self.wilson[0]), _num(self.wilson[1])]
        return out


def _num(x: float | None) -> float | int | None:
    """JSON-safe number: ints stay ints, non-finite floats become None."""
    if x is None or isinstance(x, int):
        return x
    xf = float(x)
    return xf if math.isfinite(xf) else None


@dataclass
class _Pending:
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


class _Context:
    """Rows of one summary, their task clusters, and a batch of bootstrap statistics.

    Statistics register per-cluster sums (columns); :meth:`run` draws the resamples once and
    evaluates all of them on the same draws; :meth:`resolve` turns pending figures into
    Estimates.
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
        self._block_stats[handle] = (fn, max(1, _ROW_CELLS // max(n_rows, 1)))
        return handle

    def sums(self, values: np.ndarray, cluster: np.ndarray | None = None) -> np.ndarray:
        """Per-cluster sums of row (or unit) values, in this context's cluster space."""
        return cluster_sums(values, self.cluster if cluster is None else cluster, self.n_clusters)

    def proportion(
        self, hit: np.ndarray, counted: np.ndarray, cluster: np.ndarray | None = None
    ) -> _Pending:
        """sum(hit)/sum(counted) over rows (or units with ``cluster`` codes)."""
        import numpy as np

        cl = self.cluster if cluster is None else cluster
        counted = counted.astype(bool)
        n = int(counted.sum())
        k = int((hit.astype(bool) & counted).sum())
        per = self.sums(np.column_stack([hit & counted, counted]).astype(np.float64), cl)
        handle = self.add(per, _ratio)
        n_cl = int(np.count_nonzero(np.bincount(cl[counted], minlength=self.n_clusters)))
        return _Pending(k / n if n else None, n, k, handle, True, n_cl == n, n_cl)

    def ratio(
        self, num: np.ndarray, den: np.ndarray, cluster: np.ndarray | None = None
    ) -> _Pending:
        """sum(num)/sum(den) (not a proportion of counts: always the bootstrap interval)."""
        import numpy as np

        per = self.sums(np.column_stack([num, den]).astype(np.float64), cluster)
        s_num, s_den = float(np.sum(num)), float(np.sum(den))
        handle = self.add(per, _ratio)
        value = s_num / s_den if s_den else None
        return _Pending(value, int(np.count_nonzero(den)), s_num, handle, False, False)

    def custom(
        self,
        value: float | None,
        n: int,
        per_cluster: np.ndarray,
        fn: Callable[[np.ndarray], np.ndarray],
    ) -> _Pending:
        """Any statistic of per-cluster sums (kappa, ECE, Brier)."""
        return _Pending(value, n, None, self.add(per_cluster, fn), False, False)

    def run(self) -> None:
        """Draw the resamples once and evaluate every registered statistic on them."""
        import numpy as np

        if (not self._stats and not self._block_stats) or self.n_boot <= 0:
            return
        if self.n_clusters == 0:
            return
        matrix = None
        if self._columns:
            # float32, column-major: what the weights' product wants (see blas_matrix)
            matrix = np.empty((self.n_clusters, self._width), dtype=np.float32, order="F")
            at = 0
            for part in self._columns:
                matrix[:, at : at + part.shape[1]] = part
                at += part.shape[1]
        sums: list[np.ndarray] = []
        blocks: dict[int, list[np.ndarray]] = {h: [] for h in self._block_stats}
        with single_thread_blas():
            for w in weight_blocks(self.n_clusters, self.n_boot, self.seed):
                if matrix is not None:
                    sums.append(w @ matrix)
                for h, (fn, step) in self._block_stats.items():
                    for start in range(0, w.shape[0], step):
                        part = fn(w[start : start + step])
                        blocks[h].append(np.asarray(part, dtype=np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            if matrix is not None:
                reps = np.vstack(sums).astype(np.float64)
                for handle, (cols, fn) in enumerate(self._stats):
                    self._intervals[handle] = percentile_interval(fn(reps[:, cols]), self.level)
            for h, parts in blocks.items():
                self._intervals[h] = percentile_interval(np.concatenate(parts), self.level)
        self._columns, self._stats, self._block_stats = [], [], {}

    def estimate(self, p: _Pending) -> Estimate:
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
        if isinstance(obj, _Pending):
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


def label_codes(kind: str) -> tuple[int, ...]:
    """The integer codes (``LABEL_CODE``) of a scoring kind's labels, positive first."""
    return tuple(LABEL_CODE[label] for label in SCORING[kind].labels)


def _ratio(s: np.ndarray) -> np.ndarray:
    return s[:, 0] / s[:, 1]


def _context(rows: Rows, n_boot: int, seed: int) -> _Context:
    return _Context(to_arrays(rows), n_boot, seed)


# --------------------------------------------------------------------------- kappa


def kappa_from_confusion(cm: np.ndarray) -> np.ndarray:
    """Cohen's kappa of confusion matrices (..., K, K) (rows: rater 1, cols: rater 2).

    kappa = (p_o - p_e) / (1 - p_e), p_o the diagonal share, p_e the chance agreement from
    the two raters' marginals. NaN where undefined (no rows, or both raters constant on the
    same label).
    """
    import numpy as np

    cm = np.asarray(cm, dtype=np.float64)
    total = cm.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(cm, axis1=-2, axis2=-1) / total
        pe = (cm.sum(axis=-1) * cm.sum(axis=-2)).sum(axis=-1) / total**2
        out = (po - pe) / (1.0 - pe)
    return np.where(np.isclose(pe, 1.0), np.nan, out)


def _confusion_columns(truth: np.ndarray, pred: np.ndarray, labels: Sequence[int]) -> np.ndarray:
    """One-hot (truth, pred) cell indicator per row: (n_rows, K*K)."""
    import numpy as np

    k = len(labels)
    ti = np.full(truth.shape, -1, dtype=np.int64)
    pi = np.full(pred.shape, -1, dtype=np.int64)
    for i, lab in enumerate(labels):
        ti[truth == lab] = i
        pi[pred == lab] = i
    cells = np.zeros((truth.shape[0], k * k), dtype=np.float64)
    valid = (ti >= 0) & (pi >= 0)
    cells[np.nonzero(valid)[0], (ti * k + pi)[valid]] = 1.0
    return cells


def _kappa_pending(
    ctx: _Context, truth: np.ndarray, pred: np.ndarray, labels: Sequence[int], mask: np.ndarray
) -> _Pending:
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    k = len(labels)
    n = int(mask.sum())
    value: float | None = None
    if n:
        with warnings.catch_warnings():
            # sklearn warns (and returns nan) when kappa is undefined; we report None.
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            v = float(cohen_kappa_score(truth[mask], pred[mask], labels=list(labels)))
        value = v if math.isfinite(v) else None
    cells = _confusion_columns(truth, pred, labels) * mask[:, None]

    def fn(s: np.ndarray) -> np.ndarray:
        return kappa_from_confusion(s.reshape(-1, k, k))

    return ctx.custom(value, n, ctx.sums(cells), fn)


# --------------------------------------------------------------------------- status and binary


def _status_rates(ctx: _Context) -> dict[str, Any]:
    import numpy as np

    a = ctx.a
    every = np.ones(a.n, dtype=bool)
    return {
        "abstention_rate": ctx.proportion(a.status == ABSTAIN, every),
        "parse_error_rate": ctx.proportion(a.status == PARSE_ERROR, every),
        "infra_error_rate": ctx.proportion(a.status == INFRA_ERROR, every),
    }


def status_counts(rows: Rows) -> dict[str, int]:
    """Rows per status (ok, abstain, parse_error, infra_error)."""
    import numpy as np

    a = to_arrays(rows)
    counts = np.bincount(a.status.astype(np.int64), minlength=4)
    return dict(zip(("ok", "abstain", "parse_error", "infra_error"), map(int, counts), strict=True))


def status_rates(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Estimate]:
    """Abstention, parse-error and infra-error rates over all attempted rows."""
    ctx = _context(rows, n_boot, seed)
    result: dict[str, Estimate] = ctx.finish(_status_rates(ctx))
    return result


def _binary_mask(a: RowArrays) -> np.ndarray:
    ok = a.status == OK
    return ok & ((a.gold == PASS) | (a.gold == FAIL)) & ((a.verdict == PASS) | (a.verdict == FAIL))


def confusion(rows: Rows) -> dict[str, int]:
    """Binary confusion matrix with pass as the positive class (status ok rows with gold).

    tp: verdict pass, gold pass; fp: verdict pass, gold fail; tn: fail/fail; fn: fail/pass.
    """
    from sklearn.metrics import confusion_matrix

    a = to_arrays(rows)
    m = _binary_mask(a)
    cm = confusion_matrix(a.gold[m], a.verdict[m], labels=[PASS, FAIL])
    # sklearn: rows are truth, columns predictions, in the order of `labels`.
    return {
        "tp": int(cm[0, 0]),
        "fn": int(cm[0, 1]),
        "fp": int(cm[1, 0]),
        "tn": int(cm[1, 1]),
    }


def _binary(ctx: _Context) -> dict[str, Any]:
    a = ctx.a
    m = _binary_mask(a)
    v_pass, g_pass = a.verdict == PASS, a.gold == PASS
    v_fail, g_fail = a.verdict == FAIL, a.gold == FAIL
    tp, fp = m & v_pass & g_pass, m & v_pass & g_fail
    tn, fn = m & v_fail & g_fail, m & v_fail & g_pass
    return {
        "false_accept_rate": ctx.proportion(fp, fp | tn),
        "false_reject_rate": ctx.proportion(fn, fn | tp),
        "precision": ctx.proportion(tp, tp | fp),
        "recall": ctx.proportion(tp, tp | fn),
        "accuracy": ctx.proportion(tp | tn, m),
        "kappa": _kappa_pending(ctx, a.gold, a.verdict, (PASS, FAIL), m),
    }


def binary_metrics(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Estimate]:
    """FAR, FRR, precision and recall of pass, accuracy and Cohen's kappa vs gold."""
    ctx = _context(rows, n_boot, seed)
    result: dict[str, Estimate] = ctx.finish(_binary(ctx))
    return result


# --------------------------------------------------------------------------- pairwise


def _pairwise(ctx: _Context) -> dict[str, Any]:

    a = ctx.a
    labelled = (a.gold == A) | (a.gold == B) | (a.gold == TIE)
    decided = (a.verdict == A) | (a.verdict == B) | (a.verdict == TIE)
    ok = a.status == OK
    m = ok & labelled & decided
    correct = m & (a.verdict == a.gold)
    return {
        "accuracy": ctx.proportion(correct, m),
        "accuracy_attempted": ctx.proportion(correct, labelled),
        "tie_rate": ctx.proportion(ok & (a.verdict == TIE), ok & decided),
        "kappa": _kappa_pending(ctx, a.gold, a.verdict, (A, B, TIE), m),
        "confusion": _pairwise_confusion(a, m),
    }


def _pairwise_confusion(a: RowArrays, m: np.ndarray) -> dict[str, Any]:
    import numpy as np

    labels = SCORING["pairwise"].labels
    codes = label_codes("pairwise")
    k = len(codes)
    cm = _confusion_columns(a.gold[m], a.verdict[m], codes).sum(axis=0).reshape(k, k)
    return {
        "labels": list(labels),
        "rows": "gold",
        "columns": "verdict",
        "matrix": np.asarray(cm, dtype=np.int64).tolist(),
    }


def pairwise_metrics(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Accuracy vs gold (ok rows), accuracy over attempted rows, tie rate, kappa, confusion."""
    ctx = _context(rows, n_boot, seed)
    result: dict[str, Any] = ctx.finish(_pairwise(ctx))
    return result


@dataclass(frozen=True)
class _Pairs:
    """Rows judged in both orders, matched on (judge, item, sample)."""

    ab: np.ndarray  # row index of the AB row of each pair
    ba: np.ndarray  # row index of the BA row
    duplicates: int  # rows dropped because (judge, item, order, sample) repeated
    unpaired: int  # AB/BA rows whose other order is missing


def _pairs(a: RowArrays) -> _Pairs:
    import numpy as np

    if a.n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Pairs(empty, empty, 0, 0)
    _, sample = np.unique(a.sample, return_inverse=True)
    sample = sample.reshape(-1).astype(np.int64)
    n_s = int(sample.max()) + 1
    key = (a.judge * len(a.items) + a.item) * n_s + sample
    idx_ab = np.nonzero(a.order == AB)[0]
    idx_ba = np.nonzero(a.order == BA)[0]
    k_ab, first_ab = np.unique(key[idx_ab], return_index=True)
    k_ba, first_ba = np.unique(key[idx_ba], return_index=True)
    duplicates = (idx_ab.size - k_ab.size) + (idx_ba.size - k_ba.size)
    _, i_ab, i_ba = np.intersect1d(k_ab, k_ba, assume_unique=True, return_indices=True)
    ab = idx_ab[first_ab[i_ab]]
    ba = idx_ba[first_ba[i_ba]]
    unpaired = (k_ab.size - ab.size) + (k_ba.size - ba.size)
    return _Pairs(ab, ba, int(duplicates), int(unpaired))


def _row_score(a: RowArrays, rows: np.ndarray) -> np.ndarray:
    """JudgeBench per-judgment score: +1 correct, -1 the other candidate, 0 tie or failure."""
    import numpy as np

    v, g = a.verdict[rows], a.gold[rows]
    ok = a.status[rows] == OK
    other = np.where(g == A, B, np.where(g == B, A, -2))
    return np.where(ok & (v == g), 1, np.where(ok & (v == other), -1, 0))


def _pair_score(ctx: _Context, pairs: _Pairs) -> dict[str, Any] | None:
    import numpy as np

    a = ctx.a
    if pairs.ab.size == 0:
        return None
    gold = a.gold[pairs.ab]
    scored = (gold == A) | (gold == B)  # JudgeBench labels are never ties
    total = _row_score(a, pairs.ab) + _row_score(a, pairs.ba)
    cl = ctx.cluster[pairs.ab]
    return {
        "n_pairs": int(scored.sum()),
        "correct": int((scored & (total > 0)).sum()),
        "wrong": int((scored & (total < 0)).sum()),
        "tie": int((scored & (total == 0)).sum()),
        "score": ctx.proportion(scored & (total > 0), scored, cl),
        "both_correct": ctx.proportion(
            scored & (_row_score(a, pairs.ab) == 1) & (_row_score(a, pairs.ba) == 1), scored, cl
        ),
        "gold_tie_pairs_skipped": int(np.count_nonzero(gold == TIE)),
    }


def pair_score(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Any] | None:
    """JudgeBench pair score: each (judge, item, sample) judged in both orders; +1 per correct
    verdict, -1 per wrong one, 0 for tie or failure; a pair is correct when the sum is > 0.
    Pairs whose gold is a tie are skipped. None when no item was judged in both orders."""
    ctx = _context(rows, n_boot, seed)
    result: dict[str, Any] | None = ctx.finish(_pair_score(ctx, _pairs(ctx.a)))
    return result


def _position_choice(a: RowArrays, rows: np.ndarray) -> np.ndarray:
    """The choice in the frame the judge saw: A = first shown, B = second, tie; -1 none."""
    import numpy as np

    v = a.verdict[rows]
    swapped = np.where(v == A, B, np.where(v == B, A, v))
    derived = np.where(a.order[rows] == BA, swapped, v)
    pos = a.verdict_pos[rows]
    choice = np.where(pos >= 0, pos, derived)
    return np.where(a.status[rows] == OK, choice, -1)


def _position(ctx: _Context, pairs: _Pairs) -> dict[str, Any] | None:
    import numpy as np

    a = ctx.a
    if pairs.ab.size == 0:
        return None
    c1 = _position_choice(a, pairs.ab)
    c2 = _position_choice(a, pairs.ba)
    valid = (c1 >= A) & (c2 >= A)  # both orders gave a verdict (A, B or tie)
    consistent = valid & (
        ((c1 == A) & (c2 == B)) | ((c1 == B) & (c2 == A)) | ((c1 == TIE) & (c2 == TIE))
    )
    primacy = valid & (
        ((c1 == A) & (c2 == A)) | ((c1 == A) & (c2 == TIE)) | ((c1 == TIE) & (c2 == A))
    )
    recency = valid & (
        ((c1 == B) & (c2 == B)) | ((c1 == B) & (c2 == TIE)) | ((c1 == TIE) & (c2 == B))
    )
    flip = valid & (a.verdict[pairs.ab] != a.verdict[pairs.ba])
    one_failed = (c1 >= A) != (c2 >= A)
    n_prim, n_rec = int(primacy.sum()), int(recency.sum())
    n_pairs = int(pairs.ab.size)
    # Shi et al.: raw = recency * recency% - primacy * primacy%, rescaled by the number of
    # comparisons (all pairs, failed ones included, as in the source code) to [-1, 1].
    raw = 0.0
    if n_prim + n_rec:
        raw = (n_rec * n_rec - n_prim * n_prim) / (n_rec + n_prim)
    cl = ctx.cluster[pairs.ab]
    # P(prefer first shown): over every ok row shown in an order, ties left out.
    rows = np.nonzero(((a.order == AB) | (a.order == BA)) & (a.status == OK))[0]
    choice = _position_choice(a, rows)
    decisive = (choice == A) | (choice == B)
    first = np.zeros(a.n, dtype=bool)
    counted = np.zeros(a.n, dtype=bool)
    first[rows] = choice == A
    counted[rows] = decisive
    return {
        "n_pairs": n_pairs,
        "n_complete": int(valid.sum()),
        "n_with_failure": int(n_pairs - valid.sum()),
        "unpaired_rows": pairs.unpaired,
        "duplicate_rows": pairs.duplicates,
        "consistent": int(consistent.sum()),
        "primacy": n_prim,
        "recency": n_rec,
        "order_flip_rate": ctx.proportion(flip, valid, cl),
        # JudgeBench's count: a pair is inconsistent when the two decisions differ, a failed
        # order included (it differs from a verdict); over every pair.
        "inconsistent_incl_failures": ctx.proportion(
            flip | one_failed, np.ones(n_pairs, dtype=bool), cl
        ),
        "position_consistency": ctx.proportion(consistent, valid, cl),
        "preference_fairness": raw / n_pairs if n_pairs else None,
        "p_prefer_first": ctx.proportion(first, counted),
    }


def position_metrics(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Any] | None:
    """Order flip, position consistency (Shi et al.) with primacy/recency counts, preference
    fairness (positive = recency bias, negative = primacy bias) and P(prefer first shown).
    None when no item was judged in both orders."""
    ctx = _context(rows, n_boot, seed)
    result: dict[str, Any] | None = ctx.finish(_position(ctx, _pairs(ctx.a)))
    return result


def _length_bias(ctx: _Context) -> _Pending | None:
    import numpy as np

    a = ctx.a
    known = np.isfinite(a.len_a) & np.isfinite(a.len_b) & (a.len_a != a.len_b)
    counted = known & (a.status == OK) & ((a.verdict == A) | (a.verdict == B))
    if not counted.any():
        return None
    longer_is_a = a.len_a > a.len_b
    chose_longer = counted & ((a.verdict == A) == longer_is_a)
    return ctx.proportion(chose_longer, counted)


def p_prefer_longer(rows: Rows, n_boot: int = 1000, seed: int = 0) -> Estimate | None:
    """Share of decisive verdicts (A or B) that chose the longer candidate, where the lengths
    are known (``slices.length_A``/``length_B``, added by join_gold) and differ."""
    ctx = _context(rows, n_boot, seed)
    result: Estimate | None = ctx.finish(_length_bias(ctx))
    return result


# --------------------------------------------------------------------------- repetition


def _repetition(ctx: _Context) -> _Pending | None:
    import numpy as np

    a = ctx.a
    if a.n == 0:
        return None
    key = (a.judge * len(a.items) + a.item) * 3 + a.order
    units, unit = np.unique(key, return_inverse=True)
    unit = unit.reshape(-1)
    n_units = units.size
    reps = np.bincount(unit, minlength=n_units)
    n_labels = len(ALL_LABELS)
    ok = (a.status == OK) & (a.verdict >= 0)
    votes = np.bincount(
        unit[ok] * n_labels + a.verdict[ok].astype(np.int64), minlength=n_units * n_labels
    ).reshape(n_units, n_labels)
    repeated = reps > 1
    if not repeated.any():
        return None
    # A failed repetition is never part of the majority (as in Position-Bias-Analyzer).
    rs = votes.max(axis=1) / reps
    unit_cluster = np.zeros(n_units, dtype=np.int64)
    unit_cluster[unit] = ctx.cluster
    return ctx.ratio(rs[repeated], np.ones(int(repeated.sum())), unit_cluster[repeated])


def repetition_stability(rows: Rows, n_boot: int = 1000, seed: int = 0) -> Estimate | None:
    """RS: mean over (judge, item, order) units with several samples of
    (count of the majority verdict / repetitions). None when nothing was repeated."""
    ctx = _context(rows, n_boot, seed)
    result: Estimate | None = ctx.finish(_repetition(ctx))
    return result


# --------------------------------------------------------------------------- probabilities


def ece(
    prob: Sequence[float] | np.ndarray, outcome: Sequence[int] | np.ndarray, n_bins: int = N_BINS
) -> float:
    """Expected calibration error of P(positive): sum over equal-width bins of
    (bin share) x |mean probability - share positive| = sum |sum p - sum y| / n."""
    import numpy as np

    p, y = np.asarray(prob, dtype=np.float64), np.asarray(outcome, dtype=np.float64)
    if p.size == 0:
        return float("nan")
    b = _bins(p, n_bins)
    sp = np.bincount(b, weights=p, minlength=n_bins)
    sy = np.bincount(b, weights=y, minlength=n_bins)
    return float(np.abs(sp - sy).sum() / p.size)


def _bins(p: np.ndarray, n_bins: int) -> np.ndarray:
    import numpy as np

    # Bin i holds [i/n, (i+1)/n); 1.0 goes to the last bin.
    return np.minimum((p * n_bins).astype(np.int64), n_bins - 1)


def brier(prob: Sequence[float] | np.ndarray, outcome: Sequence[int] | np.ndarray) -> float:
    """Brier score: mean squared difference between P(positive) and the 0/1 outcome."""
    from sklearn.metrics import brier_score_loss

    return float(brier_score_loss(outcome, prob))


def auroc(prob: Sequence[float] | np.ndarray, outcome: Sequence[int] | np.ndarray) -> float | None:
    """Area under the ROC curve of P(positive) (None when only one class is present)."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    y = np.asarray(outcome)
    if y.size == 0 or y.min() == y.max():
        return None
    return float(roc_auc_score(y, prob))


def weighted_auroc(prob: np.ndarray, outcome: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC under each row of ``weights`` (b x n): the Mann-Whitney statistic with ties
    counted half, vectorised over bootstrap replicates."""
    import numpy as np

    prob = np.asarray(prob, dtype=np.float64)
    pos = np.asarray(outcome).astype(bool)
    w = np.asarray(weights, dtype=np.float64)
    return _auroc_from_weights(_AurocPlan(prob, pos), w[:, pos], w[:, ~pos])


class _AurocPlan:
    """Sorting done once for every replicate: the negatives' clusters in score order, and for
    each positive the number of negatives scoring below it and at most its score."""

    def __init__(
        self, prob: np.ndarray, pos: np.ndarray, cluster: np.ndarray | None = None
    ) -> None:
        import numpy as np

        neg_scores = prob[~pos]
        self.neg_order = np.argsort(neg_scores, kind="stable")
        sorted_neg = neg_scores[self.neg_order]
        self.below = np.searchsorted(sorted_neg, prob[pos], side="left")
        self.upto = np.searchsorted(sorted_neg, prob[pos], side="right")
        self.ties = bool((self.below != self.upto).any())
        if cluster is not None:
            self.c_pos = cluster[pos]
            self.c_neg_sorted = cluster[~pos][self.neg_order]

    def replicates(self, w: np.ndarray) -> np.ndarray:
        """AUROC under cluster weights w (b x n_clusters)."""
        return _auroc_from_weights(self, w[:, self.c_pos], w[:, self.c_neg_sorted], sorted_neg=True)


def _auroc_from_weights(
    plan: _AurocPlan, w_pos: np.ndarray, w_neg: np.ndarray, sorted_neg: bool = False
) -> np.ndarray:
    import numpy as np

    # cum[:, k] = weight of the k lowest-scoring negatives (cum[:, 0] = 0)
    cum = np.zeros((w_neg.shape[0], w_neg.shape[1] + 1), dtype=np.float64)
    np.cumsum(w_neg if sorted_neg else w_neg[:, plan.neg_order], axis=1, out=cum[:, 1:])
    credit = cum[:, plan.below]
    if plan.ties:
        credit += cum[:, plan.upto]
        credit *= 0.5  # a tie counts half
    num = np.einsum("ij,ij->i", w_pos, credit)
    den = w_pos.sum(axis=1, dtype=np.float64) * cum[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _auroc_linearised(
    prob: np.ndarray, pos: np.ndarray, cluster: np.ndarray, n_clusters: int
) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Per-cluster sums for the linearised (first-order) bootstrap of AUROC.

    AUROC = U / (n1 n0), U = sum over (positive, negative) pairs of [s+ > s-] + [s+ = s-]/2.
    Under cluster weights w, U(w) is a quadratic form; to first order around w = 1,
    U(w) ~ w.a - U with a_c = sum of each positive's credit R_i and each negative's L_j in
    cluster c, and n1(w) n0(w) ~ w.d - n1 n0 with d_c = n1_c n0 + n0_c n1. Exact row-level
    replicates cost O(rows) each; these cost O(clusters), which keeps a million-row card fast.
    """
    import numpy as np

    neg_sorted = np.sort(prob[~pos])
    pos_sorted = np.sort(prob[pos])
    n1, n0 = float(pos.sum()), float((~pos).sum())
    lo = np.searchsorted(neg_sorted, prob[pos], side="left")
    hi = np.searchsorted(neg_sorted, prob[pos], side="right")
    credit_pos = lo + 0.5 * (hi - lo)  # negatives below each positive, ties half
    lo = np.searchsorted(pos_sorted, prob[~pos], side="left")
    hi = np.searchsorted(pos_sorted, prob[~pos], side="right")
    credit_neg = (n1 - hi) + 0.5 * (hi - lo)  # positives above each negative, ties half
    u = float(credit_pos.sum())
    credit = np.empty(prob.shape[0])
    credit[pos], credit[~pos] = credit_pos, credit_neg
    cols = np.column_stack([credit, np.where(pos, n0, n1)])
    per = cluster_sums(cols, cluster, n_clusters)

    def fn(s: np.ndarray) -> np.ndarray:
        return (s[:, 0] - u) / (s[:, 1] - n1 * n0)

    return per, fn


def auroc_interval(
    prob: np.ndarray,
    outcome: np.ndarray,
    cluster: np.ndarray,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Task-cluster bootstrap interval of AUROC (same draws as every statistic of this seed)."""
    import numpy as np

    codes, n_clusters = compact_codes(np.asarray(cluster))
    pos = np.asarray(outcome).astype(bool)
    if n_clusters == 0 or pos.all() or not pos.any():
        return None
    plan = _AurocPlan(np.asarray(prob, dtype=np.float64), pos, codes)
    sub = max(1, _ROW_CELLS // max(codes.size, 1))
    reps: list[np.ndarray] = []
    for w in weight_blocks(n_clusters, n_boot, seed):
        for start in range(0, w.shape[0], sub):
            reps.append(plan.replicates(w[start : start + sub]))
    return percentile_interval(np.concatenate(reps), level)


def reliability_diagram(
    prob: Sequence[float] | np.ndarray, outcome: Sequence[int] | np.ndarray, n_bins: int = N_BINS
) -> dict[str, Any]:
    """Reliability-diagram data: bin edges, and per bin the count, mean probability and share
    positive (None for empty bins). Non-empty bins equal sklearn's calibration_curve."""
    import numpy as np

    p, y = np.asarray(prob, dtype=np.float64), np.asarray(outcome, dtype=np.float64)
    b = _bins(p, n_bins) if p.size else np.zeros(0, dtype=np.int64)
    count = np.bincount(b, minlength=n_bins)
    sp = np.bincount(b, weights=p, minlength=n_bins)
    sy = np.bincount(b, weights=y, minlength=n_bins)
    mean_p = [float(sp[i] / count[i]) if count[i] else None for i in range(n_bins)]
    frac = [float(sy[i] / count[i]) if count[i] else None for i in range(n_bins)]
    return {
        "edges": [i / n_bins for i in range(n_bins + 1)],
        "count": [int(c) for c in count],
        "mean_confidence": mean_p,
        "accuracy": frac,
    }


def _probabilistic(ctx: _Context, kind: Kind) -> dict[str, Any] | None:
    import numpy as np

    a = ctx.a
    spec = SCORING[kind]
    pos, neg = LABEL_CODE[spec.positive], LABEL_CODE[spec.negative]
    m = (a.status == OK) & np.isfinite(a.prob) & ((a.gold == pos) | (a.gold == neg))
    if not m.any():
        return None
    p = np.clip(a.prob[m], 0.0, 1.0)
    y = (a.gold[m] == pos).astype(np.float64)
    cl = ctx.cluster[m]
    n = int(m.sum())
    b = _bins(p, N_BINS)
    # Per-cluster sums: count, then sum p and sum y per bin (ECE), then squared error (Brier).
    n_cl = ctx.n_clusters
    cell = cl * N_BINS + b
    per = np.column_stack(
        [
            np.bincount(cl, minlength=n_cl).astype(np.float64),
            np.bincount(cell, weights=p, minlength=n_cl * N_BINS).reshape(n_cl, N_BINS),
            np.bincount(cell, weights=y, minlength=n_cl * N_BINS).reshape(n_cl, N_BINS),
            np.bincount(cl, weights=(p - y) ** 2, minlength=n_cl),
        ]
    )

    def ece_fn(s: np.ndarray) -> np.ndarray:
        return np.abs(s[:, 1 : 1 + N_BINS] - s[:, 1 + N_BINS : 1 + 2 * N_BINS]).sum(1) / s[:, 0]

    def brier_fn(s: np.ndarray) -> np.ndarray:
        return s[:, -1] / s[:, 0]

    auc = auroc(p, y)
    auc_est: _Pending | Estimate = Estimate(auc, n)
    if auc is not None and n * ctx.n_boot <= _EXACT_AUROC_CELLS:
        plan = _AurocPlan(p, y.astype(bool), cl)
        handle = ctx.add_block(plan.replicates, n_rows=n)
        auc_est = _Pending(auc, n, None, handle, False, False)
    elif auc is not None:
        per_auc, fn = _auroc_linearised(p, y.astype(bool), cl, ctx.n_clusters)
        auc_est = ctx.custom(auc, n, per_auc, fn)
        auc_est.method = "cluster_bootstrap_linearised"
    return {
        "positive_label": spec.positive,
        "n": n,
        "ece": ctx.custom(ece(p, y), n, per, ece_fn),
        "brier": ctx.custom(brier(p, y), n, per, brier_fn),
        "auroc": auc_est,
        "reliability": reliability_diagram(p, y),
    }


def probabilistic_metrics(
    rows: Rows, kind: Kind = "binary", n_boot: int = 1000, seed: int = 0
) -> dict[str, Any] | None:
    """ECE (10 equal-width bins), Brier and AUROC of P(positive) (pass, or A for pairwise)
    against gold, with intervals, and reliability-diagram data. Rows: status ok, prob known,
    gold one of the two decisive labels (pairwise gold ties are left out). None if no rows."""
    ctx = _context(rows, n_boot, seed)
    result: dict[str, Any] | None = ctx.finish(_probabilistic(ctx, kind))
    return result


# --------------------------------------------------------------------------- agreement


def _rating_matrix(a: RowArrays) -> tuple[np.ndarray, list[str]]:
    """Judges x units matrix of ok verdict codes (NaN = missing); unit = (item, order, sample)."""
    import numpy as np

    _, sample = np.unique(a.sample, return_inverse=True) if a.n else (None, a.sample)
    sample = np.asarray(sample).reshape(-1).astype(np.int64)
    n_s = int(sample.max()) + 1 if a.n else 1
    key = (a.item * 3 + a.order) * n_s + sample
    ok = (a.status == OK) & (a.verdict >= 0)
    units, unit = np.unique(key[ok], return_inverse=True)
    judges_present, judge = np.unique(a.judge[ok], return_inverse=True)
    m = np.full((judges_present.size, units.size), np.nan)
    m[judge.reshape(-1), unit.reshape(-1)] = a.verdict[ok]
    return m, [a.judge_names[j] for j in judges_present]


def krippendorff_alpha(rows: Rows) -> float | None:
    """Krippendorff's alpha (nominal) among the judges in ``rows``, missing values allowed.

    Units are (item, order, sample); only ok verdicts are ratings. None when fewer than two
    judges or no unit has two ratings, or when alpha is undefined (a single label used).
    """
    import numpy as np

    a = to_arrays(rows)
    m, names = _rating_matrix(a)
    if len(names) < 2 or not ((~np.isnan(m)).sum(axis=0) >= 2).any():
        return None
    values = np.unique(m[~np.isnan(m)])
    if values.size < 2:
        return None
    import krippendorff

    v = float(krippendorff.alpha(reliability_data=m, level_of_measurement="nominal"))
    return v if math.isfinite(v) else None


def kappa_matrix(rows: Rows) -> dict[str, Any]:
    """Cohen's kappa between every two judges on the units both judged (ok verdicts).

    All pairs at once: with one-hot ratings O (units x judges*labels), O^T O holds every
    pair's confusion matrix. Returns judges, a kappa matrix (None where undefined) and the
    number of shared units per pair.
    """
    import numpy as np

    a = to_arrays(rows)
    m, names = _rating_matrix(a)
    j, u = m.shape
    k = len(ALL_LABELS)
    onehot = np.zeros((u, j * k))
    for ji in range(j):
        present = ~np.isnan(m[ji])
        onehot[np.nonzero(present)[0], ji * k + m[ji, present].astype(np.int64)] = 1.0
    gram = onehot.T @ onehot
    blocks = gram.reshape(j, k, j, k).transpose(0, 2, 1, 3)
    kappa = kappa_from_confusion(blocks)
    shared = blocks.sum(axis=(2, 3))
    return {
        "judges": names,
        "kappa": [[_num(float(x)) for x in row] for row in kappa],
        "n": shared.astype(np.int64).tolist(),
    }


# --------------------------------------------------------------------------- slices, summary


def per_slice(
    rows: Sequence[VerdictRow], key: str, metric: Callable[[Sequence[VerdictRow]], Any]
) -> dict[str, Any]:
    """``metric`` on the rows of each value of slice ``key`` ("(none)" where absent)."""
    groups: dict[str, list[VerdictRow]] = {}
    for value, row in zip(iter_slice_values(rows, key), rows, strict=True):
        groups.setdefault(value, []).append(row)
    return {value: metric(group) for value, group in sorted(groups.items())}


def _summary(a: RowArrays, kind: Kind, n_boot: int, seed: int) -> dict[str, Any]:
    import numpy as np

    ctx = _Context(a, n_boot, seed)
    labels = label_codes(kind)
    has_gold = np.isin(a.gold, labels)
    in_kind = np.isin(a.verdict, labels)
    out: dict[str, Any] = {
        "kind": kind,
        "n_rows": a.n,
        "n_items": int(np.unique(a.item).size),
        "n_clusters": ctx.n_clusters,
        "judges": sorted({a.judge_names[j] for j in np.unique(a.judge)}),
        "status": status_counts(a),
        "gold": {
            "rows_with_gold": int(has_gold.sum()),
            "rows_without_gold": int((~has_gold).sum()),
        },
        "other_label_rows": int(((a.status == OK) & ~in_kind).sum()),
        "rates": _status_rates(ctx),
    }
    if kind == "binary":
        out["confusion_matrix"] = confusion(a)
        out["metrics"] = _binary(ctx)
    else:
        pw = _pairwise(ctx)
        out["confusion_matrix"] = pw.pop("confusion")
        out["metrics"] = pw
        pairs = _pairs(a)
        out["pair_score"] = _pair_score(ctx, pairs)
        position = _position(ctx, pairs)
        if position is not None:
            position["p_prefer_longer"] = _length_bias(ctx)
        out["position"] = position
    out["repetition_stability"] = _repetition(ctx)
    out["probabilistic"] = _probabilistic(ctx, kind)
    if len(out["judges"]) > 1:
        out["agreement"] = {"krippendorff_alpha": krippendorff_alpha(a), **kappa_matrix(a)}
    return _jsonable(ctx.finish(out))


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Estimate):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    return obj


def summarize(
    rows: Sequence[VerdictRow] | RowArrays,
    kind: Kind,
    n_boot: int = 1000,
    seed: int = 0,
    slices: Sequence[str] = (),
) -> dict[str, Any]:
    """Every metric of one set of verdict rows, with intervals, as a JSON-serialisable dict.

    Pass one judge's rows for a card (with several judges the figures pool their rows and an
    ``agreement`` block is added). ``slices`` repeats the summary (without agreement) per value
    of each named slice key under ``"slices": {key: {value: {...}}}``. Each figure is
    ``{"value", "k", "n", "ci95", "method"}`` (see module docstring for the counting rules).
    """
    if kind not in SCORING:
        raise ValueError(f"kind must be binary or pairwise, not {kind!r}")
    if slices and isinstance(rows, RowArrays):
        raise ValueError("per-slice summaries need the rows (slices are not in RowArrays)")
    a = to_arrays(rows)
    out = _summary(a, kind, n_boot, seed)
    out["params"] = {"n_boot": n_boot, "seed": seed, "level": 0.95, "n_bins": N_BINS}
    row_list: Sequence[VerdictRow] = () if isinstance(rows, RowArrays) else rows
    if slices:
        import numpy as np

        out["slices"] = {}
        for key in slices:
            values = list(iter_slice_values(row_list, key))
            codes: dict[str, list[int]] = {}
            for i, v in enumerate(values):
                codes.setdefault(v, []).append(i)
            per: dict[str, Any] = {}
            for value, idx in sorted(codes.items()):
                sub = a.take(np.asarray(idx, dtype=np.int64))
                s = _summary(sub, kind, n_boot, seed)
                s.pop("agreement", None)
                per[value] = s
            out["slices"][key] = per
    return out
