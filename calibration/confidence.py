"""Per-item scores and confidence from verdict rows, and optional probability calibration.

A score is P(positive label) in [0, 1]: P(pass) for binary rubrics, P(A) for pairwise ones
(the kind's ``positive`` label in ``judge.kinds``). It comes, in order of preference
(docs/metrics.md section 3), from the verdict probability averaged over every order, sample
and prompt variant of the item, or from the vote share over orders, samples and panel members.
The decision is the argmax; the confidence is max(score, 1 - score).

Calibrators (Platt or isotonic) are fitted on a split of task clusters kept apart from the split
that picks thresholds, so that the band certification never sees the items the map was fitted on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from calibration.inputs import paused_gc
from calibration.records import VerdictRow
from judge.digests import seeded_hex
from judge.errors import InputError
from judge.kinds import SCORING, ScoringKind

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: A scoring kind (``judge.kinds``): how verdicts are scored, binary or pairwise.
Kind = ScoringKind
ScoreSource = Literal["prob", "votes"]


@dataclass(frozen=True, slots=True)
class ItemScore:
    """One item's score (P(positive)) pooled over every usable verdict row of the item."""

    item_id: str
    score: float
    #: "prob": mean verdict probability; "votes": vote share.
    source: ScoreSource
    #: How many rows were pooled (orders x samples x prompt variants x panel members).
    n_rows: int
    judges: tuple[str, ...]
    gold: str | None = None
    cluster: str = ""
    cost_usd: float | None = None
    slices: Mapping[str, Any] = field(default_factory=dict)

    def decision(self, kind: Kind) -> str | None:
        """The argmax label; a pairwise tie (binary: None) at exactly one half."""
        spec = SCORING[kind]
        if self.score > 0.5:
            return spec.positive
        if self.score < 0.5:
            return spec.negative
        return spec.half

    @property
    def confidence(self) -> float:
        """max(P(positive), 1 - P(positive)): how sure the judge is of its argmax."""
        return max(self.score, 1.0 - self.score)


@dataclass(frozen=True, slots=True)
class ScoreSet:
    """Scores of one judge (or panel) and the items it left without a usable verdict."""

    kind: Kind
    judge: str
    items: tuple[ItemScore, ...]
    #: item id -> status counts of items with no ok verdict (abstain, parse or infra errors).
    unscored: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: Description of the calibrator applied, if any.
    calibrator: str = "none"

    @property
    def n_total(self) -> int:
        """Items attempted: scored plus unscored (the denominator of coverage)."""
        return len(self.items) + len(self.unscored)

    def with_gold(self) -> ScoreSet:
        """Only the scored items that carry a gold label (the ones that can certify a band)."""
        return replace(self, items=tuple(i for i in self.items if i.gold is not None))

    def subset(self, item_ids: Iterable[str]) -> ScoreSet:
        """The same judge restricted to the given items (scored and unscored alike)."""
        keep = set(item_ids)
        return replace(
            self,
            items=tuple(i for i in self.items if i.item_id in keep),
            unscored={k: v for k, v in self.unscored.items() if k in keep},
        )

    def by_id(self) -> dict[str, ItemScore]:
        """Scored items keyed by item id."""
        return {i.item_id: i for i in self.items}

    def scores(self) -> NDArray[np.float64]:
        """Scores as a numpy array, in item order."""
        import numpy as np

        return np.array([i.score for i in self.items], dtype=float)

    def confidences(self) -> NDArray[np.float64]:
        """Confidences max(s, 1 - s) as a numpy array, in item order."""
        import numpy as np

        s = self.scores()
        return np.maximum(s, 1.0 - s) if s.size else np.zeros(0)

    def correct(self) -> NDArray[np.bool_]:
        """Whether each item's argmax decision equals its gold label (False without gold)."""
        import numpy as np

        return np.array(
            [i.gold is not None and i.decision(self.kind) == i.gold for i in self.items]
        )

    def positive(self) -> NDArray[np.bool_]:
        """Whether each item's gold label is the positive one (pass, or A)."""
        import numpy as np

        positive = SCORING[self.kind].positive
        return np.array([i.gold == positive for i in self.items])


