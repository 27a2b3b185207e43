"""Drift: an anchor set re-judged on demand, EWMA control charts over the checks, and an alarm
that marks the card stale.

A judge's card holds while the judge behind it does not change. A hosted model id that is an
alias (``gpt-4o``) can be moved to new weights by the provider; even a dated id can change
with a provider's serving stack. ``check_drift`` re-judges a fixed *anchor set* (gold cases
with labels) with the card's judge, in a fresh temporary store, so that every check pays for
real calls instead of reading the cache, and records two statistics per check:

- ``p_pass_mean``: the mean P(pass) (or P(A)) over the anchor cases;
- ``agreement``: the share of anchor cases whose verdict (the side of 0.5) matches the label.

Control chart: EWMA (exponentially weighted moving average; Roberts 1959, Montgomery's
*Introduction to Statistical Quality Control* ch. 9) with weight ``lam`` = 0.2 and limits at
``width`` = 3 standard deviations. The first ``baseline`` checks (default 1) set the centre
(their mean) and the scale: for P(pass), the standard error of the anchor mean at baseline,
sd(P(pass) per case) / sqrt(n); for agreement, sqrt(a0 (1 - a0) / n); each at least
``min_sigma`` = 0.01. After the baseline, at check t (t = 1, 2, ...):

    z_t = lam x_t + (1 - lam) z_{t-1},  z_0 = centre
    limits = centre +- width * sigma * sqrt(lam / (2 - lam) * (1 - (1 - lam)^(2t)))

An alarm is a z_t outside its limits on either chart; it marks the card stale through the
store's stale flag (the same flag audits set), and routing with it is then refused until the
judge is recalibrated. With these parameters a sustained move of the anchor mean by one
baseline standard error is flagged after about 10 checks on average, a move of two after 4
(Lucas and Saccucci 1990, table 3), while a judge that does not change never moves at all: a
pinned model at temperature 0 gives the same verdicts, so false alarms come only from a
provider that is not deterministic.
"""

from __future__ import annotations

import json
import math
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from calibration.card import Card
from judge.digests import short_hash, utcnow
from judge.errors import InputError
from judge.judging import JudgeOptions, judge_cases
from judge.kinds import for_case
from judge.probes.stats import verdict_of
from judge.probes.workflow import load_gold_cases, pooled_scores
from judge.routing import card_digest, check_card_before_judging, save_card
from judge.rubrics import load_rubric
from judge.store import Store

LAMBDA = 0.2
WIDTH = 3.0
MIN_SIGMA = 0.01


@dataclass(frozen=True)
class ChartParams:
    """The EWMA chart's parameters (see the module)."""

    lam: float = LAMBDA
    width: float = WIDTH
    baseline: int = 1
    min_sigma: float = MIN_SIGMA


@dataclass(frozen=True)
class ChartPoint:
    """One check on one chart."""

    value: float
    ewma: float | None
    centre: float | None
    lower: float | None
    upper: float | None
    #: Part of the baseline (no limits yet).
    baseline: bool
    out: bool


def ewma_chart(
    values: Sequence[float], centre: float, sigma: float, params: ChartParams = ChartParams()
) -> list[ChartPoint]:
    """EWMA of ``values`` (the checks after the baseline) against ``centre`` +- the
    time-varying limits."""
    lam, sigma = params.lam, max(sigma, params.min_sigma)
    z = centre
    out = []
    for t, x in enumerate(values, start=1):
        z = lam * x + (1 - lam) * z
        half = params.width * sigma * math.sqrt(lam / (2 - lam) * (1 - (1 - lam) ** (2 * t)))
        lower, upper = centre - half, centre + half
        out.append(ChartPoint(x, z, centre, lower, upper, False, not lower <= z <= upper))
    return out


@dataclass(frozen=True)
class CheckStats:
    """What one check measured."""

    n: int
    n_scored: int
    p_pass_mean: float | None
    p_pass_sd: float | None
    agreement: float | None


def check_stats(
    scores: Mapping[str, float], labels: Mapping[str, str], kinds: Mapping[str, str]
) -> CheckStats:
    """Mean P(pass) and agreement with the labels over the scored anchor cases."""
    scored = [cid for cid in kinds if cid in scores]
    values = [scores[c] for c in scored]
    agree = [verdict_of(scores[c], kinds[c]) == labels.get(c) for c in scored]
    return CheckStats(
        n=len(kinds),
        n_scored=len(scored),
        p_pass_mean=statistics.fmean(values) if values else None,
        p_pass_sd=statistics.pstdev(values) if len(values) > 1 else 0.0 if values else None,
        agreement=sum(agree) / len(agree) if agree else None,
    )


@dataclass
class Charts:
    """Both charts over a card's checks on one anchor set, oldest first."""

    p_pass: list[ChartPoint] = field(default_factory=list)
    agreement: list[ChartPoint] = field(default_factory=list)

    @property
    def alarm(self) -> bool:
        """The latest check is out of control on either chart."""
        last = [c[-1] for c in (self.p_pass, self.agreement) if c]
        return any(p.out for p in last)


def charts(checks: Sequence[CheckStats], params: ChartParams = ChartParams()) -> Charts:
    """Both charts over ``checks``: the first ``params.baseline`` set centre and scale."""
    usable = [c for c in checks if c.p_pass_mean is not None and c.agreement is not None]
    p_pass = [c.p_pass_mean for c in usable if c.p_pass_mean is not None]
    agreement = [c.agreement for c in usable if c.agreement is not None]
    k = params.baseline
    base = usable[:k]
    out = Charts()
    for p, a in zip(p_pass[:k], agreement[:k], strict=True):
        out.p_pass.append(ChartPoint(p, None, None, None, None, True, False))
        out.agreement.append(ChartPoint(a, None, None, None, None, True, False))
    if len(base) < k or len(usable) == k:
        return out
    n = max(1, round(statistics.fmean(c.n_scored for c in base)))
    p0 = statistics.fmean(p_pass[:k])
    sd0 = statistics.fmean(c.p_pass_sd or 0.0 for c in base)
    a0 = statistics.fmean(agreement[:k])
    out.p_pass += ewma_chart(p_pass[k:], p0, sd0 / math.sqrt(n), params)
    out.agreement += ewma_chart(agreement[k:], a0, math.sqrt(a0 * (1 - a0) / n), params)
    return out


