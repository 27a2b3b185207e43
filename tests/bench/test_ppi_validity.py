"""bench/ppi_validity.py: its core on tiny synthetic judges (so that the script cannot rot)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from calibration.records import VerdictRow
from tests.conftest import bench_module


def _bench() -> ModuleType:
    return bench_module("ppi_validity")


def _dataset(bench: ModuleType, judge_noise: float, seed: int) -> Any:
    # 60 tasks with 1-3 runs each (uneven: the task resampling pads), pass rate about 0.6.
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(60), rng.integers(1, 4, 60))
    y = (rng.random(tasks.size) < 0.6).astype(float)
    f = np.clip(y + rng.normal(0, judge_noise, y.size), 0, 1)
    return bench.Dataset("synthetic", f, y, tasks)


def test_simulate_reports_every_population_and_budget() -> None:
    bench = _bench()
    data = _dataset(bench, 0.05, 0)
    rows = bench.simulate(data, budgets=(0.2, 0.4), reps=300, seed=1)
    assert [(r["population"], r["budget"]) for r in rows] == [
        ("tasks", 0.2),
        ("tasks", 0.4),
        ("runs", 0.2),
        ("runs", 0.4),
    ]
    per_task = np.bincount(data.tasks)
    w = 1.0 / per_task[data.tasks]
    for r in rows:
        assert r["truth"] == pytest.approx(float((w * data.truth).sum() / w.sum()))
        for method in ("labels_only", "ppi", "active"):
            assert 0.85 <= r[method]["coverage"] <= 1.0
        # A nearly perfect judge: much narrower than labels only, a realised gain well above 1.
        assert r["width_ratio_ppi"] < 0.7
        assert r["gain_realised"] > 2.0
    table = bench.table(rows, "tasks", 300, {"synthetic": bench.describe(data)})
    assert table.count("\n| synthetic") == 2


def test_a_judge_at_chance_gains_nothing() -> None:
    bench = _bench()
    rng = np.random.default_rng(2)
    y = (rng.random(200) < 0.5).astype(float)
    data = bench.Dataset("chance", rng.random(200), y, np.arange(200))
    (row,) = bench.simulate(data, budgets=(0.2,), reps=400, seed=3, populations=("runs",))
    assert 0.9 <= row["width_ratio_ppi"] <= 1.01
    assert row["gain_realised"] == pytest.approx(1.0, abs=0.15)


def test_from_rows_averages_orders_and_scores_missing_verdicts_half() -> None:
    bench = _bench()
    rows = [
        VerdictRow("x", "j", "A", order="AB", gold="A"),
        VerdictRow("x", "j", "B", order="BA", gold="A"),
        VerdictRow("y", "j", None, status="parse_error", order="AB", gold="B"),
        VerdictRow("z", "j", "B", prob=0.2, gold="B", task_id="t"),
    ]
    data = bench.from_rows("d", rows, "A")
    # x: verdicts A, B -> (1 + 0) / 2; y: no usable verdict -> 0.5; z: its P(A), 0.2.
    assert data.scores.tolist() == [0.5, 0.5, 0.2]
    assert data.truth.tolist() == [1.0, 0.0, 0.0]
    assert data.n_unscored == 1
