"""Label plans for a card: strata with known probabilities, the planner's label estimate checked
by simulation, and certification on a plan's labels (valid, clamped to its stratum)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import beta, binom

from calibration.bands import upper_bound
from calibration.card_plan import (
    CardPlan,
    band_of,
    certify_planned,
    labels_needed,
    level_of,
    p_pass,
    pilot_rate,
    plan_for_card,
)
from calibration.confidence import ItemScore, ScoreSet
from judge.errors import InputError


def _pool(confidences: list[float], golds: list[str | None] | None = None) -> ScoreSet:
    """A pairwise pool: item i decides A with confidence c_i (score = c_i)."""
    golds = golds or [None] * len(confidences)
    items = tuple(
        ItemScore(f"i{k:04d}", c, "prob", 1, ("j",), gold=g, cluster=f"i{k:04d}")
        for k, (c, g) in enumerate(zip(confidences, golds, strict=True))
    )
    return ScoreSet(kind="pairwise", judge="j", items=items)


def test_the_band_stratum_is_the_top_share_with_ties() -> None:
    pool = _pool([0.99, 0.98, 0.95, 0.95, 0.9, 0.8, 0.7, 0.6, 0.55, 0.51])
    band, boundary = band_of(pool, 0.3)  # ceil(3) = 3 items, and the 0.95 tied with the third
    assert band == ["i0000", "i0001", "i0002", "i0003"] and boundary == 0.95
    with pytest.raises(InputError, match="band share must be in"):
        band_of(pool, 0.0)


def test_a_plan_draws_fixed_sizes_with_known_probabilities() -> None:
    pool = _pool([1 - k / 2000 for k in range(1000)])
    plan = plan_for_card(pool, budget=100, alpha=0.15, delta=0.1, band_share=0.4, seed=3)
    band, rest = plan.strata
    assert (band.n_items, band.n_labels, band.prob) == (400, 100, 0.25)
    assert (rest.n_items, rest.n_labels, rest.prob) == (600, 0, 0.0)
    assert band.weight == 4.0 and rest.weight is None
    assert len(plan.chosen) == 100 and set(plan.chosen) <= set(plan.band_ids)
    assert plan.boundary == pytest.approx(1 - 399 / 2000)
    # The draw is the seed's: the same plan again, another seed another draw.
    again = plan_for_card(pool, budget=100, alpha=0.15, delta=0.1, band_share=0.4, seed=3)
    other = plan_for_card(pool, budget=100, alpha=0.15, delta=0.1, band_share=0.4, seed=4)
    assert again.chosen == plan.chosen and again.id == plan.id and other.chosen != plan.chosen
    # A rest share: 20 labels from the 600 others, each with probability 1/30 (weight 30).
    mixed = plan_for_card(
        pool, budget=100, alpha=0.15, delta=0.1, band_share=0.4, rest_share=0.2, seed=3
    )
    assert [(s.n_labels, s.prob) for s in mixed.strata] == [(80, 0.2), (20, 20 / 600)]
    data = mixed.to_dict()
    assert CardPlan.from_dict(data) == replace(mixed, estimate=None, notes=())
    weights = {d["stratum"]: d["weight"] for d in data["items"]}
    assert weights == {"band": 5.0, "rest": 30.0}
    edited = dict(data, chosen=data["chosen"][:-1])
    with pytest.raises(InputError, match="edited after it was drawn"):
        CardPlan.from_dict(edited)
    with pytest.raises(InputError, match="budget"):
        plan_for_card(pool, budget=0, alpha=0.15, delta=0.1)


def test_labels_needed_is_the_binomial_arithmetic() -> None:
    pool = _pool([1 - k / 2000 for k in range(1000)])
    # No error in the band: the fewest labels that pass with 0 errors at the plan's level
    # (pairwise: delta 0.1 over 2 starts = 0.05): 1 - 0.05^(1/n) <= 0.15 first at n = 19.
    zero = labels_needed(pool, cover=0.5, alpha=0.15, delta=0.1, error=0.0)
    assert level_of("pairwise", 0.1) == 0.05 and level_of("binary", 0.1) == 0.025
    assert zero.labels == 19 == math.ceil(math.log(0.05) / math.log(0.85))
    # An assumed 6% error: the first m with P(Bin(m, 0.06) <= k*(m)) >= 0.8, brute force.
    est = labels_needed(pool, cover=0.5, alpha=0.15, delta=0.1, error=0.06)
    brute = None
    for m in range(1, 400):
        k = max([k for k in range(m) if upper_bound(k, m, 0.05) <= 0.15], default=-1)
        if k >= 0 and binom.cdf(k, m, 0.06) >= 0.8:
            brute = m
            break
    assert est.labels == brute and est.p_pass >= 0.8 and est.error_source == "given"
    assert p_pass(est.labels - 1, 0.06, alpha=0.15, level=0.05) < 0.8
    # From the scores (a calibrated judge's P(wrong) = 1 - confidence): the band's mean.
    scored = labels_needed(pool, cover=0.5, alpha=0.15, delta=0.1, error="scores")
    assert scored.error == pytest.approx(np.mean([k / 2000 for k in range(500)]))
    assert scored.error_source == "scores" and scored.band_items == 500
    # The default: alpha / 2 = 0.075, whatever the judge says of itself; the same count as the
    # rate given.
    prior = labels_needed(pool, cover=0.5, alpha=0.15, delta=0.1)
    assert prior.error == 0.075 and prior.error_source == "prior"
    given = labels_needed(pool, cover=0.5, alpha=0.15, delta=0.1, error=0.075)
    assert prior.labels == given.labels and prior.labels is not None


def test_a_pilot_gives_its_median_unbiased_upper_limit() -> None:
    # 4 errors in 40: the Clopper-Pearson upper limit at 1/2 is the median of Beta(5, 36),
    # about (4 + 2/3) / (40 + 1/3) = 0.1157 (the median of a Beta(a, b) is near
    # (a - 1/3) / (a + b - 2/3)); it lies between 4/40 and 5/40. No error: the median of
    # Beta(1, 40) = 1 - 0.5^(1/40) = 0.0172, not 0.
    rate = pilot_rate(4, 40)
    assert rate == pytest.approx(beta.ppf(0.5, 5, 36))
    assert rate == pytest.approx(14 / 121, abs=2e-3) and 0.1 < rate < 0.125
    assert pilot_rate(0, 40) == pytest.approx(1 - 0.5 ** (1 / 40))
    assert pilot_rate(40, 40) == 1.0
    pool = _pool([1 - k / 2000 for k in range(1000)])
    est = labels_needed(pool, cover=0.5, alpha=0.15, delta=0.1, error="pilot:4/40")
    assert est.error_source == "pilot" and est.error == pytest.approx(rate)
    for bad in ("pilot:5/4", "pilot:x/4", "pilot:1/0", "guess"):
        with pytest.raises(InputError):
            labels_needed(pool, cover=0.5, alpha=0.15, delta=0.1, error=bad)


def test_with_no_band_share_the_default_plan_takes_half_the_pool() -> None:
    # The prior's rate is the same for every band: the plan takes PLAN_SHARE = 0.5 and says so;
    # with the judge's own scores it still picks a share by its expected coverage.
    pool = _pool([1 - k / 2000 for k in range(1000)])
    plan = plan_for_card(pool, budget=100, alpha=0.15, delta=0.1)
    assert plan.band_share == 0.5 and len(plan.band_ids) == 500
    assert plan.estimate is not None and plan.estimate.error_source == "prior"
    assert any("fixed in advance" in note for note in plan.notes)
    chosen = plan_for_card(pool, budget=100, alpha=0.15, delta=0.1, error="scores")
    assert chosen.estimate is not None and chosen.estimate.error_source == "scores"
    assert any("chosen by the planner" in note for note in chosen.notes)


def _simulate_certified(rng: np.random.Generator, conf: np.ndarray, plan: CardPlan, m: int) -> bool:
    """Draw m labels in a calibrated judge's band (the whole pool), label them by the judge's
    own P(wrong) and run the plan's certification: whether the whole band certifies."""
    ids = sorted(int(i) for i in rng.choice(conf.size, size=m, replace=False))
    wrong = rng.random(m) < (1 - conf[ids])
    golds: list[str | None] = [None] * conf.size
    for i, w in zip(ids, wrong, strict=True):
        golds[i] = "B" if w else "A"
    drawn = replace(plan, chosen=tuple(f"i{i:04d}" for i in ids))
    policy = certify_planned(_pool(list(conf), golds), drawn, alpha_accept=0.15, delta=0.1)
    return policy.coverage == 1.0


