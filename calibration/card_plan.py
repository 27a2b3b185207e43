"""Label plans for a card: which unlabelled items people should label so that a band can be
certified, and how many labels a band of a given coverage needs.

Why a plan can put the labels where they help and stay valid. A band's coverage is a share of
*all* items (labelled or not), so it needs no label; its error rate needs labels only of items
inside it. The plan therefore splits the unlabelled pool by the judge's confidence alone (no
label is read): the *band stratum*, the ``band_share`` most confident items, and the rest. It
draws a simple random sample of fixed size in each stratum, every item of a stratum with the
same known probability (weight = 1 / probability), by a seeded draw that the plan records.

Certification with a plan (:func:`certify_planned`) uses the labelled items of the band stratum
only, and never certifies a band reaching below the stratum's lowest confidence: for any
threshold at or above it, the labelled items in the band are a uniform random sample of the
pool's items in the band, themselves i.i.d. draws from the judge's population given the band,
so the Clopper-Pearson test of calibration.bands is exact as it is. A certified threshold is
then lowered to the lowest pool score above the next labelled one (to the stratum's edge when
all labelled items are in): the band holds the same labelled items, which are as much a uniform
sample of the wider pool band (which items were drawn was fixed before any label).
The labels of the rest stratum (``rest_share`` of the budget; none by default) serve estimates
over the whole pool with their weights, never the band. Labels already seen never choose the
next items: the whole draw is made at once, before any label.

The plan's scan is fixed with it: two starting points, the whole labelled stratum and its more
confident half, the level split between them (``PLAN_STARTS``).

How many labels (:func:`labels_needed`): to certify the band holding the top ``cover`` of the
pool, with the labels drawn from that band, m labels pass the test at the whole band when the
errors k ~ Binomial(m, r) fall at or below k*(m), the most errors Clopper-Pearson allows in m at
the test's level; r is the band's error rate, which no label has measured yet. The estimate is
the smallest m with P(pass) >= ``power``. Where r comes from (``error``):

- ``"prior"`` (the default): r = alpha / 2 (``PRIOR_ERROR_SHARE``). With no label the band's
  error is unknown; a band erring at alpha or more never certifies, whatever the budget, so the
  rates worth planning for lie in [0, alpha), and the planner takes the middle of that range
  rather than any number the judge says about itself. It is a planning figure, not a
  measurement: labels grow like 1 / (alpha - r)^2, so a band erring at 0.8 alpha needs several
  times what this says (BENCHMARKS.md 11d: on Trust-or-Escalate's bands, erring at 0.45-0.93
  alpha, 1.3 to 5 times, and more than 10 times for the one near alpha; the judge's own
  probabilities said 8 to more than 60 times too few). Since this rate is the same for
  every band, it cannot choose a band: a plan with no ``band_share`` then takes ``PLAN_SHARE``,
  fixed in advance (11b: shares fixed in advance certified as much as the planner's choice).
- a pilot (``"pilot:K/M"``, :func:`pilot_rate`): K errors in a first M labels drawn at random
  in the band (a plan of M labels, labelled first): r = their Clopper-Pearson upper limit at
  one half (about (K + 0.7) / M: a median-unbiased estimate that never says 0). Certify with
  a second plan drawn from the pool without the pilot's items, so that the pilot's labels,
  which chose its size, never enter its test.
- a rate given (``error=0.1``: e.g. a similar judge's measured error in its band).
- ``"scores"``: r = mean(1 - confidence) over the band, the judge's own probabilities taken at
  face value: exact for a calibrated judge, and 8 to more than 60 times too few labels on the
  LLM judges of BENCHMARKS.md 11b. Kept for calibrated scorers; with it, a plan with no
  ``band_share`` takes the share it expects to certify most (``SHARES``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from calibration.bands import DEFAULT_TEST, BandPolicy, BandResult, certify, upper_bound
from calibration.confidence import ItemScore, Kind, ScoreSet
from judge.digests import canonical_json, sha256_hex
from judge.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: A planned card's starting points, shares of the labelled band-stratum items: the whole
#: stratum first, its more confident half as the fallback (the level split between the two).
PLAN_STARTS: tuple[float, ...] = (1.0, 0.5)
#: The grid a planned card scans: the labelled items' own scores.
PLAN_GRID = "items"
#: Band shares the planner weighs when none is given (error model "scores" only).
SHARES: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(4, 20))
#: The band share of a plan given none, under an error model that is the same for every band.
PLAN_SHARE = 0.5
#: The default planning error rate, as a share of alpha (see the module docstring).
PRIOR_ERROR_SHARE = 0.5
#: The error models by name (a number is a rate given).
ERROR_MODELS: tuple[str, ...] = ("prior", "scores")


@dataclass(frozen=True, slots=True)
class PlanStratum:
    """One stratum of a plan: its items, how many are labelled, each one's probability."""

    name: str
    n_items: int
    n_labels: int
    #: Every item of the stratum is labelled with this probability (n_labels / n_items).
    prob: float
    #: Confidence range of the stratum's items (None: empty).
    low: float | None
    high: float | None

    @property
    def weight(self) -> float | None:
        """1 / prob: how many pool items each labelled one stands for (None: none labelled)."""
        return 1.0 / self.prob if self.prob > 0 else None


