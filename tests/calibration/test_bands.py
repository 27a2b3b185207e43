"""Certified bands: hand-worked fixed sequences, the minimum-gold table, the published figures on
trust_or_escalate.jsonl, and a simulation of the guarantee itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibration.bands import (
    Grid,
    certify,
    certify_arrays,
    fixed_sequence,
    min_gold,
    min_gold_table,
    share_start,
    start_size,
    upper_bound,
)
from calibration.confidence import ScoreSet, score_items
from calibration.intervals import clopper_pearson_upper as cp_upper
from calibration.intervals import hoeffding_bentkus_uppers
from calibration.records import VerdictRow
from judge.errors import InputError
from tests.conftest import shared_path


def _binary(scores: list[float], golds: list[str], slices: list[str] | None = None) -> ScoreSet:
    rows = [
        VerdictRow(
            item_id=str(i),
            judge="j",
            verdict="pass" if s >= 0.5 else "fail",
            prob=s,
            gold=g,
            slices={"repo": slices[i]} if slices else {},
        )
        for i, (s, g) in enumerate(zip(scores, golds, strict=True))
    ]
    return score_items(rows, kind="binary")


# --- Bounds and the table -------------------------------------------------------------------


def test_clopper_pearson_zero_errors_is_closed_form() -> None:
    # k = 0: U = 1 - level^(1/n). n = 29, level 0.05: 1 - 0.05^(1/29) = 0.09815 <= 0.10;
    # n = 28: 1 - 0.05^(1/28) = 0.10147 > 0.10, so 29 is the smallest n for alpha 0.10.
    assert cp_upper(0, 29, 0.05) == pytest.approx(1 - 0.05 ** (1 / 29))
    assert cp_upper(0, 29, 0.05) <= 0.10 < cp_upper(0, 28, 0.05)
    assert cp_upper(3, 3, 0.05) == 1.0 and cp_upper(0, 0, 0.05) == 1.0


def test_min_gold_table_equals_calibration_md() -> None:
    assert min_gold_table() == {
        0.10: {0: 29, 1: 46, 2: 61, 5: 103},
        0.05: {0: 59, 1: 93, 2: 124, 5: 208},
        0.02: {0: 149, 1: 236, 2: 313, 5: 523},
        0.01: {0: 299, 1: 473, 2: 628, 5: 1049},
    }


def test_start_size_is_at_least_30_and_n0() -> None:
    # alpha 0.15, level 0.1: n0 = ceil(ln 0.1 / ln 0.85) = ceil(14.17) = 15 -> start 30.
    assert min_gold(0.15, 0, 0.1) == 15 and start_size(0.15, 0.1) == 30
    # alpha 0.05, level 0.05: n0 = 59 > 30.
    assert start_size(0.05, 0.05) == 59


# --- Fixed sequences on hand-worked data ----------------------------------------------------


def test_fixed_sequence_walks_down_and_stops_at_first_failure() -> None:
    # 60 items, x = 60, 59, ..., 1; errors at ranks 31, 41, 51 (counted from the top).
    # Candidates every 10 items from 30: n = 30, 40, 50, 60 with k = 0, 1, 2, 3.
    # U at level 0.1: k=0,n=30: 1 - 0.1^(1/30) = 0.0739; k=1,n=40: 0.0938; k=2,n=50: 0.1030;
    # alpha 0.10: passes 30 and 40, fails 50, and 60 is never tested.
    x = np.arange(60, 0, -1, dtype=float)
    err = np.zeros(60, dtype=bool)
    err[[30, 40, 50]] = True
    steps = fixed_sequence(
        x, err, np.array([31.0, 21.0, 11.0, 1.0]), alpha=0.10, level=0.1, start=30
    )
    assert [(s.n, s.errors, s.passed) for s in steps] == [
        (30, 0, True),
        (40, 1, True),
        (50, 2, False),
    ]
    assert steps[0].upper_bound == pytest.approx(1 - 0.1 ** (1 / 30))
    band = certify_arrays(
        x, err, name="accept", alpha=0.10, level=0.1, grid=Grid.parse("fixed:31,21,11,1")
    )
    assert band.threshold == 21.0 and band.n == 40 and band.errors == 1


def test_first_failure_means_no_band_even_if_later_thresholds_would_pass() -> None:
    # 5 errors among the top 30, none in the next 170: top 30 fails (U(5,30) = 0.287 > 0.1) while
    # the top 200 would pass (U(5,200) = 0.046). Fixed-sequence testing stops at once: no band.
    x = np.arange(200, 0, -1, dtype=float)
    err = np.zeros(200, dtype=bool)
    err[:5] = True
    band = certify_arrays(x, err, name="accept", alpha=0.10, level=0.1, grid=Grid.parse("items"))
    assert cp_upper(5, 200, 0.1) < 0.10
    assert band.threshold is None and band.n == 0 and not band.certified
    assert "first threshold fails: 5 errors in 30" in band.reason
    assert len(band.sequences[0]) == 1


def test_too_little_gold_gives_no_band_with_reason() -> None:
    band = certify_arrays(
        np.linspace(1, 0.6, 20),
        np.zeros(20, dtype=bool),
        name="accept",
        alpha=0.1,
        level=0.05,
        grid=Grid.parse("items"),
    )
    assert band.threshold is None and "too little gold" in band.reason


def test_several_starting_points_split_the_level() -> None:
    # Top 30 hold 3 errors (U(3,30) at 0.05 = 0.24 fails); the next 90 are clean, so the top 120
    # holds 3 errors: U(3,120) at level 0.05/2 = 0.0713 <= 0.10. A single start at 30 certifies
    # nothing; starts (30, 120) test each sequence at 0.025 and the second certifies 120 items.
    x = np.arange(200, 0, -1, dtype=float)
    err = np.zeros(200, dtype=bool)
    err[[0, 1, 2]] = True
    err[120:] = True
    grid = Grid.parse("coverage:10")
    one = certify_arrays(x, err, name="accept", alpha=0.10, level=0.05, grid=grid)
    two = certify_arrays(x, err, name="accept", alpha=0.10, level=0.05, grid=grid, starts=(30, 120))
    assert one.threshold is None
    # 30 is raised to n0 = ceil(ln 0.025 / ln 0.9) = ceil(35.01) = 36 at level 0.025.
    assert two.starts == (36, 120)
    assert two.sequences[0][0].n == 40 and not two.sequences[0][0].passed
    assert two.n == 120 and two.errors == 3
    assert two.upper_bound == pytest.approx(cp_upper(3, 120, 0.025))
    assert all(
        s.upper_bound == pytest.approx(cp_upper(s.errors, s.n, 0.025)) for s in two.sequences[1]
    )


def test_hoeffding_bentkus_is_closed_form_at_zero_errors_and_never_tighter() -> None:
    # k = 0: both terms are (1 - a)^n (Hoeffding) and e (1 - a)^n (Bentkus): the bound solves
    # (1 - a)^n = level, the same as Clopper-Pearson's 1 - level^(1/n): 0.0739 for n = 30.
    hb = hoeffding_bentkus_uppers(np.array([0, 2, 5, 9, 30]), np.array([30, 30, 60, 100, 30]), 0.1)
    assert hb[0] == pytest.approx(1 - 0.1 ** (1 / 30), abs=1e-9)
    assert hb[4] == 1.0
    cps = [cp_upper(2, 30, 0.1), cp_upper(5, 60, 0.1), cp_upper(9, 100, 0.1)]
    assert all(h >= c for h, c in zip(hb[1:4], cps, strict=True))
    # k = 2, n = 30: the Bentkus term e * P(Bin(30, a) <= 2) = 0.1 at a = 0.2068 (vs CP 0.1678).
    assert hb[1] == pytest.approx(0.2068, abs=1e-3)
    assert upper_bound(2, 30, 0.1, "hoeffding-bentkus") == pytest.approx(hb[1])
    with pytest.raises(InputError, match="unknown test"):
        upper_bound(2, 30, 0.1, "wald")


def test_a_start_share_counts_the_gold_items() -> None:
    assert share_start(0.4, 123) == 50  # ceil(49.2)
    assert share_start(0.4, 100) == 40 and share_start(1.0, 7) == 7
    for bad in (0.0, 1.5, -0.2):
        with pytest.raises(InputError, match="start share must be in"):
            share_start(bad, 100)


def test_a_share_start_skips_the_confident_errors_a_30_item_start_stops_at() -> None:
    # 100 items, 3 errors among the 10 most confident, none down to rank 80, then all errors.
    # Start 30: U(3, 30) at 0.1 = 0.2093 > 0.15 and the sequence stops: nothing certifies.
    # Start share 0.5 = 50 items: U(3, 50) = 0.1288 <= 0.15, then the band grows to the last n
    # with U(3, n) <= 0.15 before the errors below rank 80: U(3, 80) = 0.0822; the 81st item is
    # an error, U(4, 81) = 0.0959, ... until U(k, n) > 0.15.
    x = np.arange(100, 0, -1, dtype=float)
    err = np.zeros(100, dtype=bool)
    err[[2, 5, 8]] = True
    err[80:] = True
    grid = Grid.parse("items")
    thirty = certify_arrays(x, err, name="accept", alpha=0.15, level=0.1, grid=grid)
    assert thirty.threshold is None and "3 errors in 30" in thirty.reason
    half = certify_arrays(
        x, err, name="accept", alpha=0.15, level=0.1, grid=grid, starts=(), start_shares=(0.5,)
    )
    assert half.start_shares == (0.5,) and half.starts == (50,)
    assert half.sequences[0][0].n == 50 and half.sequences[0][0].errors == 3
    assert half.sequences[0][0].upper_bound == pytest.approx(cp_upper(3, 50, 0.1))
    last = half.sequences[0][-1]
    assert not last.passed and last.upper_bound > 0.15
    assert half.n == last.n - 1 and cp_upper(half.errors, half.n, 0.1) <= 0.15
    assert half.n > 80
    # The same with Hoeffding-Bentkus: its first test fails (HB(3, 50) > 0.15).
    hb = certify_arrays(
        x,
        err,
        name="accept",
        alpha=0.15,
        level=0.1,
        grid=grid,
        starts=(),
        start_shares=(0.5,),
        test="hoeffding-bentkus",
    )
    assert hb.test == "hoeffding-bentkus" and hb.threshold is None


@pytest.mark.parametrize(
    "grid", ["items", "levels:50", "coverage:0.05", "fixed:0.95,0.925,0.9,0.85,0.8"]
)
def test_no_band_cuts_a_group_of_tied_scores(grid: str) -> None:
    # 100 items: 10 score 0.95, 40 score 0.9, 50 score 0.8; no error among the first 50, 20
    # among the 0.8s. Start share 0.3 = 30 items falls inside the 0.9s: the first band holding
    # at least 30 items is every item scoring >= 0.9 (50 items, 0 errors,
    # U(0, 50) at 0.1 = 1 - 0.1^(1/50) = 0.0450 <= 0.15); the next holds all 100 (20 errors,
    # U(20, 100) = 0.2583 > 0.15) and fails. Whatever the grid, every tested band and the band
    # certified hold all items of a score or none: n is 50 or 100, never 30 or 45.
    x = np.array([0.95] * 10 + [0.9] * 40 + [0.8] * 50)
    err = np.zeros(100, dtype=bool)
    err[60:80] = True
    band = certify_arrays(
        x,
        err,
        name="accept",
        alpha=0.15,
        level=0.1,
        grid=Grid.parse(grid),
        starts=(),
        start_shares=(0.3,),
    )
    assert band.starts == (30,)
    assert [(s.n, s.errors, s.passed) for s in band.sequences[0]] == [
        (50, 0, True),
        (100, 20, False),
    ]
    assert band.sequences[0][0].upper_bound == pytest.approx(1 - 0.1 ** (1 / 50))
    assert band.n == 50 and band.threshold is not None and 0.8 < band.threshold <= 0.9
    # A start of 10 items would be exactly the 0.95s' group, but starts are raised to 30.
    ten = certify_arrays(
        x, err, name="accept", alpha=0.15, level=0.1, grid=Grid.parse(grid), starts=(10,)
    )
    assert ten.starts == (30,)
    assert ten.sequences[0][0].n == 50


def test_share_and_item_starts_split_the_level_together() -> None:
    # Starts 30 items and 0.5 of 100: two sequences, each at level 0.1 / 2 = 0.05; the first
    # start is raised to n0 at 0.05 for alpha 0.15 = ceil(ln 0.05 / ln 0.85) = 19 -> 30.
    x = np.arange(100, 0, -1, dtype=float)
    err = np.zeros(100, dtype=bool)
    err[[2, 5, 8]] = True
    band = certify_arrays(
        x,
        err,
        name="accept",
        alpha=0.15,
        level=0.1,
        grid=Grid.parse("items"),
        starts=(30,),
        start_shares=(0.5,),
    )
    assert band.starts == (30, 50)
    assert band.sequences[0][0].upper_bound == pytest.approx(cp_upper(3, 30, 0.05))
    assert band.sequences[1][0].upper_bound == pytest.approx(cp_upper(3, 50, 0.05))
    assert not band.sequences[0][0].passed and band.sequences[1][0].passed
    policy = certify(
        _binary([0.9] * 40 + [0.1] * 40, ["pass"] * 40 + ["fail"] * 40),
        alpha_accept=0.15,
        delta=0.1,
        grid="items",
        starts=(),
        start_shares=(0.4,),
    )
    # 80 gold items: 0.4 -> 32 items; the accept band (40 items at 0.9) starts there.
    assert policy.start_shares == (0.4,) and policy.bands["accept"].starts == (32,)
    assert "starts at 0.4 of the items" in policy.summary()


def test_binary_accept_and_reject_bands_are_symmetric_and_disjoint() -> None:
    # 100 items at P(pass) 0.95 (3 fail), 100 at 0.05 (2 pass), 50 at 0.5 (coin flips).
    scores = [0.95] * 100 + [0.05] * 100 + [0.5] * 50
    golds = ["fail"] * 3 + ["pass"] * 97 + ["pass"] * 2 + ["fail"] * 98 + ["pass", "fail"] * 25
    sc = _binary(scores, golds)
    policy = certify(sc, alpha_accept=0.1, alpha_reject=0.1, delta=0.1, grid="items")
    acc, rej = policy.bands["accept"], policy.bands["reject"]
    # Each band at delta / 2 = 0.05: U(3, 100) = 0.0757, U(2, 100) = 0.0616, both <= 0.1.
    assert (acc.threshold, acc.n, acc.errors) == (pytest.approx(0.95), 100, 3)
    assert (rej.threshold, rej.n, rej.errors) == (pytest.approx(0.05), 100, 2)
    assert acc.level == rej.level == 0.05
    assert acc.upper_bound == pytest.approx(cp_upper(3, 100, 0.05))
    assert policy.coverage == pytest.approx(200 / 250)
    assert policy.route(0.97) == "accept" and policy.route(0.02) == "reject"
    assert policy.route(0.5) == "review"
    assert "coverage 80.0%" in policy.summary()
    # The published grid of levels lands on the level just below each score: same items.
    levels = certify(sc, alpha_accept=0.1, alpha_reject=0.1, delta=0.1, grid="levels:5000")
    assert 0.9499 < levels.bands["accept"].threshold <= 0.95  # type: ignore[operator]
    assert 0.05 <= levels.bands["reject"].threshold < 0.0501  # type: ignore[operator]
    assert levels.coverage == pytest.approx(200 / 250)


def test_pairwise_has_one_decide_band_at_full_delta() -> None:
    rows = [
        VerdictRow(item_id=str(i), judge="j", verdict="A", prob=0.9, gold="A" if i >= 3 else "B")
        for i in range(60)
    ]
    policy = certify(score_items(rows, kind="pairwise"), alpha_accept=0.15, delta=0.1)
    assert list(policy.bands) == ["decide"]
    band = policy.bands["decide"]
    assert band.level == 0.1 and band.n == 60 and band.errors == 3
    assert policy.route(0.1) == "decide" and policy.route(0.55) == "review"


def test_nothing_certifies_is_stated_plainly() -> None:
    scores = [0.9] * 40
    golds = ["fail", "pass"] * 20
    policy = certify(_binary(scores, golds), alpha_accept=0.1, alpha_reject=0.1, delta=0.1)
    assert policy.accept_threshold is None and policy.reject_threshold is None
    assert not policy.certified and policy.coverage == 0.0
    assert "nothing certifies" in policy.summary()


def test_per_slice_bonferroni_holm_and_small_slices() -> None:
    # Slice a: 100 clean items at 0.9; slice b: 110 items at 0.9 with 5 fails; slice c: 10 items.
    # c is too small to test, so a and b share the accept level 0.05: 0.025 each (Bonferroni).
    scores = [0.9] * 220
    golds = ["pass"] * 100 + ["fail"] * 5 + ["pass"] * 105 + ["pass"] * 10
    slices = ["a"] * 100 + ["b"] * 110 + ["c"] * 10
    sc = _binary(scores, golds, slices)
    bonf = certify(sc, alpha_accept=0.1, delta=0.1, slice_key="repo", correction="bonferroni")
    a, b, c = (bonf.per_slice[v].bands["accept"] for v in "abc")
    assert a.level == pytest.approx(0.025) and b.level == pytest.approx(0.025)
    # U(5, 110) at 0.025 = 0.1029 > 0.1: b fails under Bonferroni.
    assert a.certified and not b.certified
    assert c.threshold is None and "too little gold in this slice" in c.reason
    # Holm: slice a's whole sequence passed, so its 0.025 passes on to b, re-tested at 0.05:
    # U(5, 110) at 0.05 = 0.0932 <= 0.1: b certifies.
    holm = certify(sc, alpha_accept=0.1, delta=0.1, slice_key="repo", correction="holm")
    hb = holm.per_slice["b"].bands["accept"]
    assert hb.level == pytest.approx(0.05) and hb.certified and (hb.n, hb.errors) == (110, 5)
    assert holm.per_slice["a"].bands["accept"].level == pytest.approx(0.025)
    assert holm.route(0.95, "c") == "review" and holm.route(0.95, "b") == "accept"
    assert holm.coverage == pytest.approx(210 / 220)
    # With 6 fails in b, U(6, 110) at 0.05 = 0.1048: Holm fails too; a keeps its band.
    golds6 = ["pass"] * 100 + ["fail"] * 6 + ["pass"] * 104 + ["pass"] * 10
    holm6 = certify(_binary(scores, golds6, slices), alpha_accept=0.1, delta=0.1, slice_key="repo")
    assert not holm6.per_slice["b"].bands["accept"].certified
    assert holm6.per_slice["a"].bands["accept"].certified


def test_grid_parse_errors_name_the_field() -> None:
    with pytest.raises(InputError, match="unknown grid"):
        Grid.parse("magic")
    with pytest.raises(InputError, match="needs a number"):
        Grid.parse("levels:many")
    with pytest.raises(InputError, match="alpha_accept"):
        certify(_binary([0.9], ["pass"]), alpha_accept=1.5, delta=0.1)


# --- Published figures on trust_or_escalate.jsonl ---------------------------------------------


def _trust_or_escalate(judge: str) -> ScoreSet:
    # A tiny private loader until calibration.inputs lands (then: load_recorded + score_items).
    path: Path = shared_path("judgments/trust_or_escalate.jsonl")
    rows = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["judge"] == judge:
            rows.append(
                VerdictRow(
                    item_id=r["item_id"],
                    judge=r["judge"],
                    verdict=r["verdict"],
                    prob=r["prob"],
                    gold=r["gold"],
                )
            )
    return score_items(rows, kind="pairwise")


@pytest.mark.shared
def test_published_grid_certifies_about_56_percent_for_gpt4_turbo() -> None:
    scores = _trust_or_escalate("gpt-4-turbo-2024-04-09")
    assert len(scores.items) == 246 and int(scores.correct().sum()) == 189  # README: 189 of 246
    policy = certify(scores, alpha_accept=0.15, delta=0.1, grid="levels:5000")
    band = policy.bands["decide"]
    # Measured: 137 of 246 (55.7%) with 14 disagreements, U = 0.144 <= 0.15; published: ~56%
    # (CALIBRATION_RESULTS.md section 1).
    assert band.n == 137 and band.errors == 14
    assert band.coverage == pytest.approx(0.557, abs=0.001)
    assert band.upper_bound is not None and band.upper_bound <= 0.15


@pytest.mark.shared
def test_single_item_scan_from_the_30_most_confident_certifies_nothing() -> None:
    scores = _trust_or_escalate("gpt-4-turbo-2024-04-09")
    policy = certify(scores, alpha_accept=0.15, delta=0.1, grid="items")
    band = policy.bands["decide"]
    first = band.sequences[0][0]
    # 2 of the 30 most confident disagree with gold: U(2, 30) at 0.1 = 0.168 > 0.15.
    assert (first.n, first.errors) == (30, 2)
    assert first.upper_bound == pytest.approx(cp_upper(2, 30, 0.1))
    assert band.threshold is None and not policy.certified


# --- Simulation of the guarantee --------------------------------------------------------------


def _simulate(grid: str, starts: tuple[int, ...], fail_curve: str, draws: int, seed: int) -> float:
    """Share of gold draws whose certified accept band has a true false-accept rate > alpha."""
    rng = np.random.default_rng(seed)
    n, alpha, level = 400, 0.10, 0.05  # accept band of a binary rubric at delta = 0.1
    g = Grid.parse(grid)
    s = rng.uniform(0.0, 1.0, size=(draws, n))
    if fail_curve == "linear":
        # P(fail | s) = 1 - s with s ~ U(0, 1): the true risk of {s >= t} is (1 - t) / 2,
        # which exceeds alpha = 0.1 exactly when t < 0.8.
        p_fail = 1.0 - s
        true_risk = lambda t: (1.0 - t) / 2.0  # noqa: E731
    else:
        # P(fail | s) = 0.11 everywhere: every band violates, so any certification is a violation.
        p_fail = np.full_like(s, 0.11)
        true_risk = lambda t: 0.11  # noqa: E731
    fails = rng.uniform(size=s.shape) < p_fail
    violations = 0
    for d in range(draws):
        x = np.where(s[d] > 0.5, s[d], -np.inf)
        band = certify_arrays(
            x, fails[d], name="accept", alpha=alpha, level=level, grid=g, starts=starts
        )
        if band.threshold is not None and true_risk(band.threshold) > alpha:
            violations += 1
    return violations / draws


@pytest.mark.parametrize(
    ("grid", "starts", "curve"),
    [
        ("levels:500", (30,), "linear"),
        ("items", (30,), "linear"),
        ("coverage:0.02", (30, 80), "linear"),
        ("items", (30,), "flat"),
    ],
)
def test_guarantee_holds_over_1000_gold_draws(
    grid: str, starts: tuple[int, ...], curve: str
) -> None:
    draws, level = 1000, 0.05
    rate = _simulate(grid, starts, curve, draws, seed=11)
    # Violations ~ Binomial(1000, p <= 0.05): allow three standard errors of simulation noise.
    assert rate <= level + 3 * math.sqrt(level * (1 - level) / draws)


def test_simulation_can_fail_an_uncertified_rule() -> None:
    # The same draws, a rule without the guarantee (the lowest threshold whose *empirical* risk is
    # <= alpha) violates far more often than delta: the check above has teeth.
    rng = np.random.default_rng(11)
    s = rng.uniform(size=(300, 400))
    fails = rng.uniform(size=s.shape) < 1.0 - s
    bad = 0
    for d in range(300):
        order = np.argsort(-s[d])
        emp = np.cumsum(fails[d][order]) / np.arange(1, 401)
        ok = np.nonzero(emp[29:] <= 0.10)[0]
        t = s[d][order][29 + ok.max()] if ok.size else 1.0
        bad += (1 - t) / 2 > 0.10
    assert bad / 300 > 0.3