def test_the_estimate_matches_what_happens_for_a_calibrated_judge() -> None:
    # A calibrated judge (P(wrong) = 1 - confidence, confidences 0.8-1.0, band error 0.1):
    # the planner's P(pass) at its estimate is what 300 simulated plans of that many labels
    # certify, within 3 standard errors; 25 labels fewer certify clearly less often.
    conf = np.linspace(1.0, 0.8, 800)
    pool = _pool(list(conf))
    est = labels_needed(pool, cover=1.0, alpha=0.15, delta=0.1, power=0.5, error="scores")
    assert est.error == pytest.approx(0.1, abs=1e-3) and est.labels is not None
    plan = plan_for_card(pool, budget=est.labels, alpha=0.15, delta=0.1, band_share=1.0)
    rng = np.random.default_rng(0)
    hits = [_simulate_certified(rng, conf, plan, est.labels) for _ in range(300)]
    se = math.sqrt(est.p_pass * (1 - est.p_pass) / 300)
    assert abs(np.mean(hits) - est.p_pass) <= 3 * se + 0.01
    fewer = [_simulate_certified(rng, conf, plan, est.labels - 25) for _ in range(150)]
    assert np.mean(fewer) < np.mean(hits)


def test_certifying_on_a_plan_uses_its_band_labels_and_clamps_to_its_stratum() -> None:
    # 200 items; the plan's band stratum is the top half (confidence >= 0.9005); its labels are
    # all right but two. The band certifies the stratum, never below it, coverage 0.5 of the pool.
    conf = [1 - k / 2000 for k in range(200)]
    unlabelled = _pool(conf)
    plan = plan_for_card(unlabelled, budget=60, alpha=0.15, delta=0.1, band_share=0.5, seed=1)
    chosen = set(plan.chosen)
    wrong = sorted(chosen)[:2]
    golds = [
        None if f"i{k:04d}" not in chosen else ("B" if f"i{k:04d}" in wrong else "A")
        for k in range(200)
    ]
    pool = _pool(conf, golds)
    policy = certify_planned(pool, plan, alpha_accept=0.15, delta=0.1)
    band = policy.bands["decide"]
    assert band.n == 60 and band.errors == 2
    assert band.upper_bound == pytest.approx(upper_bound(2, 60, 0.05))
    # Every labelled item is in the band: the threshold is the stratum's edge.
    assert band.threshold == plan.boundary
    assert policy.coverage == pytest.approx(0.5) and band.coverage == pytest.approx(0.5)
    assert policy.start_shares == (1.0, 0.5)
    # A label the plan did not ask for, or a planned one missing: refused.
    outside = next(f"i{k:04d}" for k in range(200) if f"i{k:04d}" not in chosen)
    extra = [("A" if f"i{k:04d}" == outside else g) for k, g in enumerate(golds)]
    with pytest.raises(InputError, match="did not choose"):
        certify_planned(_pool(conf, extra), plan, alpha_accept=0.15, delta=0.1)
    dropped = [None if f"i{k:04d}" == sorted(chosen)[5] else g for k, g in enumerate(golds)]
    with pytest.raises(InputError, match="have no label"):
        certify_planned(_pool(conf, dropped), plan, alpha_accept=0.15, delta=0.1)