@dataclass(frozen=True, slots=True)
class CoverageEstimate:
    """How many labels certify the band holding ``cover`` of the pool, by the planner."""

    cover: float
    #: The band's error rate assumed, and where it came from ("prior", "scores", "pilot" or
    #: "given").
    error: float
    error_source: str
    #: The fewest labels drawn in the band with P(pass) >= power (None: not within max_labels).
    labels: int | None
    power: float
    #: P(pass) at ``labels`` (or at max_labels when unreachable).
    p_pass: float
    #: Items of the pool in the band: more labels than this cannot be drawn from this pool.
    band_items: int = 0


@dataclass(frozen=True)
class CardPlan:
    """Which items of an unlabelled pool to label for a card, and how they were chosen."""

    kind: Kind
    judge: str
    #: The pool: every item the judge was asked about, in a fixed order.
    item_ids: tuple[str, ...]
    #: The items to label (ascending pool order).
    chosen: tuple[str, ...]
    #: "band" first, then "rest".
    strata: tuple[PlanStratum, ...]
    #: The items of the band stratum (pool order) and its lowest confidence.
    band_ids: tuple[str, ...]
    boundary: float
    band_share: float
    budget: int
    seed: int
    alpha: float
    delta: float
    starts: tuple[float, ...] = PLAN_STARTS
    grid: str = PLAN_GRID
    #: The planner's estimate for the chosen band, when it chose the band.
    estimate: CoverageEstimate | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def id(self) -> str:
        """The plan's identity: the same draw from the same pool always has the same id."""
        return "cardplan-" + sha256_hex(canonical_json(self._core()))[:16]

    def _core(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "judge": self.judge,
            "item_ids": list(self.item_ids),
            "chosen": list(self.chosen),
            "band_ids": list(self.band_ids),
            "boundary": self.boundary,
            "band_share": self.band_share,
            "budget": self.budget,
            "seed": self.seed,
            "starts": list(self.starts),
            "grid": self.grid,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON form (what ``judge review plan --for-card --out`` writes)."""
        chosen = set(self.chosen)
        band = set(self.band_ids)
        by_name = {s.name: s for s in self.strata}
        return {
            "id": self.id,
            "design": "stratified by the judge's confidence (band stratum, rest), a simple "
            "random sample of fixed size in each, drawn at once before any label",
            **self._core(),
            "alpha": self.alpha,
            "delta": self.delta,
            "strata": [
                {
                    "name": s.name,
                    "n_items": s.n_items,
                    "n_labels": s.n_labels,
                    "prob": s.prob,
                    "weight": s.weight,
                    "low": s.low,
                    "high": s.high,
                }
                for s in self.strata
            ],
            "items": [
                {
                    "item_id": i,
                    "stratum": "band" if i in band else "rest",
                    "prob": by_name["band" if i in band else "rest"].prob,
                    "weight": by_name["band" if i in band else "rest"].weight,
                }
                for i in self.chosen
                if i in chosen
            ],
            "estimate": None
            if self.estimate is None
            else {
                "cover": self.estimate.cover,
                "error": self.estimate.error,
                "error_source": self.estimate.error_source,
                "labels": self.estimate.labels,
                "power": self.estimate.power,
                "p_pass": self.estimate.p_pass,
            },
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CardPlan:
        """A plan read back from its JSON form; InputError when it is not one, or was edited
        (its id must be its content's)."""
        try:
            strata = tuple(
                PlanStratum(
                    s["name"], int(s["n_items"]), int(s["n_labels"]), float(s["prob"]),
                    s["low"], s["high"],
                )
                for s in data["strata"]
            )  # fmt: skip
            plan = cls(
                kind=data["kind"],
                judge=str(data["judge"]),
                item_ids=tuple(str(i) for i in data["item_ids"]),
                chosen=tuple(str(i) for i in data["chosen"]),
                strata=strata,
                band_ids=tuple(str(i) for i in data["band_ids"]),
                boundary=float(data["boundary"]),
                band_share=float(data["band_share"]),
                budget=int(data["budget"]),
                seed=int(data["seed"]),
                alpha=float(data["alpha"]),
                delta=float(data["delta"]),
                starts=tuple(float(s) for s in data["starts"]),
                grid=str(data["grid"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"not a card label plan: {err!r}", field="plan") from err
        if data.get("id") != plan.id:
            raise InputError(
                f"the plan's id {data.get('id')!r} is not its content's ({plan.id}): it was "
                "edited after it was drawn",
                field="plan",
                hint="draw a new plan with `judge review plan --for-card`",
            )
        return plan


# --- The planner ----------------------------------------------------------------------------


def _confidences(scores: ScoreSet) -> tuple[list[str], NDArray[np.float64]]:
    import numpy as np

    ids = [i.item_id for i in scores.items]
    return ids, np.asarray(scores.confidences(), dtype=float)


def band_of(scores: ScoreSet, share: float) -> tuple[list[str], float]:
    """The items of the top ``share`` of the pool by confidence (items tied with the last one
    included; unscored items count in the pool and are never in it), and its lowest confidence."""
    import numpy as np

    if not 0.0 < share <= 1.0:
        raise InputError(f"a band share must be in (0, 1], got {share}", field="band_share")
    ids, conf = _confidences(scores)
    if not ids:
        raise InputError("the judge scored no item of the pool", field="scores")
    want = max(1, min(len(ids), math.ceil(share * scores.n_total - 1e-9)))
    boundary = float(np.sort(conf)[::-1][want - 1])
    return [i for i, c in zip(ids, conf, strict=True) if c >= boundary], boundary


def _max_errors(m: int, level: float, alpha: float, test: str) -> int:
    """The most errors in m that still certify alpha at level (-1: none)."""
    lo, hi = -1, m - 1  # upper_bound(k, m) rises with k; find the last k with bound <= alpha
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if upper_bound(mid, m, level, test) <= alpha:
            lo = mid
        else:
            hi = mid - 1
    return lo


def p_pass(m: int, error: float, *, alpha: float, level: float, test: str = DEFAULT_TEST) -> float:
    """P(m labels drawn in a band of error rate ``error`` pass the test): P(Bin(m, r) <= k*)."""
    from scipy.stats import binom

    k = _max_errors(m, level, alpha, test)
    return float(binom.cdf(k, m, error)) if k >= 0 else 0.0


def band_error(
    scores: ScoreSet, share: float, error: str | float = "prior", *, alpha: float | None = None
) -> tuple[float, str]:
    """The band's error rate assumed by the planner: ``"prior"``, alpha * PRIOR_ERROR_SHARE
    (``alpha`` is then needed); ``"scores"``, the judge's own mean P(wrong) over the band; or
    the rate given (see the module docstring)."""
    if not isinstance(error, str):
        if not 0.0 <= float(error) < 1.0:
            raise InputError(f"an assumed error rate must be in [0, 1), got {error}", field="error")
        return float(error), "given"
    if error.startswith("pilot:"):
        counts = error.removeprefix("pilot:").split("/")
        try:
            errors, labels = (int(c) for c in counts)
        except ValueError:
            raise InputError(
                f"a pilot is ERRORS/LABELS, got {error.removeprefix('pilot:')!r}", field="pilot"
            ) from None
        return pilot_rate(errors, labels), "pilot"
    if error not in ERROR_MODELS:
        raise InputError(
            f"unknown error model {error!r}",
            field="error",
            hint="prior, scores, pilot:ERRORS/LABELS or a rate",
        )
    if error == "prior":
        if alpha is None or not 0.0 < alpha < 1.0:
            raise InputError(f"the prior error model needs alpha in (0, 1), got {alpha}")
        return alpha * PRIOR_ERROR_SHARE, "prior"
    band, _ = band_of(scores, share)
    by_id = scores.by_id()
    return math.fsum(1.0 - by_id[i].confidence for i in band) / len(band), "scores"


def pilot_rate(errors: int, labels: int) -> float:
    """The band's error rate from a pilot: ``errors`` wrong among ``labels`` drawn at random in
    the band, as their one-sided Clopper-Pearson upper limit at one half (the median of the
    rates the pilot is consistent with; about (errors + 0.7) / labels, never 0)."""
    if isinstance(labels, bool) or isinstance(errors, bool) or not 0 <= errors <= labels:
        raise InputError(
            f"a pilot needs 0 <= errors <= labels, got {errors} of {labels}", field="pilot"
        )
    if labels < 1:
        raise InputError("a pilot needs at least one label", field="pilot")
    return upper_bound(errors, labels, 0.5) if errors < labels else 1.0


def level_of(kind: Kind, delta: float, n_starts: int = len(PLAN_STARTS)) -> float:
    """The level one test of a planned card runs at: the band's share of delta (a binary
    rubric's accept band: delta / 2), split over the plan's starting points."""
    return (delta if kind == "pairwise" else delta / 2) / max(1, n_starts)


def labels_needed(
    scores: ScoreSet,
    *,
    cover: float,
    alpha: float,
    delta: float,
    power: float = 0.8,
    error: str | float = "prior",
    max_labels: int = 5000,
    test: str = DEFAULT_TEST,
) -> CoverageEstimate:
    """The fewest labels, drawn in the band holding ``cover`` of the pool, that certify it with
    probability >= ``power`` at the planned card's level (see the module docstring)."""
    if not 0.0 < power < 1.0:
        raise InputError(f"power must be in (0, 1), got {power}", field="power")
    from scipy.stats import binom

    rate, source = band_error(scores, cover, error, alpha=alpha)
    level = level_of(scores.kind, delta)
    band, _ = band_of(scores, cover)
    chance, k = 0.0, -1
    # k*(m), the most errors m labels may hold and pass, never falls as m grows: walk m up,
    # raising k* as the bound allows, and stop at the first m with P(Bin(m, r) <= k*) >= power.
    for m in range(1, max_labels + 1):
        while k + 1 < m and upper_bound(k + 1, m, level, test) <= alpha:
            k += 1
        chance = float(binom.cdf(k, m, rate)) if k >= 0 else 0.0
        if chance >= power:
            return CoverageEstimate(cover, rate, source, m, power, chance, len(band))
    return CoverageEstimate(cover, rate, source, None, power, chance, len(band))


def expected_coverage(
    scores: ScoreSet,
    share: float,
    budget: int,
    *,
    alpha: float,
    delta: float,
    error: str | float = "prior",
) -> float:
    """The coverage a plan with this band share is expected to certify, by the planner's model:
    the whole band when its test passes, else its more confident half when that one passes."""
    band, _ = band_of(scores, share)
    level = level_of(scores.kind, delta)
    m = min(budget, len(band))
    whole = p_pass(m, band_error(scores, share, error, alpha=alpha)[0], alpha=alpha, level=level)
    half_m = max(1, math.ceil(m * PLAN_STARTS[-1]))
    half_rate = band_error(scores, share / 2, error, alpha=alpha)[0]
    half = p_pass(half_m, half_rate, alpha=alpha, level=level)
    covered = len(band) / scores.n_total
    return whole * covered + (1 - whole) * half * covered / 2


def plan_for_card(
    scores: ScoreSet,
    *,
    budget: int,
    alpha: float,
    delta: float,
    seed: int = 0,
    band_share: float | None = None,
    rest_share: float = 0.0,
    error: str | float = "prior",
) -> CardPlan:
    """Draw the items to label for a card from an unlabelled pool's scores (see the module
    docstring). ``band_share`` None: ``PLAN_SHARE``, fixed in advance, or with ``error``
    "scores" the share the planner expects to certify most with this budget (from ``SHARES``);
    either way the plan carries the planner's label estimate for its band."""
    import numpy as np

    n_pool = scores.n_total
    if isinstance(budget, bool) or not 1 <= int(budget) <= n_pool:
        raise InputError(
            f"budget {budget!r} is not a whole number in [1, {n_pool}]", field="budget"
        )
    if not 0.0 <= rest_share < 1.0:
        raise InputError(f"rest share must be in [0, 1), got {rest_share}", field="rest_share")
    notes: list[str] = []
    estimate = None
    if band_share is None:
        band_share, why = _planned_share(scores, budget, alpha=alpha, delta=delta, error=error)
        notes.append(why)
        estimate = labels_needed(scores, cover=band_share, alpha=alpha, delta=delta, error=error)
    band, boundary = band_of(scores, band_share)
    band_set = set(band)
    pool = [i.item_id for i in scores.items] + list(scores.unscored)
    rest = [i for i in pool if i not in band_set]
    m_band, m_rest = _stratum_sizes(len(band), len(rest), budget, rest_share, notes)
    rng = np.random.default_rng(seed)
    picked_band = {band[i] for i in rng.permutation(len(band))[:m_band]}
    picked_rest = {rest[i] for i in rng.permutation(len(rest))[:m_rest]} if rest else set()
    chosen = tuple(i for i in pool if i in picked_band or i in picked_rest)
    return CardPlan(
        kind=scores.kind,
        judge=scores.judge,
        item_ids=tuple(pool),
        chosen=chosen,
        strata=_strata(scores, band, rest, m_band, m_rest, boundary),
        band_ids=tuple(i for i in pool if i in band_set),
        boundary=boundary,
        band_share=float(band_share),
        budget=int(budget),
        seed=int(seed),
        alpha=alpha,
        delta=delta,
        estimate=estimate,
        notes=tuple(notes),
    )


def _planned_share(
    scores: ScoreSet, budget: int, *, alpha: float, delta: float, error: str | float
) -> tuple[float, str]:
    """The band share a plan draws for when none is given, and the note that says why."""
    if error == "scores":
        ranked = [
            (expected_coverage(scores, s, budget, alpha=alpha, delta=delta, error=error), s)
            for s in SHARES
        ]
        _, share = max(ranked)
        return share, (
            f"band share {share:g} chosen by the planner (error model {error}): the "
            "most coverage it expects from this budget"
        )
    return PLAN_SHARE, (
        f"band share {PLAN_SHARE:g}, fixed in advance (the error assumed is the same for "
        "every band, so it cannot choose one; give --cover to choose)"
    )


def _stratum_sizes(
    n_band: int, n_rest: int, budget: int, rest_share: float, notes: list[str]
) -> tuple[int, int]:
    """Labels drawn in the band stratum and in the rest: ``rest_share`` of the budget in the
    rest, the others in the band; what the band cannot hold goes to the rest (noted)."""
    m_rest = min(n_rest, round(rest_share * budget))
    m_band = min(n_band, budget - m_rest)
    if m_band < budget - m_rest:
        m_rest = min(n_rest, budget - m_band)
        notes.append(f"the band stratum holds {n_band} items: the other labels go to the rest")
    return m_band, m_rest


def _strata(
    scores: ScoreSet,
    band: Sequence[str],
    rest: Sequence[str],
    m_band: int,
    m_rest: int,
    boundary: float,
) -> tuple[PlanStratum, PlanStratum]:
    """The band and rest strata: their sizes, the labels drawn in each and their confidences."""
    by_id = scores.by_id()
    rest_conf = [by_id[i].confidence for i in rest if i in by_id]
    return (
        PlanStratum(
            "band", len(band), m_band, m_band / len(band), boundary,
            max(by_id[i].confidence for i in band),
        ),
        PlanStratum(
            "rest", len(rest), m_rest, m_rest / len(rest) if rest else 0.0,
            min(rest_conf) if rest_conf else None, max(rest_conf) if rest_conf else None,
        ),
    )  # fmt: skip


# --- Certifying with a plan -----------------------------------------------------------------


def _band_x(item: ItemScore, name: str) -> float | None:
    """An item's score on a band's scale (larger: deeper in the band), None: never in it."""
    if name == "accept":
        return item.score if item.score > 0.5 else None
    if name == "reject":
        return -item.score if item.score < 0.5 else None
    return item.confidence


def _widen(band: BandResult, labelled: ScoreSet, pool: ScoreSet, boundary: float) -> BandResult:
    """The band's threshold lowered to the lowest pool score above the next labelled one (or
    to the stratum's boundary when every labelled item is in the band): the same labelled
    items, so the same test, of the widest pool band they are a uniform sample of."""
    if band.threshold is None:
        return band
    sign = -1.0 if band.name == "reject" else 1.0
    edge = boundary if band.name != "reject" else -(1.0 - boundary)
    xs = sorted(
        (x for i in labelled.items if (x := _band_x(i, band.name)) is not None), reverse=True
    )
    if band.n >= len(xs):
        lowest = edge
    else:
        below = xs[band.n]  # the first labelled item left out of the band
        above = [x for i in pool.items if (x := _band_x(i, band.name)) is not None and x > below]
        lowest = max(edge, min(above))
    return replace(band, threshold=sign * lowest)


def certify_planned(
    scores: ScoreSet,
    plan: CardPlan,
    *,
    alpha_accept: float,
    alpha_reject: float | None = None,
    delta: float,
    test: str = DEFAULT_TEST,
) -> BandPolicy:
    """Certify ``scores`` (the pool's, gold on the labelled items) with the plan's labels:
    the labelled items of the band stratum only, the plan's scan, thresholds clamped to the
    stratum's lowest confidence. Coverage is the band's share of the whole pool. InputError
    when the labels are not the plan's (an item labelled outside the plan, or a planned item
    of the band stratum left unlabelled: labels missing not at random would bias the test)."""
    labelled = {i.item_id for i in scores.with_gold().items}
    chosen = set(plan.chosen)
    pool = set(plan.item_ids)
    if set(i.item_id for i in scores.items) - pool:
        raise InputError(
            "the verdicts hold items that are not in the plan's pool",
            field="plan",
            hint="plan and calibrate on the same verdicts",
        )
    extra = sorted(labelled - chosen)
    if extra:
        raise InputError(
            f"{len(extra)} labelled item(s) the plan did not choose, e.g. {extra[0]!r}: a planned "
            "card is certified on the plan's labels only",
            field="plan",
        )
    band = [i for i in plan.band_ids if i in chosen]
    missing = sorted(set(band) - labelled)
    if missing:
        raise InputError(
            f"{len(missing)} item(s) the plan chose in the band stratum have no label, e.g. "
            f"{missing[0]!r}: label every planned item (labels missing not at random would bias "
            "the test)",
            field="plan",
        )
    policy = certify(
        scores.subset(band).with_gold(),
        alpha_accept=alpha_accept,
        alpha_reject=alpha_reject,
        delta=delta,
        grid=plan.grid,
        starts=(),
        start_shares=plan.starts,
        test=test,
    )
    tested = scores.subset(band).with_gold()
    bands = {name: _widen(b, tested, scores, plan.boundary) for name, b in policy.bands.items()}
    n_pool = scores.n_total
    covered = {name: _pool_count(scores, b) for name, b in bands.items()}
    bands = {
        name: replace(b, coverage=covered[name] / n_pool if n_pool else 0.0, n_total=n_pool)
        for name, b in bands.items()
    }
    # The bands' n and errors are the labels tested; coverage is the pool's.
    pool_coverage = sum(covered.values()) / n_pool if n_pool else 0.0
    return replace(policy, bands=bands, n_total=n_pool, covered=pool_coverage)


def _pool_count(scores: ScoreSet, band: BandResult) -> int:
    if band.threshold is None:
        return 0
    t = band.threshold
    if band.name == "accept":
        return sum(1 for i in scores.items if i.score > 0.5 and i.score >= t)
    if band.name == "reject":
        return sum(1 for i in scores.items if i.score < 0.5 and i.score <= t)
    return sum(1 for i in scores.items if i.confidence >= t)
