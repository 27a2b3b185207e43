"""Intervals: Wilson, Clopper-Pearson, and the vectorised task-cluster bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.intervals import (
    ResampleMatrix,
    bootstrap_sums,
    clopper_pearson,
    clopper_pearson_upper,
    cluster_bootstrap,
    cluster_sums,
    compact_codes,
    percentile_interval,
    ratio_interval,
    weight_blocks,
    wilson,
)

Z95 = 1.959963984540054


def test_wilson_by_hand() -> None:
    # k=8, n=10, z=1.96: p=0.8; den = 1 + z^2/n = 1.384146;
    # centre = (p + z^2/2n)/den = (0.8 + 0.192073)/1.384146 = 0.716739;
    # half = z*sqrt(p(1-p)/n + z^2/4n^2)/den = 1.96*sqrt(0.016 + 0.0096037)/1.384146 = 0.226575
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.716739 - 0.226575, abs=1e-5)
    assert hi == pytest.approx(0.716739 + 0.226575, abs=1e-5)
    # k=0, n=29: lower 0, upper = z^2/(n + z^2) = 3.8415/32.8415 = 0.11697
    assert wilson(0, 29) == pytest.approx((0.0, Z95**2 / (29 + Z95**2)), abs=1e-9)
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_wilson_bounds_are_exact_at_zero_and_n() -> None:
    # At k=0, p=0: centre = (z^2/2n)/den and half = z*sqrt(z^2/4n^2)/den = (z^2/2n)/den are
    # equal, so the lower bound is 0 and the upper z^2/(n + z^2); at k=n, by symmetry, the
    # upper bound is 1 and the lower n/(n + z^2). In floating point centre - half was 1.4e-17
    # at n=14 and centre + half 0.9999999999999999 at n=10 (cards printed the noise).
    assert wilson(0, 14) == (0.0, pytest.approx(Z95**2 / (14 + Z95**2), abs=1e-12))
    assert wilson(10, 10) == (pytest.approx(10 / (10 + Z95**2), abs=1e-12), 1.0)
    for n in range(1, 301):
        assert wilson(0, n)[0] == 0.0, n
        assert wilson(n, n)[1] == 1.0, n
        assert wilson(0, n, level=0.9)[0] == 0.0, n
        assert wilson(n, n, level=0.9)[1] == 1.0, n


def test_wilson_narrows_with_n_and_level() -> None:
    w10, w100 = wilson(5, 10), wilson(50, 100)
    assert w100[1] - w100[0] < w10[1] - w10[0]
    w90 = wilson(5, 10, level=0.90)
    assert w90[1] - w90[0] < w10[1] - w10[0]


# The table in docs/metrics.md section 4: smallest n that certifies rate <= alpha at
# delta = 0.05 with k errors observed.
CERTIFY_TABLE = {
    0.10: {0: 29, 1: 46, 2: 61, 5: 103},
    0.05: {0: 59, 1: 93, 2: 124, 5: 208},
    0.02: {0: 149, 1: 236, 2: 313, 5: 523},
    0.01: {0: 299, 1: 473, 2: 628, 5: 1049},
}


@pytest.mark.parametrize("alpha", sorted(CERTIFY_TABLE))
def test_clopper_pearson_reproduces_the_certification_table(alpha: float) -> None:
    for k, n in CERTIFY_TABLE[alpha].items():
        assert clopper_pearson_upper(k, n, 0.05) <= alpha
        assert clopper_pearson_upper(k, n - 1, 0.05) > alpha


def test_clopper_pearson_upper_by_hand() -> None:
    # k = 0: the bound solves (1 - U)^n = delta, so U = 1 - delta^(1/n) = 1 - 0.05^(1/29) = 0.0981
    assert clopper_pearson_upper(0, 29, 0.05) == pytest.approx(1 - 0.05 ** (1 / 29))
    # rule of three: about 3/n at 95%
    assert clopper_pearson_upper(0, 300, 0.05) == pytest.approx(3 / 300, rel=0.01)
    assert clopper_pearson_upper(5, 5, 0.1) == 1.0
    assert clopper_pearson_upper(0, 0, 0.1) == 1.0
    with pytest.raises(ValueError):
        clopper_pearson_upper(1, 10, 0.0)


def test_clopper_pearson_two_sided_contains_wilson_centre() -> None:
    # k = n: the lower bound solves p^n = a/2: (0.025)^(1/10) = 0.6915
    lo, hi = clopper_pearson(10, 10)
    assert (lo, hi) == (pytest.approx(0.025 ** (1 / 10)), 1.0)
    lo, hi = clopper_pearson(3, 10)
    assert lo < 0.3 < hi
    assert clopper_pearson(0, 0) == (0.0, 1.0)


def test_weight_blocks_are_multinomial_draws_and_deterministic() -> None:
    blocks = list(weight_blocks(7, 1000, seed=3))
    w = np.vstack(blocks)
    assert w.shape == (1000, 7)
    assert (w.sum(axis=1) == 7).all()  # each replicate draws 7 clusters
    # each cluster is drawn once per replicate on average
    assert w.mean() == pytest.approx(1.0)
    again = np.vstack(list(weight_blocks(7, 1000, seed=3)))
    other = np.vstack(list(weight_blocks(7, 1000, seed=4)))
    assert (w == again).all()
    assert not (w == other).all()
    assert list(weight_blocks(0, 10, 0)) == []


def test_bootstrap_sums_is_weights_times_cluster_sums() -> None:
    per = np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 2.0]])
    sums = bootstrap_sums(per, n_boot=50, seed=1)
    w = np.vstack(list(weight_blocks(3, 50, 1)))
    assert sums == pytest.approx(w @ per)


def test_resampled_sums_are_exact_and_do_not_depend_on_the_order_of_the_clusters() -> None:
    # A float product rounds its partial sums in the BLAS kernel's order; these sums must be
    # the same on any machine: whole-number columns in float32, the others in fixed point.
    rng = np.random.default_rng(3)
    n = 500
    counts = rng.integers(0, 5, n).astype(np.float64)  # whole numbers: the float32 product
    probs = rng.uniform(0, 3, n)  # sums of probabilities: fixed point
    signed = rng.normal(0, 1e6, n)  # large, of both signs
    per = np.column_stack([counts, probs, signed])
    (w,) = list(weight_blocks(n, 40, 7))
    sums = ResampleMatrix([per[:, :1], per[:, 1:]]).sums(w)
    assert sums.shape == (40, 3) and sums.dtype == np.float64
    assert sums[:, 0].tolist() == (w.astype(np.float64) @ counts).tolist()
    for j in (1, 2):
        exact = [math.fsum(float(c) * v for c, v in zip(row, per[:, j], strict=True)) for row in w]
        # Within 2 x n_clusters x 2**-53 of n_clusters x the column's largest magnitude.
        bound = 2 * n * n * float(np.abs(per[:, j]).max()) * 2.0**-53
        assert np.abs(sums[:, j] - exact).max() <= bound
    # The same clusters in another order: the same bits.
    order = rng.permutation(n)
    again = ResampleMatrix([per[order]]).sums(np.ascontiguousarray(w[:, order]))
    assert again.tobytes() == sums.tobytes()


def test_cluster_sums_and_compact_codes() -> None:
    values = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = cluster_sums(values, np.array([0, 2, 0]), 3)
    assert out.tolist() == [[6.0, 8.0], [0.0, 0.0], [3.0, 4.0]]
    codes, n = compact_codes(np.array([7, 3, 7, 9]))
    assert n == 3 and codes.tolist() == [1, 0, 1, 2]


def test_percentile_interval_ignores_nan() -> None:
    reps = np.array([np.nan, 1.0, 2.0, 3.0, 4.0, 5.0])
    lo, hi = percentile_interval(reps, level=0.5) or (0, 0)
    assert (lo, hi) == (2.0, 4.0)  # 25th and 75th percentiles of 1..5
    assert percentile_interval(np.array([np.nan])) is None


def test_ratio_interval_of_constant_ratio_is_a_point() -> None:
    # every cluster has 1 hit in 2 rows: every resample gives 0.5
    num = np.array([1, 0, 1, 0, 1, 0])
    den = np.ones(6)
    cl = np.array([0, 0, 1, 1, 2, 2])
    assert ratio_interval(num, den, cl, 200, 0) == pytest.approx((0.5, 0.5))


def test_duplicated_rows_in_a_cluster_do_not_narrow_the_interval() -> None:
    rng = np.random.default_rng(0)
    x = rng.random(40)
    one = np.arange(40)

    def mean(w: np.ndarray, values: np.ndarray) -> np.ndarray:
        return (w * values).sum(axis=1) / w.sum(axis=1)

    single = cluster_bootstrap(one, lambda w: mean(w, x), 500, seed=5)
    # the same 40 tasks, each judged twice identically (both orders): same clusters, same draws
    doubled = cluster_bootstrap(np.repeat(one, 2), lambda w: mean(w, np.repeat(x, 2)), 500, seed=5)
    assert single is not None and doubled is not None
    assert doubled == pytest.approx(single)
    # treating the 80 rows as independent (the mistake) gives a narrower interval
    naive = cluster_bootstrap(np.arange(80), lambda w: mean(w, np.repeat(x, 2)), 500, seed=5)
    assert naive is not None
    assert naive[1] - naive[0] < 0.85 * (single[1] - single[0])


def test_cluster_bootstrap_accepts_labels_and_covers_the_mean() -> None:
    labels = np.array(["t1", "t1", "t2", "t3", "t3", "t4"], dtype=object)
    x = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])

    def mean(w: np.ndarray) -> np.ndarray:
        return (w * x).sum(axis=1) / w.sum(axis=1)

    ci = cluster_bootstrap(labels, mean, 400, seed=0)
    assert ci is not None
    assert ci[0] <= x.mean() <= ci[1]
    assert ci[0] >= 0.0 and ci[1] <= 1.0
    assert cluster_bootstrap(np.array([], dtype=np.int64), mean) is None
    assert not math.isnan(ci[0])


def test_cluster_bootstrap_takes_rows() -> None:
    from calibration.inputs import to_arrays
    from calibration.records import VerdictRow

    rows = [VerdictRow(f"i{i}", "j", "pass", task_id=f"t{i // 2}") for i in range(8)]
    x = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0])

    def mean(w: np.ndarray) -> np.ndarray:
        return (w * x).sum(axis=1) / w.sum(axis=1)

    from_rows = cluster_bootstrap(rows, mean, 300, seed=2)
    from_arrays = cluster_bootstrap(to_arrays(rows), mean, 300, seed=2)
    from_labels = cluster_bootstrap([r.cluster for r in rows], mean, 300, seed=2)
    assert from_rows is not None
    assert from_rows == from_arrays == from_labels
