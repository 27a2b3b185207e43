"""bench/failures.py's measures on small inputs: purity, stability on resamples, the scale run."""

from __future__ import annotations

from judge.failures import ClusterOptions, valid_failures
from tests.conftest import bench_module

bench = bench_module("failures")
purity, scale, stability, synthetic = bench.purity, bench.scale, bench.stability, bench.synthetic


def test_purity_counts_each_clusters_most_common_category() -> None:
    assert purity([0, 0, 1, 1], ["a", "a", "b", "c"]) == 0.75
    assert purity([0, 1, 2, 3], ["a", "a", "b", "c"]) == 1.0


def test_scale_and_stability_on_a_small_synthetic_set() -> None:
    runs, truth = synthetic(200)
    assert len(truth) == 200 and len(runs) == 400
    out = scale(200, ClusterOptions())
    assert out["failed_runs"] == 200 and out["clusters"] >= 1
    assert out["ari_between_seeds_min"] == 1.0  # no group above the sample cap: no sampling
    again = stability(valid_failures(runs)[:60], ClusterOptions(), resamples=3)
    assert 0 <= again["ari_min"] <= again["ari_mean"] <= 1
