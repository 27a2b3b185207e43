"""Metrics of the judge's P(positive) against gold (docs/metrics.md section 3): expected
calibration error, Brier score and AUROC with task-cluster bootstrap intervals, and the
reliability diagram's data. P(positive) is P(pass) for binary rubrics, P(A) for pairwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from calibration.estimates import (
    OK,
    ROW_CELLS,
    BootstrapBatch,
    Estimate,
    Kind,
    Pending,
    Rows,
    bootstrap_batch,
)
from calibration.inputs import LABEL_CODE
from calibration.intervals import cluster_sums, compact_codes, percentile_interval, weight_blocks
from judge.kinds import SCORING

if TYPE_CHECKING:
    import numpy as np

N_BINS = 10
#: Above this many (rows x replicates), the AUROC interval uses the linearised bootstrap.
_EXACT_AUROC_CELLS = 200_000_000


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
    sub = max(1, ROW_CELLS // max(codes.size, 1))
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


def probabilistic_figures(batch: BootstrapBatch, kind: Kind) -> dict[str, Any] | None:
    """ECE, Brier and AUROC (see :func:`probabilistic_metrics`), registered on ``batch``."""
    import numpy as np

    a = batch.a
    spec = SCORING[kind]
    pos, neg = LABEL_CODE[spec.positive], LABEL_CODE[spec.negative]
    m = (a.status == OK) & np.isfinite(a.prob) & ((a.gold == pos) | (a.gold == neg))
    if not m.any():
        return None
    p = np.clip(a.prob[m], 0.0, 1.0)
    y = (a.gold[m] == pos).astype(np.float64)
    cl = batch.cluster[m]
    n = int(m.sum())
    b = _bins(p, N_BINS)
    # Per-cluster sums: count, then sum p and sum y per bin (ECE), then squared error (Brier).
    n_cl = batch.n_clusters
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
    auc_est: Pending | Estimate = Estimate(auc, n)
    if auc is not None and n * batch.n_boot <= _EXACT_AUROC_CELLS:
        plan = _AurocPlan(p, y.astype(bool), cl)
        handle = batch.add_block(plan.replicates, n_rows=n)
        auc_est = Pending(auc, n, None, handle, False, False)
    elif auc is not None:
        per_auc, fn = _auroc_linearised(p, y.astype(bool), cl, batch.n_clusters)
        auc_est = batch.custom(auc, n, per_auc, fn)
        auc_est.method = "cluster_bootstrap_linearised"
    return {
        "positive_label": spec.positive,
        "n": n,
        "ece": batch.custom(ece(p, y), n, per, ece_fn),
        "brier": batch.custom(brier(p, y), n, per, brier_fn),
        "auroc": auc_est,
        "reliability": reliability_diagram(p, y),
    }


def probabilistic_metrics(
    rows: Rows, kind: Kind = "binary", n_boot: int = 1000, seed: int = 0
) -> dict[str, Any] | None:
    """ECE (10 equal-width bins), Brier and AUROC of P(positive) (pass, or A for pairwise)
    against gold, with intervals, and reliability-diagram data. Rows: status ok, prob known,
    gold one of the two decisive labels (pairwise gold ties are left out). None if no rows."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: dict[str, Any] | None = batch.finish(probabilistic_figures(batch, kind))
    return result
