"""bench/card_validity.py and bench/card_plan.py: their cores on small synthetic judges (so
that the scripts cannot rot), and the guarantee check catching a procedure without one."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from calibration.confidence import ItemScore, ScoreSet
from calibration.intervals import clopper_pearson_uppers
from tests.conftest import bench_module


def _validity() -> ModuleType:
    return bench_module("card_validity")


def _population(bench: ModuleType, n: int, seed: int) -> object:
    # Two judges; P(A) confident and mostly right on the first 60%, coin flips on the rest.
    rng = np.random.default_rng(seed)
    gold = np.where(rng.random(n) < 0.5, "A", "B")
    sets = {}
    for judge, noise in (("a", 0.05), ("b", 0.1)):
        items = []
        for k in range(n):
            sure = k < 0.6 * n
            right = rng.random() > (noise if sure else 0.5)
            p = 0.97 if sure else 0.6
            p_a = p if (gold[k] == "A") == right else 1 - p
            items.append(ItemScore(f"i{k}", p_a, "prob", 1, (judge,), gold=str(gold[k])))
        sets[judge] = ScoreSet(kind="pairwise", judge=judge, items=tuple(items))
    scorers = [bench.Scorer("a", ("a",)), bench.Scorer("panel logodds", ("a", "b"), "logodds")]
    return bench.Population("synthetic", [f"i{k}" for k in range(n)], sets, scorers)


def test_both_checks_report_coverage_agreement_and_held() -> None:
    bench = _validity()
    pop = _population(bench, 300, 0)
    for scorer in pop.scorers:  # type: ignore[attr-defined]
        r = bench.run_one(pop, scorer, "share 0.4", halves=20, draws=40, seed=1)
        assert r["halves"]["splits"] == 20 and r["population"]["draws"] == 40
        # The confident 60% are right 90-95% of the time: the band certifies near 0.6.
        assert 0.4 <= r["population"]["coverage"] <= 0.65
        assert r["population"]["agreement"] >= 0.85 and r["population"]["held"] >= 0.9
        assert 0.3 <= r["halves"]["coverage"] <= 0.65
    table = bench.table([r])
    assert "| synthetic (300) | panel logodds | share 0.4 |" in table


def test_the_plan_bench_compares_plans_with_random_labels() -> None:
    bench = bench_module("card_plan")
    validity = _validity()
    pop = _population(validity, 300, 2)
    scores = pop.scores["a"]  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    got = bench.compare(scores, False, 4, rng)
    assert set(got) == {
        "random 100",
        "random 300",
        "plan 100, share chosen from the judge's scores",
        "plan 100, default (share 0.5)",
        "plan 100, share 0.6",
        "plan 100, share 0.7",
    }
    assert all(0.0 <= r["coverage"] <= 1.0 for r in got.values())


def test_the_planner_check_sets_a_pilot_and_the_default_against_what_happens() -> None:
    # The synthetic judge's top 60% err about 5%: a pilot of 40 in the band at cover 0.5 sees
    # about 2 errors, a rate well below alpha, so most pilots give an estimate; the quartiles of
    # the labels they ask for are positive and ordered.
    bench = bench_module("card_plan")
    pop = _population(_validity(), 300, 2)
    scores = pop.scores["a"]  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    r = bench.pilot_estimates(scores, 0.5, 20, rng)
    assert r["reps"] == 20 and r["labels"] == 40
    assert r["never"] is not None and r["never"] < 0.5
    assert 0 < r["q25"] <= r["median"] <= r["q75"]


def test_resume_refuses_a_run_of_other_sizes(tmp_path: Path) -> None:
    bench = _validity()
    out = tmp_path / "card_validity.json"
    out.write_text(json.dumps({"halves": 10, "draws": 10, "seed": 0, "results": []}))
    with pytest.raises(SystemExit) as exc:
        bench.main(["--resume", "--out", str(out), "--halves", "500"])
    assert exc.value.code == 2


def test_the_oracle_is_the_largest_band_whose_bound_clears_alpha() -> None:
    # 100 items at confidences 0.99 (40 items, 2 wrong), 0.9 (30 items, 3 wrong), 0.7 (30, 15
    # wrong) and one unscored item (-inf, never decided, still counted: 101 items). Bands of
    # distinct scores, Clopper-Pearson at 0.1: U(2, 40) = 0.1276 and U(5, 70) = 0.1285 clear
    # 0.15, U(20, 100) = 0.2607 does not; the oracle is the 70 items, coverage 70 / 101. The
    # band at 75% (76 items) is the first band holding that many: all 100 (20 wrong).
    bench = _validity()
    conf = np.array([0.99] * 40 + [0.9] * 30 + [0.7] * 30 + [-np.inf])
    wrong = np.zeros(101, dtype=bool)
    wrong[[0, 1]] = True
    wrong[[40, 41, 42]] = True
    wrong[70:85] = True
    got = bench.oracle(conf, wrong)
    assert got["n"] == 70 and got["errors"] == 5
    assert got["coverage"] == pytest.approx(70 / 101)
    assert got["upper"] == pytest.approx(0.1285, abs=5e-4)
    assert (got["target_n"], got["target_errors"]) == (100, 20)
    assert got["target_upper"] == pytest.approx(0.2607, abs=5e-4)


def test_labels_needed_is_the_binomial_arithmetic() -> None:
    # An error of 0.135 in a band of 75% of N items: the bound clears 0.15 once the band holds
    # about z^2 p (1 - p) / (alpha - p)^2 = 1.28^2 * 0.135 * 0.865 / 0.015^2 ~ 850 items, N ~
    # 1,130 (the exact binomial asks a little more); an error at or above alpha never clears.
    bench = _validity()
    n = bench.labels_needed(0.135)
    assert 1100 <= n <= 1400
    band = np.ceil(0.75 * n)
    assert clopper_pearson_uppers(np.array([round(0.135 * band)]), np.array([band]), 0.1)[0] <= 0.15
    assert bench.labels_needed(0.15) is None and bench.labels_needed(0.2) is None
    # No error: a band of 15 clears (U(0, 14) = 1 - 0.1^(1/14) = 0.152, U(0, 15) = 0.142), and
    # 19 is the first N with ceil(0.75 N) >= 15.
    assert bench.labels_needed(0.0) == 19
