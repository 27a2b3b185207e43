"""Pairwise metrics (docs/metrics.md sections 1 and 3): accuracy against gold, and what
items judged in both orders show: the JudgeBench pair score, order flips, position consistency,
primacy and recency, and the preference for the first shown or the longer candidate.

Pairs are matched on (judge, item, sample); each ``*_figures`` function registers its figures on
a :class:`calibration.estimates.BootstrapBatch` (see :func:`calibration.metrics.summarize`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calibration.agreement import confusion_columns, kappa_pending
from calibration.estimates import (
    AB,
    BA,
    OK,
    TIE,
    A,
    B,
    BootstrapBatch,
    Estimate,
    Pending,
    Rows,
    bootstrap_batch,
    label_codes,
)
from calibration.inputs import RowArrays, to_arrays
from judge.kinds import SCORING

if TYPE_CHECKING:
    import numpy as np


def _pairwise_mask(a: RowArrays) -> np.ndarray:
    """Ok rows whose gold and verdict are both A, B or tie."""
    labelled = (a.gold == A) | (a.gold == B) | (a.gold == TIE)
    decided = (a.verdict == A) | (a.verdict == B) | (a.verdict == TIE)
    mask: np.ndarray = (a.status == OK) & labelled & decided
    return mask


def pairwise_figures(batch: BootstrapBatch) -> dict[str, Pending]:
    """Accuracy against gold (ok rows), over attempted rows, tie rate and kappa, registered on
    ``batch``."""
    a = batch.a
    labelled = (a.gold == A) | (a.gold == B) | (a.gold == TIE)
    decided = (a.verdict == A) | (a.verdict == B) | (a.verdict == TIE)
    ok = a.status == OK
    m = _pairwise_mask(a)
    correct = m & (a.verdict == a.gold)
    return {
        "accuracy": batch.proportion(correct, m),
        "accuracy_attempted": batch.proportion(correct, labelled),
        "tie_rate": batch.proportion(ok & (a.verdict == TIE), ok & decided),
        "kappa": kappa_pending(batch, a.gold, a.verdict, (A, B, TIE), m),
    }


def pairwise_confusion(rows: Rows) -> dict[str, Any]:
    """Pairwise confusion matrix of the ok rows: gold down, verdict across, A, B, tie."""
    import numpy as np

    a = to_arrays(rows)
    m = _pairwise_mask(a)
    labels = SCORING["pairwise"].labels
    codes = label_codes("pairwise")
    k = len(codes)
    cm = confusion_columns(a.gold[m], a.verdict[m], codes).sum(axis=0).reshape(k, k)
    return {
        "labels": list(labels),
        "rows": "gold",
        "columns": "verdict",
        "matrix": np.asarray(cm, dtype=np.int64).tolist(),
    }


def pairwise_metrics(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Accuracy vs gold (ok rows), accuracy over attempted rows, tie rate, kappa, confusion."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: dict[str, Any] = batch.finish(pairwise_figures(batch))
    return {**result, "confusion": pairwise_confusion(batch.a)}


@dataclass(frozen=True)
class Pairs:
    """Rows judged in both orders, matched on (judge, item, sample)."""

    ab: np.ndarray  # row index of the AB row of each pair
    ba: np.ndarray  # row index of the BA row
    duplicates: int  # rows dropped because (judge, item, order, sample) repeated
    unpaired: int  # AB/BA rows whose other order is missing


def find_pairs(a: RowArrays) -> Pairs:
    """The rows judged in both orders, matched on (judge, item, sample)."""
    import numpy as np

    if a.n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Pairs(empty, empty, 0, 0)
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
    return Pairs(ab, ba, int(duplicates), int(unpaired))


def _row_score(a: RowArrays, rows: np.ndarray) -> np.ndarray:
    """JudgeBench per-judgment score: +1 correct, -1 the other candidate, 0 tie or failure."""
    import numpy as np

    v, g = a.verdict[rows], a.gold[rows]
    ok = a.status[rows] == OK
    other = np.where(g == A, B, np.where(g == B, A, -2))
    return np.where(ok & (v == g), 1, np.where(ok & (v == other), -1, 0))


def pair_score_figures(batch: BootstrapBatch, pairs: Pairs) -> dict[str, Any] | None:
    """The pair score's counts and figures (see :func:`pair_score`), registered on ``batch``."""
    import numpy as np

    a = batch.a
    if pairs.ab.size == 0:
        return None
    gold = a.gold[pairs.ab]
    scored = (gold == A) | (gold == B)  # JudgeBench labels are never ties
    total = _row_score(a, pairs.ab) + _row_score(a, pairs.ba)
    cl = batch.cluster[pairs.ab]
    return {
        "n_pairs": int(scored.sum()),
        "correct": int((scored & (total > 0)).sum()),
        "wrong": int((scored & (total < 0)).sum()),
        "tie": int((scored & (total == 0)).sum()),
        "score": batch.proportion(scored & (total > 0), scored, cl),
        "both_correct": batch.proportion(
            scored & (_row_score(a, pairs.ab) == 1) & (_row_score(a, pairs.ba) == 1), scored, cl
        ),
        "gold_tie_pairs_skipped": int(np.count_nonzero(gold == TIE)),
    }


