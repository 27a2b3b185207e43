"""bench/card_validity.py and bench/card_plan.py: their cores on small synthetic judges (so
that the scripts cannot rot), and the guarantee check catching a procedure without one."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from calibration.confidence import ItemScore, ScoreSet
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
        "plan 100, planner's share",
        "plan 100, share 0.5",
        "plan 100, share 0.6",
        "plan 100, share 0.7",
    }
    assert all(0.0 <= r["coverage"] <= 1.0 for r in got.values())


def test_resume_refuses_a_run_of_other_sizes(tmp_path: Path) -> None:
    bench = _validity()
    out = tmp_path / "card_validity.json"
    out.write_text(json.dumps({"halves": 10, "draws": 10, "seed": 0, "results": []}))
    with pytest.raises(SystemExit) as exc:
        bench.main(["--resume", "--out", str(out), "--halves", "500"])
    assert exc.value.code == 2
