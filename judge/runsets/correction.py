"""The judge's calibration card in the run-set report: what the report says about the card
(:func:`card_summary`), and pass@1 corrected for the card's false accept and false reject rates
(Rogan-Gladen, :func:`corrected_section`), its interval from a joint bootstrap: task clusters
resampled for the observed rate, and the card's FAR and FRR drawn from their Jeffreys posteriors
Beta(k + 1/2, n - k + 1/2) given the card's confusion counts, so the interval widens by the
card's own uncertainty. It assumes the judge errs on these runs as it did on the card's gold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from calibration.card import Card
from calibration.intervals import bootstrap_sums, percentile_interval, wilson
from judge.runsets.models import (
    CardSummary,
    CorrectedRate,
    Correction,
    NoCorrection,
    RecordedRate,
)
from judge.runsets.passk import TaskCount

if TYPE_CHECKING:
    import numpy as np


class Resampling(Protocol):
    """The bootstrap's settings (a :class:`~judge.runsets.report.ReportContext` has them)."""

    n_boot: int
    seed: int
    level: float


def _interval(ci: tuple[float, float] | None) -> list[float] | None:
    return list(ci) if ci else None


def card_summary(card: Card) -> CardSummary:
    """What the report says about the judge's calibration card."""
    metrics = card.calibration.metrics.model_dump(mode="json")
    cm = metrics.get("confusion_matrix") or {}
    nested = metrics.get("metrics")
    inner: Mapping[str, Any] = nested if isinstance(nested, Mapping) else metrics
    p = card.policy
    return CardSummary(
        model=card.judge.model,
        rubric=card.judge.rubric,
        gold=card.calibration.gold,
        confusion_matrix=cm or None,
        false_accept_rate=_rate(inner.get("false_accept_rate"), cm, "fp", "tn"),
        false_reject_rate=_rate(inner.get("false_reject_rate"), cm, "fn", "tp"),
        guarantee=p.guarantee.statement,
        auto_accept_threshold=p.auto_accept_threshold,
        auto_reject_threshold=p.auto_reject_threshold,
        human_review_rule=p.human_review_rule,
        coverage=p.coverage,
        created_at=card.created_at.isoformat(),
        expires_at=card.expires_at.isoformat(),
        card_digest=card.card_digest,
    )


def _rate(recorded: Any, cm: Mapping[str, Any], err: str, right: str) -> RecordedRate | None:
    if isinstance(recorded, Mapping) and recorded.get("value") is not None:
        return RecordedRate(
            value=recorded.get("value"),
            ci95=recorded.get("ci95"),
            k=recorded.get("k"),
            n=recorded.get("n"),
        )
    if cm and (cm.get(err, 0) + cm.get(right, 0)):
        k, n = int(cm[err]), int(cm[err]) + int(cm[right])
        return RecordedRate(value=k / n, ci95=list(wilson(k, n)), k=k, n=n)
    return None


def rogan_gladen(p_obs: float, far: float, frr: float) -> float | None:
    """True pass rate from an observed judged pass rate: (p - FAR) / (1 - FAR - FRR), clipped to
    [0, 1]; None when the judge is no better than chance (1 - FAR - FRR <= 0)."""
    den = 1.0 - far - frr
    if den <= 0:
        return None
    return min(1.0, max(0.0, (p_obs - far) / den))


def corrected_section(
    counts: Sequence[TaskCount], card: Card, ctx: Resampling
) -> Correction | NoCorrection:
    """Pooled and macro pass@1 corrected for the card's FAR/FRR, with joint-bootstrap intervals."""
    cm = card.calibration.metrics.model_dump(mode="json").get("confusion_matrix") or {}
    try:
        tp, fp, tn, fn = (int(cm[key]) for key in ("tp", "fp", "tn", "fn"))
    except (KeyError, TypeError, ValueError):
        return NoCorrection(reason="the card has no binary confusion matrix")
    if fp + tn == 0 or fn + tp == 0:
        return NoCorrection(reason="the card's gold lacks one class")
    far, frr = fp / (fp + tn), fn / (fn + tp)
    out = Correction(
        far=far,
        frr=frr,
        method="Rogan-Gladen (p - FAR) / (1 - FAR - FRR); interval: task-cluster bootstrap "
        "of p jointly with FAR ~ Beta(fp + 1/2, tn + 1/2) and FRR ~ Beta(fn + 1/2, tp + 1/2) "
        "from the card's confusion counts",
        assumption="the judge errs on these runs at the rates it erred on the card's gold",
    )
    if not counts:
        return out
    import numpy as np

    pooled = np.asarray([[t.c, t.n] for t in counts], dtype=np.float64)
    means = np.asarray([[t.c / t.n, 1.0] for t in counts], dtype=np.float64)
    rng = np.random.default_rng(ctx.seed + 7919)
    far_s = rng.beta(fp + 0.5, tn + 0.5, size=ctx.n_boot)
    frr_s = rng.beta(fn + 0.5, tp + 0.5, size=ctx.n_boot)
    figures = {}
    for name, per in (("pooled", pooled), ("macro", means)):
        p_obs = float(per[:, 0].sum() / per[:, 1].sum())
        figures[name] = CorrectedRate(
            observed=p_obs,
            value=rogan_gladen(p_obs, far, frr),
            ci95=_interval(_corrected_ci(per, far_s, frr_s, ctx)) if len(counts) > 1 else None,
        )
    return out.model_copy(update=figures)


def _corrected_ci(
    per: np.ndarray, far_s: np.ndarray, frr_s: np.ndarray, ctx: Resampling
) -> tuple[float, float] | None:
    import numpy as np

    sums = bootstrap_sums(per, n_boot=ctx.n_boot, seed=ctx.seed)
    p = sums[:, 0] / sums[:, 1]
    den = 1.0 - far_s - frr_s
    ok = den > 0
    values = np.clip((p[ok] - far_s[ok]) / den[ok], 0.0, 1.0)
    return percentile_interval(values, ctx.level)