def pair_score(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Any] | None:
    """JudgeBench pair score: each (judge, item, sample) judged in both orders; +1 per correct
    verdict, -1 per wrong one, 0 for tie or failure; a pair is correct when the sum is > 0.
    Pairs whose gold is a tie are skipped. None when no item was judged in both orders."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: dict[str, Any] | None = batch.finish(pair_score_figures(batch, find_pairs(batch.a)))
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


def position_figures(batch: BootstrapBatch, pairs: Pairs) -> dict[str, Any] | None:
    """Position counts and figures (see :func:`position_metrics`), registered on ``batch``."""
    import numpy as np

    a = batch.a
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
    cl = batch.cluster[pairs.ab]
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
        "order_flip_rate": batch.proportion(flip, valid, cl),
        # JudgeBench's count: a pair is inconsistent when the two decisions differ, a failed
        # order included (it differs from a verdict); over every pair.
        "inconsistent_incl_failures": batch.proportion(
            flip | one_failed, np.ones(n_pairs, dtype=bool), cl
        ),
        "position_consistency": batch.proportion(consistent, valid, cl),
        "preference_fairness": raw / n_pairs if n_pairs else None,
        "p_prefer_first": batch.proportion(first, counted),
    }


def position_metrics(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Any] | None:
    """Order flip, position consistency (Shi et al.) with primacy/recency counts, preference
    fairness (positive = recency bias, negative = primacy bias) and P(prefer first shown).
    None when no item was judged in both orders."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: dict[str, Any] | None = batch.finish(position_figures(batch, find_pairs(batch.a)))
    return result


def length_bias_figure(batch: BootstrapBatch) -> Pending | None:
    """P(prefer longer) (see :func:`p_prefer_longer`), registered on ``batch``."""
    import numpy as np

    a = batch.a
    known = np.isfinite(a.len_a) & np.isfinite(a.len_b) & (a.len_a != a.len_b)
    counted = known & (a.status == OK) & ((a.verdict == A) | (a.verdict == B))
    if not counted.any():
        return None
    longer_is_a = a.len_a > a.len_b
    chose_longer = counted & ((a.verdict == A) == longer_is_a)
    return batch.proportion(chose_longer, counted)


def p_prefer_longer(rows: Rows, n_boot: int = 1000, seed: int = 0) -> Estimate | None:
    """Share of decisive verdicts (A or B) that chose the longer candidate, where the lengths
    are known (``slices.length_A``/``length_B``, added by join_gold) and differ."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: Estimate | None = batch.finish(length_bias_figure(batch))
    return result
