"""The calibration report: one self-contained HTML file (inline CSS and SVG, no network).

Headline (judge, gold, guarantee, coverage or a plain "nothing certifies"), confusion matrix,
reliability diagram, band plot, per-slice table, the card's metrics as tables (each figure with
its 95% interval, how the interval was made and the counts behind it) and the card itself.

Rendered by jinja2 from ``calibration/templates/`` with autoescaping on: every text from the
card or the verdicts (judge names, slice values, rules) is escaped; only the SVG figures, made
here by matplotlib, are inserted as markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, get_args

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from pydantic import BaseModel

from calibration import plots
from calibration.bands import BandPolicy
from calibration.confidence import ScoreSet
from calibration.summary import (
    BinaryConfusion,
    IntervalEstimate,
    MetricSummary,
    PairwiseConfusion,
)
from calibration.workflow import CalibrationResult
from judge.kinds import SCORING

#: Readable names of the summary's figures (the card's keys are shown beside them).
FIGURE_NAMES: Mapping[str, str] = {
    "abstention_rate": "abstention rate",
    "parse_error_rate": "parse-error rate",
    "infra_error_rate": "infra-error rate",
    "false_accept_rate": "false accept rate (FAR)",
    "false_reject_rate": "false reject rate (FRR)",
    "precision": "precision of pass",
    "recall": "recall of pass",
    "accuracy": "accuracy",
    "accuracy_attempted": "accuracy over attempted rows",
    "tie_rate": "tie rate",
    "kappa": "Cohen's kappa",
    "score": "pair score",
    "both_correct": "both orders correct",
    "order_flip_rate": "order flip rate",
    "inconsistent_incl_failures": "inconsistent pairs (failures included)",
    "position_consistency": "position consistency",
    "p_prefer_first": "P(prefer first shown)",
    "p_prefer_longer": "P(prefer longer)",
    "repetition_stability": "repetition stability",
    "ece": "expected calibration error (ECE)",
    "brier": "Brier score",
    "auroc": "AUROC",
}


def fmt(value: Any) -> str:
    """A number as the report shows it: 4 significant digits; "—" for none."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def fmt_interval(interval: Sequence[float | None] | None) -> str:
    """A 95% interval as "[low, high]" ("—" when there is none)."""
    if not interval:
        return "—"
    return f"[{fmt(interval[0])}, {fmt(interval[1])}]"


def fmt_list(values: Sequence[Any]) -> str:
    """A list as comma-separated text (never a Python repr)."""
    return ", ".join(fmt(v) for v in values)


@dataclass(frozen=True)
class FigureRow:
    """One row of a metrics table."""

    group: str
    key: str
    name: str
    figure: IntervalEstimate

    @property
    def counts(self) -> str:
        """``k / n`` for a proportion (or a ratio's sum), ``n`` otherwise."""
        f = self.figure
        return f"{fmt(f.k)} / {f.n}" if f.k is not None else str(f.n)


def _block_figures(group: str, block: BaseModel | None) -> list[FigureRow]:
    if block is None:
        return []
    rows = []
    for key in type(block).model_fields:
        value = getattr(block, key)
        if key in block.model_fields_set and isinstance(value, IntervalEstimate):
            rows.append(FigureRow(group, key, FIGURE_NAMES.get(key, key.replace("_", " ")), value))
    return rows


def figure_rows(summary: MetricSummary) -> list[FigureRow]:
    """Every figure of a summary that carries an interval, grouped, in card order."""
    rows = _block_figures("against gold", summary.metrics)
    rows += _block_figures("pair score", summary.pair_score)
    rows += _block_figures("position", summary.position)
    if summary.repetition_stability is not None:
        rows.append(
            FigureRow(
                "repetition",
                "repetition_stability",
                "repetition stability",
                summary.repetition_stability,
            )
        )
    rows += _block_figures("probabilities", summary.probabilistic)
    rows += _block_figures("status", summary.rates)
    return rows


def _counts(block: BaseModel | None) -> list[tuple[str, str]]:
    """(name, value) of a block's plain numbers (counts and unitless figures)."""
    if block is None:
        return []
    out = []
    for key, info in type(block).model_fields.items():
        if key not in block.model_fields_set or IntervalEstimate in get_args(info.annotation):
            continue  # figures with intervals are in the figures table (an absent one too)
        value = getattr(block, key)
        if value is None or isinstance(value, int | float):
            out.append((key.replace("_", " "), fmt(value)))
    return out


def confusion_table(summary: MetricSummary) -> dict[str, Any] | None:
    """The card's confusion matrix as header and rows (gold down, verdict across)."""
    cm = summary.confusion_matrix
    if isinstance(cm, BinaryConfusion):
        positive, negative = SCORING["binary"].positive, SCORING["binary"].negative
        return {
            "header": ["gold \\ verdict", positive, negative],
            "rows": [[positive, cm.tp, cm.fn], [negative, cm.fp, cm.tn]],
        }
    if isinstance(cm, PairwiseConfusion):
        return {
            "header": [f"{cm.rows} \\ {cm.columns}", *cm.labels],
            "rows": [[label, *row] for label, row in zip(cm.labels, cm.matrix, strict=True)],
        }
    return None


