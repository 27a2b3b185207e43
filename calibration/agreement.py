"""Agreement between raters (docs/metrics.md sections 1 and 5): Cohen's kappa of a judge
against gold or between two judges, and Krippendorff's alpha among several judges.

Units for judge-vs-judge agreement are (item, order, sample); only ok verdicts are ratings.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from calibration.estimates import OK, BootstrapBatch, Pending, Rows, finite_number
from calibration.inputs import RowArrays, to_arrays
from judge.kinds import ALL_LABELS

if TYPE_CHECKING:
    import numpy as np


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


def confusion_columns(truth: np.ndarray, pred: np.ndarray, labels: Sequence[int]) -> np.ndarray:
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


def kappa_pending(
    batch: BootstrapBatch,
    truth: np.ndarray,
    pred: np.ndarray,
    labels: Sequence[int],
    mask: np.ndarray,
) -> Pending:
    """Cohen's kappa of ``pred`` against ``truth`` on the ``mask`` rows, registered on ``batch``
    (its interval: the cluster bootstrap of the resampled confusion matrix)."""
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
    cells = confusion_columns(truth, pred, labels) * mask[:, None]

    def fn(s: np.ndarray) -> np.ndarray:
        return kappa_from_confusion(s.reshape(-1, k, k))

    return batch.custom(value, n, batch.sums(cells), fn)


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
        "kappa": [[finite_number(float(x)) for x in row] for row in kappa],
        "n": shared.astype(np.int64).tolist(),
    }
