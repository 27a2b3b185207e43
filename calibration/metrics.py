"""Calibration metrics with intervals (docs/metrics.md sections 1-3 and 5).

Every figure is computed from :class:`VerdictRow` values (or their columnar view,
:class:`calibration.inputs.RowArrays`) and comes with a 95% interval
(:mod:`calibration.estimates`):
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

Here: status rates, binary figures, repetition stability and :func:`summarize`, which returns
all of it as one typed :class:`calibration.summary.MetricSummary` (what a card carries). The
pairwise figures are in :mod:`calibration.pairwise`, the figures of P(positive) in
:mod:`calibration.probabilities`, kappa and agreement in :mod:`calibration.agreement`; their
public names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from calibration.agreement import (
    kappa_from_confusion,
    kappa_matrix,
    kappa_pending,
    krippendorff_alpha,
)
from calibration.estimates import (
    ABSTAIN,
    FAIL,
    INFRA_ERROR,
    OK,
    PARSE_ERROR,
    PASS,
    BootstrapBatch,
    Estimate,
    Kind,
    Pending,
    Rows,
    bootstrap_batch,
    label_codes,
)
from calibration.inputs import RowArrays, iter_slice_values, to_arrays
from calibration.pairwise import (
    find_pairs,
    length_bias_figure,
    p_prefer_longer,
    pair_score,
    pair_score_figures,
    pairwise_confusion,
    pairwise_figures,
    pairwise_metrics,
    position_figures,
    position_metrics,
)
from calibration.probabilities import (
    N_BINS,
    auroc,
    auroc_interval,
    brier,
    ece,
    probabilistic_figures,
    probabilistic_metrics,
    reliability_diagram,
    weighted_auroc,
)
from calibration.records import VerdictRow
from calibration.summary import (
    Agreement,
    BinaryConfusion,
    BinaryMetrics,
    GoldCounts,
    MetricSummary,
    PairScore,
    PairwiseConfusion,
    PairwiseMetrics,
    Params,
    Position,
    Probabilistic,
    Reliability,
    StatusCounts,
    StatusRates,
)
from judge.kinds import ALL_LABELS, SCORING

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "N_BINS",
    "Estimate",
    "Kind",
    "Rows",
    "auroc",
    "auroc_interval",
    "binary_metrics",
    "brier",
    "confusion",
    "ece",
    "kappa_from_confusion",
    "kappa_matrix",
    "krippendorff_alpha",
    "label_codes",
    "p_prefer_longer",
    "pair_score",
    "pairwise_metrics",
    "per_slice",
    "position_metrics",
    "probabilistic_metrics",
    "reliability_diagram",
    "repetition_stability",
    "status_counts",
    "status_rates",
    "summarize",
    "weighted_auroc",
]


def _status_rates(batch: BootstrapBatch) -> dict[str, Pending]:
    import numpy as np

    a = batch.a
    every = np.ones(a.n, dtype=bool)
    return {
        "abstention_rate": batch.proportion(a.status == ABSTAIN, every),
        "parse_error_rate": batch.proportion(a.status == PARSE_ERROR, every),
        "infra_error_rate": batch.proportion(a.status == INFRA_ERROR, every),
    }


def status_counts(rows: Rows) -> dict[str, int]:
    """Rows per status (ok, abstain, parse_error, infra_error)."""
    import numpy as np

    a = to_arrays(rows)
    counts = np.bincount(a.status.astype(np.int64), minlength=4)
    return dict(zip(("ok", "abstain", "parse_error", "infra_error"), map(int, counts), strict=True))


def status_rates(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Estimate]:
    """Abstention, parse-error and infra-error rates over all attempted rows."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: dict[str, Estimate] = batch.finish(_status_rates(batch))
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


def _binary(batch: BootstrapBatch) -> dict[str, Pending]:
    a = batch.a
    m = _binary_mask(a)
    v_pass, g_pass = a.verdict == PASS, a.gold == PASS
    v_fail, g_fail = a.verdict == FAIL, a.gold == FAIL
    tp, fp = m & v_pass & g_pass, m & v_pass & g_fail
    tn, fn = m & v_fail & g_fail, m & v_fail & g_pass
    return {
        "false_accept_rate": batch.proportion(fp, fp | tn),
        "false_reject_rate": batch.proportion(fn, fn | tp),
        "precision": batch.proportion(tp, tp | fp),
        "recall": batch.proportion(tp, tp | fn),
        "accuracy": batch.proportion(tp | tn, m),
        "kappa": kappa_pending(batch, a.gold, a.verdict, (PASS, FAIL), m),
    }