def slice_rows(scores: ScoreSet, policy: BandPolicy | None, key: str) -> list[list[Any]]:
    """Per slice value: items, agreement of the argmax with gold, coverage and band errors."""
    positive = SCORING[scores.kind].positive
    groups: dict[str, list[Any]] = {}
    for item in scores.with_gold().items:
        groups.setdefault(str(item.slices.get(key)), []).append(item)
    rows = []
    for value, items in sorted(groups.items()):
        agree = sum(i.decision(scores.kind) == i.gold for i in items) / len(items)
        decided = errors = 0
        if policy is not None:
            for i in items:
                action = policy.route(i.score, value)
                if action == "review":
                    continue
                decided += 1
                if action == "decide":
                    errors += i.decision(scores.kind) != i.gold
                else:
                    errors += (action == "accept") != (i.gold == positive)
        rows.append([value, len(items), agree, decided / len(items), decided, errors])
    return rows


def _figures(result: CalibrationResult) -> list[Markup]:
    kind = result.kind
    gold = result.scores.with_gold()
    labels = list(SCORING[kind].labels)
    decided = [i.decision(kind) or "undecided" for i in gold.items]
    golds = [i.gold or "" for i in gold.items]
    if "undecided" in decided:
        labels = [*labels, "undecided"]
    if kind == "pairwise":
        prob, outcome, what = gold.confidences(), gold.correct(), "confidence"
    else:
        prob, outcome, what = gold.scores(), gold.positive(), "P(pass)"
    return [
        Markup(plots.confusion_matrix_svg(golds, decided, labels)),
        Markup(plots.reliability_svg(prob, outcome, label=what)),
    ]


def _band_plots(result: CalibrationResult) -> list[tuple[str | None, Markup]]:
    import numpy as np

    policy, kind = result.policy, result.kind
    gold = result.scores.with_gold()
    if policy is None:
        return []
    if not policy.per_slice:
        positive = gold.correct() if kind == "pairwise" else gold.positive()
        return [(None, Markup(plots.band_svg(gold.scores(), positive, policy)))]
    out: list[tuple[str | None, Markup]] = []
    positive_label = SCORING[kind].positive
    for value, sub in policy.per_slice.items():
        items = [i for i in gold.items if str(i.slices.get(policy.slice_key or "")) == value]
        sc = np.array([i.score for i in items])
        pos = np.array(
            [
                (i.decision(kind) == i.gold) if kind == "pairwise" else i.gold == positive_label
                for i in items
            ],
            dtype=bool,
        )
        out.append((f"{policy.slice_key} = {value}", Markup(plots.band_svg(sc, pos, sub))))
    return out


def _slice_summaries(summary: MetricSummary) -> list[dict[str, Any]]:
    """Per slice key: one row per value with its figures against gold."""
    out = []
    for key, values in (summary.slices or {}).items():
        columns: list[str] = []
        rows = []
        for value, sub in values.items():
            figs = _block_figures("against gold", sub.metrics)
            for f in figs:
                if f.key not in columns:
                    columns.append(f.key)
            rows.append({"value": value, "n_rows": sub.n_rows, "figures": {f.key: f for f in figs}})
        out.append({"key": key, "columns": columns, "names": FIGURE_NAMES, "rows": rows})
    return out


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("calibration", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=fmt, interval=fmt_interval, fmt_list=fmt_list)
    return env


def render_report(result: CalibrationResult) -> str:
    """The report of one calibration as one HTML string."""
    card = result.card
    summary = card.calibration.metrics
    policy = result.policy
    key = result.options.slice_key or (policy.slice_key if policy is not None else None)
    reliability = summary.probabilistic.reliability if summary.probabilistic else None
    context = {
        "title": f"Calibration of {card.judge.model}",
        "card": card,
        "certified": card.policy.coverage > 0,
        "summary": result.summary,
        "figures": _figures(result),
        "band_plots": _band_plots(result),
        "band_rows": [
            [
                name,
                b.threshold,
                b.n,
                b.errors,
                b.upper_bound,
                b.alpha,
                b.level,
                b.coverage,
                b.reason,
            ]
            for name, b in card.policy.bands.items()
        ],
        "cascade": result.cascade,
        "pairwise": result.kind == "pairwise",
        "slice_key": key,
        "slice_rows": slice_rows(result.scores, policy, key) if key else [],
        "metrics": summary,
        "figure_rows": figure_rows(summary),
        "confusion": confusion_table(summary),
        "rows_block": [
            ("rows", fmt(summary.n_rows)),
            ("items", fmt(summary.n_items)),
            ("task clusters", fmt(summary.n_clusters)),
            ("other-label rows", fmt(summary.other_label_rows)),
        ]
        if summary.n_rows is not None
        else [],
        "status": _counts(summary.status) + _counts(summary.gold),
        "pair_counts": _counts(summary.pair_score),
        "position_counts": _counts(summary.position),
        "reliability": reliability,
        "agreement": summary.agreement,
        "slice_summaries": _slice_summaries(summary),
        "card_yaml": card.to_yaml(),
    }
    return _environment().get_template("report.html").render(**context)


def write_report(path: str | Path, result: CalibrationResult) -> None:
    """Render the report and write it to ``path``."""
    Path(path).write_text(render_report(result), encoding="utf-8")
