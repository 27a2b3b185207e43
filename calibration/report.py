"""The calibration report: one self-contained HTML file (inline CSS and SVG, no network).

Headline (judge, gold, guarantee, coverage or a plain "nothing certifies"), confusion matrix,
reliability diagram, band plot, per-slice table, metrics and the card itself.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from calibration.bands import BandPolicy
    from calibration.card import Card
    from calibration.cascade import CascadeResult
    from calibration.confidence import ScoreSet

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:62rem;padding:0 1rem;color:#212121}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;
border-bottom:1px solid #e0e0e0}
.headline{background:#f5f5f5;border-left:4px solid #1565c0;padding:.6rem 1rem}
.none{border-left-color:#c62828}.figs{display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-start}
.figs>div{flex:0 1 auto}svg{max-width:100%;height:auto}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #e0e0e0;padding:.2rem .5rem;
text-align:right}th{background:#fafafa}td:first-child,th:first-child{text-align:left}
pre{background:#fafafa;border:1px solid #e0e0e0;padding:.6rem;overflow:auto;font-size:12px}
.muted{color:#616161}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _pair(low: float | None, high: float | None) -> str:
    return f"{_fmt(low)} / {_fmt(high)}"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(_fmt(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += _flatten(value, name + ".")
        elif (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int | float) or v is None for v in value)
        ):
            out.append((name, f"[{_fmt(value[0])}, {_fmt(value[1])}]"))
        else:
            out.append((name, value))
    return out


def slice_rows(scores: ScoreSet, policy: BandPolicy | None, key: str) -> list[list[Any]]:
    """Per slice value: items, agreement of the argmax with gold, coverage and band errors."""
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
                    errors += (action == "accept") != (i.gold == "pass")
        rows.append([value, len(items), agree, decided / len(items), decided, errors])
    return rows


def render_report(
    *,
    card: Card,
    scores: ScoreSet,
    policy: BandPolicy | None,
    cascade: CascadeResult | None = None,
    summary: str = "",
    slice_key: str | None = None,
) -> str:
    """The report as one HTML string."""
    import numpy as np

    from calibration import plots
    from calibration.records import POSITIVE_LABEL

    kind = scores.kind
    gold = scores.with_gold()
    p = card.policy
    gold_ref = card.calibration.gold
    certified = p.coverage > 0
    title = f"Calibration of {card.judge.model}"
    head_cls = "headline" if certified else "headline none"
    cover = (
        f"<b>{p.coverage:.1%}</b> of the {card.calibration.gold.n} gold items are decided without "
        "review"
        if certified
        else "<b>Nothing certifies</b>: every item goes to human review"
    )
    parts = [
        f"<h1>{_e(title)}</h1>",
        f"<p class='muted'>gold {_e(gold_ref.name)} ({_e(gold_ref.digest)}),"
        f" {gold_ref.n} items; verdicts from {_e(card.judge.source)}; card "
        f"{_e(card.card_digest)}; expires {_e(card.expires_at.date())}</p>",
        f"<div class='{head_cls}'><p>{cover}. {_e(p.guarantee.statement)}</p>"
        f"<p>{_e(p.human_review_rule)}. Method {_e(p.guarantee.method)}, grid {_e(p.grid)}, "
        f"starts {_e(p.starts)}.</p></div>",
    ]
    if summary:
        parts.append(f"<pre>{_e(summary)}</pre>")

    labels = ["pass", "fail"] if kind == "binary" else ["A", "B", "tie"]
    decided = [i.decision(kind) or "undecided" for i in gold.items]
    golds = [i.gold or "" for i in gold.items]
    if "undecided" in decided:
        labels = [*labels, "undecided"]
    s = gold.scores()
    if kind == "pairwise":
        prob, outcome, what = gold.confidences(), gold.correct(), "confidence"
    else:
        prob, outcome, what = s, gold.positive(), "P(pass)"
    figs = [
        plots.confusion_matrix_svg(golds, decided, labels),
        plots.reliability_svg(prob, outcome, label=what),
    ]
    parts.append("<h2>Agreement and calibration</h2><div class='figs'>")
    parts += [f"<div>{f}</div>" for f in figs]
    parts.append("</div>")

    parts.append("<h2>Certified bands</h2>")
    if policy is not None and not policy.per_slice:
        positive = gold.correct() if kind == "pairwise" else gold.positive()
        parts.append(plots.band_svg(s, positive, policy))
    elif policy is not None:
        for value, sub in policy.per_slice.items():
            items = [i for i in gold.items if str(i.slices.get(policy.slice_key or "")) == value]
            sc = np.array([i.score for i in items])
            pos = np.array(
                [
                    (i.decision(kind) == i.gold)
                    if kind == "pairwise"
                    else i.gold == POSITIVE_LABEL[kind]
                    for i in items
                ],
                dtype=bool,
            )
            parts.append(f"<h3>{_e(policy.slice_key)} = {_e(value)}</h3>")
            parts.append(plots.band_svg(sc, pos, sub))
    band_rows = [
        [name, b.threshold, b.n, b.errors, b.upper_bound, b.alpha, b.level, b.coverage, b.reason]
        for name, b in p.bands.items()
    ]
    if band_rows:
        parts.append(
            _table(
                [
                    "band",
                    "threshold",
                    "n",
                    "errors",
                    "upper bound",
                    "alpha",
                    "level",
                    "coverage",
                    "note",
                ],
                band_rows,
            )
        )
    if cascade is not None:
        parts.append("<h3>Cascade (cheapest first)</h3>")
        parts.append(
            _table(
                [
                    "stage",
                    "judge",
                    "threshold",
                    "calibrated on",
                    "reached",
                    "decided",
                    "errors",
                    "cost/item",
                ],
                [
                    [
                        i,
                        st.judge,
                        st.policy.decide_threshold
                        if kind == "pairwise"
                        else _pair(st.policy.reject_threshold, st.policy.accept_threshold),
                        st.n_calibration,
                        st.n_reached,
                        st.n_decided,
                        st.errors,
                        st.cost_per_item,
                    ]
                    for i, st in enumerate(cascade.stages, 1)
                ],
            )
        )

    key = slice_key or (policy.slice_key if policy is not None else None)
    if key:
        parts.append(f"<h2>Per slice: {_e(key)}</h2>")
        parts.append(
            _table(
                [key, "items", "agreement", "coverage", "decided", "errors in bands"],
                slice_rows(scores, policy, key),
            )
        )

    metrics = _flatten(card.calibration.metrics)
    if metrics:
        parts.append("<h2>Metrics</h2>")
        parts.append(_table(["metric", "value"], metrics))
    parts.append("<h2>Calibration card</h2>")
    parts.append(f"<pre>{_e(card.to_yaml())}</pre>")
    body = "\n".join(parts)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>"
    )


def write_report(path: str | Path, **kwargs: Any) -> None:
    """Render the report and write it to ``path``."""
    Path(path).write_text(render_report(**kwargs), encoding="utf-8")