def score_items(rows: Iterable[VerdictRow], *, kind: Kind, judge: str | None = None) -> ScoreSet:
    """Pool verdict rows into one score per item.

    ``judge`` keeps only that judge's rows (``None`` pools every judge present: a panel). An item's
    score is the mean ``prob`` when every ok row of it has one, otherwise its vote share (mixing
    the two would put probabilities and votes on one scale). Rows that are not ok never vote; an
    item with no ok row is listed in ``unscored`` with its status counts, never turned into a label.
    """
    votes = dict(SCORING[kind].votes)  # a plain dict: looked up once per row
    # The cyclic collector would walk every row and group again and again while they are
    # built, and free nothing (a third of the time on a million rows).
    with paused_gc():
        groups: dict[str, list[VerdictRow]] = defaultdict(list)
        for row in rows:
            if judge is None or row.judge == judge:
                groups[row.item_id].append(row)
        items: list[ItemScore] = []
        unscored: dict[str, dict[str, int]] = {}
        for item_id, group in groups.items():
            if len(group) == 1:
                # The common case of one row per item, pooled without the general machinery
                # (the same result as _pool on one row).
                r = group[0]
                if r.status == "ok" and (r.prob is not None or r.verdict in votes):
                    items.append(_pool_one(item_id, r, votes))
                    continue
            ok = [r for r in group if r.status == "ok" and _usable(r, kind)]
            if not ok:
                counts: dict[str, int] = defaultdict(int)
                for r in group:
                    counts[r.status] += 1
                unscored[item_id] = dict(counts)
                continue
            items.append(_pool(item_id, ok, kind))
        name = (
            judge
            if judge is not None
            else "+".join(sorted({r.judge for g in groups.values() for r in g}))
        )
        return ScoreSet(kind=kind, judge=name, items=tuple(items), unscored=unscored)


def _usable(row: VerdictRow, kind: Kind) -> bool:
    # An ok row must say something on the positive-label scale: a probability or a known label.
    return row.prob is not None or (row.verdict is not None and row.verdict in SCORING[kind].votes)


def _pool_one(item_id: str, row: VerdictRow, votes: Mapping[str, float]) -> ItemScore:
    """_pool of a single usable ok row: fsum of one value divided by one is that value."""
    if row.prob is not None:
        score, source = float(row.prob), "prob"
    else:
        score, source = float(votes[row.verdict]), "votes"  # type: ignore[index]
    return ItemScore(
        item_id=item_id,
        score=min(1.0, max(0.0, score)),
        source=source,  # type: ignore[arg-type]
        n_rows=1,
        judges=(row.judge,),
        gold=row.gold,
        cluster=row.cluster,
        cost_usd=float(row.cost_usd) if row.cost_usd is not None else None,
        slices=dict(row.slices),
    )


def _pool(item_id: str, rows: Sequence[VerdictRow], kind: Kind) -> ItemScore:
    probs = [r.prob for r in rows if r.prob is not None]
    if len(probs) == len(rows):
        score, source = math.fsum(probs) / len(probs), "prob"
    else:
        weight = SCORING[kind].votes
        votes = [weight[v] for r in rows if (v := r.verdict) is not None and v in weight]
        score, source = math.fsum(votes) / len(votes), "votes"
    return ItemScore(
        item_id=item_id,
        score=min(1.0, max(0.0, score)),
        source=source,  # type: ignore[arg-type]
        n_rows=len(rows),
        judges=tuple(sorted({r.judge for r in rows})),
        **pooled_fields(rows),
    )


class _Pooled(Protocol):
    """What an item pooled from several parts reads of each (a verdict row, a member's item)."""

    @property
    def gold(self) -> str | None: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def slices(self) -> Mapping[str, Any]: ...
    @property
    def cluster(self) -> str: ...


def pooled_fields(parts: Sequence[_Pooled]) -> dict[str, Any]:
    """The gold, cluster, cost and slices of an item pooled from ``parts`` (an item's rows, or
    a panel's members' items): the gold they agree on (none when they conflict: a data error
    upstream, kept as no label rather than a guess), the first part's cluster, their total
    cost (None when none is known) and their slices (the first value of each key)."""
    golds = {p.gold for p in parts if p.gold is not None}
    costs = [p.cost_usd for p in parts if p.cost_usd is not None]
    slices: dict[str, Any] = {}
    for p in parts:
        for key, value in p.slices.items():
            slices.setdefault(key, value)
    return {
        "gold": next(iter(golds)) if len(golds) == 1 else None,
        "cluster": parts[0].cluster,
        "cost_usd": math.fsum(costs) if costs else None,
        "slices": slices,
    }