def test_planned_certification_keeps_the_guarantee() -> None:
    # A judge whose error grows as its confidence falls (5% at the top to 30% at the bottom of
    # the band stratum, which holds 60% of the pool): over 300 pools and plans of 80 labels,
    # the certified band's true error rate exceeds alpha 0.15 in at most delta (0.1) of them,
    # within Monte Carlo error.
    rng = np.random.default_rng(7)
    violations = certified = 0
    draws = 300
    for _ in range(draws):
        conf = np.sort(rng.uniform(0.5, 1.0, 300))[::-1]
        p_wrong = 0.05 + 0.5 * (1.0 - conf)
        pool = _pool(list(conf))
        plan = plan_for_card(
            pool, budget=80, alpha=0.15, delta=0.1, band_share=0.6, seed=int(rng.integers(1 << 30))
        )
        chosen = {int(i[1:]) for i in plan.chosen}
        golds = [
            ("B" if rng.random() < p_wrong[k] else "A") if k in chosen else None for k in range(300)
        ]
        policy = certify_planned(_pool(list(conf), golds), plan, alpha_accept=0.15, delta=0.1)
        t = policy.bands["decide"].threshold
        if t is None:
            continue
        certified += 1
        in_band = conf >= t
        violations += float(p_wrong[in_band].mean()) > 0.15
    assert certified > 50
    assert violations / draws <= 0.1 + 3 * math.sqrt(0.09 / draws)