def binary_metrics(rows: Rows, n_boot: int = 1000, seed: int = 0) -> dict[str, Estimate]:
    """FAR, FRR, precision and recall of pass, accuracy and Cohen's kappa vs gold."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: dict[str, Estimate] = batch.finish(_binary(batch))
    return result


# --------------------------------------------------------------------------- repetition


def _repetition(batch: BootstrapBatch) -> Pending | None:
    import numpy as np

    a = batch.a
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
    unit_cluster[unit] = batch.cluster
    return batch.ratio(rs[repeated], np.ones(int(repeated.sum())), unit_cluster[repeated])


def repetition_stability(rows: Rows, n_boot: int = 1000, seed: int = 0) -> Estimate | None:
    """RS: mean over (judge, item, order) units with several samples of
    (count of the majority verdict / repetitions). None when nothing was repeated."""
    batch = bootstrap_batch(rows, n_boot, seed)
    result: Estimate | None = batch.finish(_repetition(batch))
    return result


# --------------------------------------------------------------------------- slices, summary


def per_slice(
    rows: Sequence[VerdictRow], key: str, metric: Callable[[Sequence[VerdictRow]], Any]
) -> dict[str, Any]:
    """``metric`` on the rows of each value of slice ``key`` ("(none)" where absent)."""
    groups: dict[str, list[VerdictRow]] = {}
    for value, row in zip(iter_slice_values(rows, key), rows, strict=True):
        groups.setdefault(value, []).append(row)
    return {value: metric(group) for value, group in sorted(groups.items())}


def _summary(
    a: RowArrays, kind: Kind, n_boot: int, seed: int, *, agreement: bool = True
) -> dict[str, Any]:
    """The blocks of one summary (:class:`MetricSummary`'s fields, absent where the kind or the
    judges have no such block), each built as its model once the resamples are drawn."""
    import numpy as np

    batch = BootstrapBatch(a, n_boot, seed)
    labels = label_codes(kind)
    has_gold = np.isin(a.gold, labels)
    in_kind = np.isin(a.verdict, labels)
    judges = sorted({a.judge_names[j] for j in np.unique(a.judge)})
    # Every figure is registered first (in this order), then the resamples are drawn once.
    rates = _status_rates(batch)
    pair_plan: dict[str, Any] | None = None
    position_plan: dict[str, Any] | None = None
    if kind == "binary":
        against = _binary(batch)
    else:
        against = pairwise_figures(batch)
        pairs = find_pairs(a)
        pair_plan = pair_score_figures(batch, pairs)
        position_plan = position_figures(batch, pairs)
        if position_plan is not None:
            position_plan["p_prefer_longer"] = length_bias_figure(batch)
    repetition = _repetition(batch)
    probabilistic = probabilistic_figures(batch, kind)
    batch.run()

    blocks: dict[str, Any] = {
        "kind": kind,
        "n_rows": a.n,
        "n_items": int(np.unique(a.item).size),
        "n_clusters": batch.n_clusters,
        "judges": judges,
        "status": StatusCounts(**status_counts(a)),
        "gold": GoldCounts(
            rows_with_gold=int(has_gold.sum()), rows_without_gold=int((~has_gold).sum())
        ),
        "other_label_rows": int(((a.status == OK) & ~in_kind).sum()),
        "rates": StatusRates(**batch.figures(rates)),
    }
    if kind == "binary":
        blocks["confusion_matrix"] = BinaryConfusion(**confusion(a))
        blocks["metrics"] = BinaryMetrics(**batch.figures(against))
    else:
        blocks["confusion_matrix"] = PairwiseConfusion(**pairwise_confusion(a))
        blocks["metrics"] = PairwiseMetrics(**batch.figures(against))
        blocks["pair_score"] = None if pair_plan is None else PairScore(**batch.figures(pair_plan))
        blocks["position"] = (
            None if position_plan is None else Position(**batch.figures(position_plan))
        )
    blocks["repetition_stability"] = None if repetition is None else batch.figure(repetition)
    blocks["probabilistic"] = _probabilistic(batch, probabilistic)
    if agreement and len(judges) > 1:
        blocks["agreement"] = Agreement(krippendorff_alpha=krippendorff_alpha(a), **kappa_matrix(a))
    return blocks


def _probabilistic(batch: BootstrapBatch, plan: dict[str, Any] | None) -> Probabilistic | None:
    if plan is None:
        return None
    fields = batch.figures(plan)
    fields["reliability"] = Reliability(**plan["reliability"])
    return Probabilistic(**fields)


def summarize(
    rows: Sequence[VerdictRow] | RowArrays,
    kind: Kind,
    n_boot: int = 1000,
    seed: int = 0,
    slices: Sequence[str] = (),
) -> MetricSummary:
    """Every metric of one set of verdict rows, with intervals (see the module docstring for
    the counting rules).

    Pass one judge's rows for a card (with several judges the figures pool their rows and an
    ``agreement`` block is added). ``slices`` repeats the summary (without agreement) per value
    of each named slice key under ``slices[key][value]``. Each figure is an
    :class:`IntervalEstimate` (value, k, n, ci95, method); ``model_dump(mode="json")`` is the
    card's form.
    """
    if kind not in SCORING:
        raise ValueError(f"kind must be binary or pairwise, not {kind!r}")
    if slices and isinstance(rows, RowArrays):
        raise ValueError("per-slice summaries need the rows (slices are not in RowArrays)")
    a = to_arrays(rows)
    blocks = _summary(a, kind, n_boot, seed)
    params = Params(n_boot=n_boot, seed=seed, level=0.95, n_bins=N_BINS)
    if not slices:
        return MetricSummary(**blocks, params=params)
    import numpy as np

    row_list: Sequence[VerdictRow] = () if isinstance(rows, RowArrays) else rows
    per_key: dict[str, dict[str, MetricSummary]] = {}
    for key in slices:
        codes: dict[str, list[int]] = {}
        for i, v in enumerate(iter_slice_values(row_list, key)):
            codes.setdefault(v, []).append(i)
        per_key[key] = {
            value: MetricSummary(
                **_summary(
                    a.take(np.asarray(idx, dtype=np.int64)), kind, n_boot, seed, agreement=False
                )
            )
            for value, idx in sorted(codes.items())
        }
    return MetricSummary(**blocks, params=params, slices=per_key)