@dataclass
class DriftCheck:
    """One drift check, as recorded."""

    id: str
    card_digest: str
    anchor: str
    anchor_digest: str
    model: str
    rubric: str
    checked_at: str
    stats: CheckStats
    charts: Charts
    alarm: bool
    #: Why the card was marked stale (None without an alarm).
    reason: str | None
    params: ChartParams

    def to_json(self) -> dict[str, Any]:
        """The check as stored (JSON)."""
        return {
            "id": self.id,
            "card_digest": self.card_digest,
            "anchor": self.anchor,
            "anchor_digest": self.anchor_digest,
            "model": self.model,
            "rubric": self.rubric,
            "checked_at": self.checked_at,
            "stats": asdict(self.stats),
            "p_pass_chart": asdict(self.charts.p_pass[-1]) if self.charts.p_pass else None,
            "agreement_chart": asdict(self.charts.agreement[-1]) if self.charts.agreement else None,
            "alarm": self.alarm,
            "reason": self.reason,
            "params": asdict(self.params),
        }


def stored_stats(row: dict[str, Any]) -> CheckStats:
    """A stored check's statistics."""
    return CheckStats(**json.loads(row["json"])["stats"])


def _reason(charts: Charts, params: ChartParams) -> str:
    parts = []
    for name, chart in (
        ("mean P(pass)", charts.p_pass),
        ("agreement with the anchor labels", charts.agreement),
    ):
        p = chart[-1]
        if p.out:
            parts.append(
                f"{name}: EWMA {p.ewma:.4f} outside [{p.lower:.4f}, {p.upper:.4f}] "
                f"(centre {p.centre:.4f}; this check {p.value:.4f})"
            )
    return (
        f"drift alarm on the anchor set (EWMA lambda {params.lam:g}, {params.width:g} sigma): "
        + "; ".join(parts)
    )


def check_drift(
    store: Store,
    anchor: str | Path,
    card: Card,
    *,
    options: JudgeOptions | None = None,
    params: ChartParams = ChartParams(),
) -> DriftCheck:
    """Re-judge the anchor set with the card's judge (fresh calls: a temporary store), record
    the check in ``store``, chart it against the earlier checks of this card on this anchor
    set, and mark the card stale on an alarm."""
    cases, labels, anchor_digest = load_gold_cases(anchor)
    unlabelled = [c.id for c in cases if c.id not in labels]
    if unlabelled:
        raise InputError(
            f"{len(unlabelled)} anchor case(s) have no gold label (first: {unlabelled[0]})",
            file=str(anchor),
            hint="an anchor set is a gold file: every case needs its label",
        )
    ref = card.judge.rubric
    if ref.id is None or ref.version is None:
        raise InputError(
            "the card binds no rubric (recorded verdicts): there is no judge to re-run",
            field="card",
        )
    rubric = load_rubric(f"{ref.id}@{ref.version}")
    model = card.judge.model
    check_card_before_judging(card, [model], rubric.digest)
    digest = save_card(store, card)
    with (
        tempfile.TemporaryDirectory(prefix="judge-drift-") as tmp,
        Store(Path(tmp) / "check.db") as fresh,
    ):
        summary = judge_cases(
            fresh, cases, rubric=rubric, models=[model], options=options, source=str(anchor)
        )
    kinds = {c.id: for_case(c.kind).scoring for c in cases}
    scores = pooled_scores([(o.step.case.id, o.judgment) for o in summary.outcomes], kinds)
    stats = check_stats(scores, labels, kinds)
    history = [stored_stats(r) for r in store.drift_checks(digest, anchor_digest)]
    drawn = charts([*history, stats], params)
    alarm = drawn.alarm
    reason = _reason(drawn, params) if alarm else None
    checked_at = utcnow().isoformat()
    check = DriftCheck(
        id="d-" + short_hash(f"{digest}|{anchor_digest}|{checked_at}|{len(history)}"),
        card_digest=digest,
        anchor=Path(anchor).name,
        anchor_digest=anchor_digest,
        model=model,
        rubric=rubric.ref,
        checked_at=checked_at,
        stats=stats,
        charts=drawn,
        alarm=alarm,
        reason=reason,
        params=params,
    )
    store.save_drift_check(
        {
            "id": check.id,
            "card_digest": digest,
            "anchor_digest": anchor_digest,
            "model": model,
            "rubric": rubric.ref,
            "checked_at": checked_at,
            "n": stats.n,
            "n_scored": stats.n_scored,
            "p_pass_mean": stats.p_pass_mean,
            "agreement": stats.agreement,
            "alarm": int(alarm),
            "json": json.dumps(check.to_json()),
        }
    )
    if alarm and reason is not None:
        store.mark_card_stale(digest, reason)
    return check


def drift_history(
    store: Store, card: Card, anchor_digest: str | None = None, params: ChartParams = ChartParams()
) -> tuple[list[dict[str, Any]], Charts]:
    """A card's stored checks (optionally on one anchor set) and their charts."""
    rows = store.drift_checks(card_digest(card), anchor_digest)
    return rows, charts([stored_stats(r) for r in rows], params)
