"""The metric summary a card carries, as typed models: what ``calibration.metrics.summarize``
builds, block by block, where the figures are computed.

The models serialise to exactly the keys they were given, in field order, and keep every number
as it came (an int stays an int, a float a float): a card's YAML and digest are the same as when
the summary was a plain dict. Fields are optional because the summary's blocks depend on the
rubric kind (``pair_score`` and ``position`` are pairwise only), on the judges (``agreement``
needs two) and on the request (``slices``); a card written by hand for a test may carry only a
confusion matrix.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import SerializerFunctionWrapHandler, model_serializer

from judge.base import Strict

#: A number exactly as summarize wrote it (``int | float``: a union keeps the type it was given).
Num = int | float


class _Given(Strict):
    """Strict, and serialised with the keys it was given only (an absent block stays absent)."""

    @model_serializer(mode="wrap")
    def _given_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        given = self.model_fields_set
        return {key: value for key, value in data.items() if key in given}


class IntervalEstimate(_Given):
    """A figure with its 95% interval (``calibration.estimates.Estimate.to_model``)."""

    value: Num | None
    #: The count behind a proportion (a sum for a ratio); None for other statistics.
    k: Num | None
    n: int
    ci95: list[Num | None] | None
    #: "wilson", "cluster_bootstrap", "wilson_clusters", "cluster_bootstrap_linearised", "none".
    method: str
    #: The Wilson interval of k/n, kept beside a bootstrap interval for proportions.
    wilson95: list[Num | None] | None = None

    @property
    def interval(self) -> tuple[float | None, float | None] | None:
        """``ci95`` as a (low, high) pair."""
        if not self.ci95:
            return None
        return (self.ci95[0], self.ci95[1])


class StatusCounts(_Given):
    """Rows per judgment status."""

    ok: int
    abstain: int
    parse_error: int
    infra_error: int


class GoldCounts(_Given):
    """Rows with and without a gold label."""

    rows_with_gold: int
    rows_without_gold: int


class StatusRates(_Given):
    """Abstention and failure rates over every attempted row."""

    abstention_rate: IntervalEstimate
    parse_error_rate: IntervalEstimate
    infra_error_rate: IntervalEstimate


class BinaryConfusion(_Given):
    """Binary confusion counts, pass the positive class (status ok rows with gold)."""

    tp: int
    fn: int
    fp: int
    tn: int


class PairwiseConfusion(_Given):
    """Pairwise confusion matrix: rows gold, columns verdict, in ``labels`` order."""

    labels: list[str]
    rows: str
    columns: str
    matrix: list[list[int]]


class BinaryMetrics(_Given):
    """Binary figures against gold."""

    false_accept_rate: IntervalEstimate
    false_reject_rate: IntervalEstimate
    precision: IntervalEstimate
    recall: IntervalEstimate
    accuracy: IntervalEstimate
    kappa: IntervalEstimate


class PairwiseMetrics(_Given):
    """Pairwise figures against gold."""

    accuracy: IntervalEstimate
    accuracy_attempted: IntervalEstimate
    tie_rate: IntervalEstimate
    kappa: IntervalEstimate


class PairScore(_Given):
    """JudgeBench pair score over items judged in both orders."""

    n_pairs: int
    correct: int
    wrong: int
    tie: int
    score: IntervalEstimate
    both_correct: IntervalEstimate
    gold_tie_pairs_skipped: int


class Position(_Given):
    """Order flips, position consistency and position and length biases."""

    n_pairs: int
    n_complete: int
    n_with_failure: int
    unpaired_rows: int
    duplicate_rows: int
    consistent: int
    primacy: int
    recency: int
    order_flip_rate: IntervalEstimate
    inconsistent_incl_failures: IntervalEstimate
    position_consistency: IntervalEstimate
    preference_fairness: Num | None
    p_prefer_first: IntervalEstimate
    p_prefer_longer: IntervalEstimate | None = None


class Reliability(_Given):
    """Reliability-diagram data: per equal-width bin, count, mean probability, share positive."""

    edges: list[Num]
    count: list[int]
    mean_confidence: list[Num | None]
    accuracy: list[Num | None]


class Probabilistic(_Given):
    """ECE, Brier and AUROC of P(positive) against gold."""

    positive_label: str
    n: int
    ece: IntervalEstimate
    brier: IntervalEstimate
    auroc: IntervalEstimate
    reliability: Reliability


class Agreement(_Given):
    """Agreement between the judges of a panel or cascade."""

    krippendorff_alpha: Num | None
    judges: list[str]
    kappa: list[list[Num | None]]
    n: list[list[int]]


class Params(_Given):
    """How the intervals were computed."""

    n_boot: int
    seed: int
    level: Num
    n_bins: int


class MetricSummary(_Given):
    """Every metric of one judge's verdicts against gold, with intervals (see
    ``calibration.metrics.summarize`` for the counting rules)."""

    kind: Literal["binary", "pairwise"] | None = None
    n_rows: int | None = None
    n_items: int | None = None
    n_clusters: int | None = None
    judges: list[str] | None = None
    status: StatusCounts | None = None
    gold: GoldCounts | None = None
    other_label_rows: int | None = None
    rates: StatusRates | None = None
    confusion_matrix: BinaryConfusion | PairwiseConfusion | None = None
    metrics: BinaryMetrics | PairwiseMetrics | None = None
    pair_score: PairScore | None = None
    position: Position | None = None
    repetition_stability: IntervalEstimate | None = None
    probabilistic: Probabilistic | None = None
    agreement: Agreement | None = None
    params: Params | None = None
    #: slice key -> slice value -> the same summary on those rows (without agreement).
    slices: dict[str, dict[str, MetricSummary]] | None = None