# --- Calibration of scores into probabilities -------------------------------------------------


class Calibrator(Protocol):
    """A monotone map fitted on held-apart gold: raw score -> calibrated P(positive)."""

    name: str

    def transform(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Map raw scores to calibrated probabilities (rounded to SCORE_DECIMALS)."""
        ...

    def params(self) -> dict[str, Any]:
        """The fitted map as plain numbers (stored in the card so routing can apply it)."""
        ...


#: Decimals of a calibrated score. numpy's exp and log differ in their last bit from one
#: processor to another (with or without AVX-512), so a calibrator's outputs are rounded to
#: these: a threshold certified on calibrated scores (the items and coverage grids pick one of
#: them) is then the same number on every machine, and routing computes the same scores.
SCORE_DECIMALS = 12


def _calibrated(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    out: NDArray[np.float64] = np.round(scores, SCORE_DECIMALS)
    return out


@dataclass
class _Platt:
    a: float
    b: float
    name: str = "platt"

    def transform(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        import numpy as np

        z = self.a * logits(scores) + self.b
        return _calibrated(1.0 / (1.0 + np.exp(-z)))

    def params(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "map": "1 / (1 + exp(-(a * logit(score) + b)))"}


@dataclass
class _Isotonic:
    #: The fitted step points; between them the map interpolates linearly, beyond them it is
    #: flat (what sklearn's IsotonicRegression(out_of_bounds="clip").predict computes).
    x: list[float]
    y: list[float]
    name: str = "isotonic"

    def transform(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        import numpy as np

        if not self.x:
            return _calibrated(np.asarray(scores, dtype=float))
        return _calibrated(np.interp(np.asarray(scores, dtype=float), self.x, self.y))

    def params(self) -> dict[str, Any]:
        return {
            "x": list(self.x),
            "y": list(self.y),
            "map": "linear interpolation of (x, y), clipped at the ends",
        }


#: Probabilities are clipped to [EPS, 1 - EPS] before the logit (recorded ones reach 1 - 1e-7,
#: vote shares reach 0 and 1), so every log-odds is finite and their order is kept.
EPS = 1e-9


def logit(p: float) -> float:
    """log(p / (1 - p)), p clipped to [EPS, 1 - EPS]."""
    q = min(1.0 - EPS, max(EPS, p))
    return math.log(q / (1.0 - q))


def logits(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`logit` of every element of an array."""
    import numpy as np

    q = np.clip(p, EPS, 1 - EPS)
    out: NDArray[np.float64] = np.log(q / (1 - q))
    return out


def _fit_platt(scores: NDArray[np.float64], positive: NDArray[np.bool_]) -> Calibrator:
    from sklearn.linear_model import LogisticRegression

    # Platt scaling on the logit of the score: a sigmoid of the judge's own log-odds.
    model = LogisticRegression(C=1e6, max_iter=1000)
    model.fit(logits(scores).reshape(-1, 1), positive.astype(int))
    return _Platt(a=float(model.coef_[0][0]), b=float(model.intercept_[0]))


def _fit_isotonic(scores: NDArray[np.float64], positive: NDArray[np.bool_]) -> Calibrator:
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip", increasing=True)
    model.fit(scores, positive.astype(float))
    return _Isotonic(
        x=[float(v) for v in model.X_thresholds_], y=[float(v) for v in model.y_thresholds_]
    )


#: Calibration methods by name (a registry, not a chain of ifs).
CALIBRATORS = {"platt": _fit_platt, "isotonic": _fit_isotonic}

#: Significant digits of a fitted number. A fit's last digits depend on the machine's floating
#: point (BLAS kernels, SIMD), so every number of a fitted map (a calibrator's, a panel's model)
#: is rounded to these when it is fitted: the card holds, and certification and routing apply,
#: the same map on every machine.
FIT_DIGITS = 10


def fitted_number(value: float) -> float:
    """``value`` rounded to FIT_DIGITS significant digits."""
    return float(f"{value:.{FIT_DIGITS}g}")


def fitted_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A fitted map's parameters (its ``params()``) with every float, in lists too, rounded to
    FIT_DIGITS significant digits; other values as they are."""

    def rounded(value: Any) -> Any:
        if isinstance(value, float):
            return fitted_number(value)
        if isinstance(value, list | tuple):
            return [rounded(v) for v in value]
        return value

    return {key: rounded(value) for key, value in params.items()}


#: Rebuild a fitted calibrator from the parameters a card stores (its ``params()``).
CALIBRATOR_FROM_PARAMS: dict[str, Any] = {
    "platt": lambda p: _Platt(a=float(p["a"]), b=float(p["b"])),
    "isotonic": lambda p: _Isotonic(x=[float(v) for v in p["x"]], y=[float(v) for v in p["y"]]),
}


def calibrator_from_params(method: str, params: Mapping[str, Any]) -> Calibrator:
    """The calibrator a card describes (KeyError for an unknown method or missing field)."""
    built: Calibrator = CALIBRATOR_FROM_PARAMS[method](params)
    return built


def fit_calibrator(fit_set: ScoreSet, method: str) -> Calibrator:
    """Fit a Platt or isotonic map of score -> P(positive) on the gold of ``fit_set``; the map
    is rebuilt from its parameters rounded by :func:`fitted_params`, as routing rebuilds it
    from the card."""
    fitter = CALIBRATORS.get(method)
    if fitter is None:
        raise InputError(
            f"unknown calibrator {method!r}",
            field="calibrator",
            hint=f"use one of {sorted(CALIBRATORS)}",
        )
    gold = fit_set.with_gold()
    positive = gold.positive()
    if len(gold.items) < 10 or positive.all() or not positive.any():
        raise InputError(
            f"cannot fit a {method} calibrator on {len(gold.items)} gold items with one class only "
            "or fewer than 10 items",
            field="calibrator",
            hint="use --calibrator none or more gold",
        )
    fitted = fitter(gold.scores(), positive)
    return calibrator_from_params(method, fitted_params(fitted.params()))


def apply_calibrator(scores: ScoreSet, calibrator: Calibrator) -> ScoreSet:
    """The same items with calibrated scores (source and counts unchanged)."""
    if not scores.items:
        return replace(scores, calibrator=calibrator.name)
    new = calibrator.transform(scores.scores())
    items = tuple(
        replace(item, score=float(min(1.0, max(0.0, s))))
        for item, s in zip(scores.items, new, strict=True)
    )
    return replace(scores, items=items, calibrator=calibrator.name)


def split_clusters(scores: ScoreSet, *, fraction: float, seed: int) -> tuple[ScoreSet, ScoreSet]:
    """Split items by task cluster into (fit part, threshold part), seeded and label-free.

    ``fraction`` of the clusters go to the fit part. The assignment depends only on the cluster
    ids and the seed (a keyed hash), so it is reproducible and never looks at labels.
    """
    if not 0.0 < fraction < 1.0:
        raise InputError(f"split fraction must be in (0, 1), got {fraction}", field="fraction")
    clusters = sorted({i.cluster or i.item_id for i in scores.items} | set(scores.unscored))
    ranked = sorted(clusters, key=lambda c: seeded_hex(seed, c))
    n_fit = max(1, min(len(ranked) - 1, round(fraction * len(ranked))))
    fit_clusters = set(ranked[:n_fit])
    fit_ids = [i.item_id for i in scores.items if (i.cluster or i.item_id) in fit_clusters]
    fit_ids += [k for k in scores.unscored if k in fit_clusters]
    rest = [i.item_id for i in scores.items if (i.cluster or i.item_id) not in fit_clusters]
    rest += [k for k in scores.unscored if k not in fit_clusters]
    return scores.subset(fit_ids), scores.subset(rest)


def calibrated_split(
    scores: ScoreSet, method: str, *, fraction: float = 0.5, seed: int = 0
) -> tuple[ScoreSet, Calibrator]:
    """Fit ``method`` on one cluster split; return the other split, calibrated, and the map."""
    fit_part, threshold_part = split_clusters(scores, fraction=fraction, seed=seed)
    calibrator = fit_calibrator(fit_part, method)
    return apply_calibrator(threshold_part, calibrator), calibrator
