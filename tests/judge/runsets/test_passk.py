"""pass@k and pass^k on hand-worked cases (docs/metrics.md section 6)."""

from __future__ import annotations

import pytest

from judge.runsets import TaskCount, macro, mean_interval, pass_at_k, pass_hat_k, pooled_interval


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        # n=4, c=1: pass@1 = 1 - C(3,1)/C(4,1) = 1 - 3/4 = 0.25
        (4, 1, 1, 0.25),
        # n=4, c=1: pass@2 = 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5
        (4, 1, 2, 0.5),
        # n=4, c=1: pass@4 = 1 - C(3,4)/C(4,4) = 1 - 0/1 = 1 (the one success is always drawn)
        (4, 1, 4, 1.0),
        # n=4, c=2: pass@2 = 1 - C(2,2)/C(4,2) = 1 - 1/6 = 5/6
        (4, 2, 2, 5 / 6),
        # n=5, c=3: pass@2 = 1 - C(2,2)/C(5,2) = 1 - 1/10 = 0.9
        (5, 3, 2, 0.9),
        # zero successes: 1 - C(4,k)/C(4,k) = 0 for every k
        (4, 0, 1, 0.0),
        (4, 0, 3, 0.0),
        # all successes: C(0,k) = 0 for k >= 1, so pass@k = 1
        (4, 4, 1, 1.0),
        (4, 4, 4, 1.0),
    ],
)
def test_pass_at_k_hand_worked(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        # n=4, c=1: pass^1 = C(1,1)/C(4,1) = 1/4
        (4, 1, 1, 0.25),
        # n=4, c=1: pass^2 = C(1,2)/C(4,2) = 0/6 = 0
        (4, 1, 2, 0.0),
        # n=4, c=2: pass^2 = C(2,2)/C(4,2) = 1/6 (not (2/4)^2 = 0.25)
        (4, 2, 2, 1 / 6),
        # n=4, c=3: pass^2 = C(3,2)/C(4,2) = 3/6 = 0.5; pass^3 = C(3,3)/C(4,3) = 1/4
        (4, 3, 2, 0.5),
        (4, 3, 3, 0.25),
        # n=5, c=3: pass^2 = C(3,2)/C(5,2) = 3/10
        (5, 3, 2, 0.3),
        # zero successes: C(0,k) = 0
        (4, 0, 1, 0.0),
        # all successes: C(4,k)/C(4,k) = 1
        (4, 4, 1, 1.0),
        (4, 4, 4, 1.0),
    ],
)
def test_pass_hat_k_hand_worked(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_k_above_n_is_undefined_not_zero_or_extrapolated() -> None:
    # Three runs say nothing about four: both estimators are None, never mean(p)**k.
    assert pass_at_k(3, 2, 4) is None
    assert pass_hat_k(3, 2, 4) is None
    assert pass_at_k(0, 0, 1) is None


def test_invalid_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match="k must be >= 1"):
        pass_hat_k(3, 1, 0)


def test_macro_averages_tasks_and_names_the_omitted_ones() -> None:
    counts = [TaskCount("A", 4, 1), TaskCount("B", 4, 2), TaskCount("C", 2, 2)]
    # pass^2: A = C(1,2)/C(4,2) = 0; B = C(2,2)/C(4,2) = 1/6; C = C(2,2)/C(2,2) = 1
    # macro = (0 + 1/6 + 1) / 3 = 7/18
    m2 = macro(counts, "pass^k", 2, n_boot=200)
    assert m2.value == pytest.approx(7 / 18)
    assert m2.n_tasks == 3 and m2.omitted == ()
    # pass^3: A = 0, B = C(2,3)/C(4,3) = 0; C has 2 runs < 3: omitted, not counted as 0
    m3 = macro(counts, "pass^k", 3, n_boot=200)
    assert m3.value == pytest.approx(0.0)
    assert m3.n_tasks == 2 and m3.omitted == ("C",)
    assert m3.note is not None and "1 task(s) with fewer than 3" in m3.note
    # pass@3 over A, B: A = 1 - C(3,3)/C(4,3) = 1 - 1/4 = 3/4; B = 1 - C(2,3)/4 = 1; mean 7/8
    assert macro(counts, "pass@k", 3, n_boot=200).value == pytest.approx(7 / 8)
    # k = 5: no task has 5 runs: undefined, said so
    m5 = macro(counts, "pass@k", 5)
    assert m5.value is None and m5.n_tasks == 0 and len(m5.omitted) == 3
    assert m5.note is not None and "undefined" in m5.note
    assert m5.to_dict()["metric"] == "pass@5"


def test_macro_pass_at_1_equals_pass_hat_1() -> None:
    counts = [TaskCount("A", 4, 1), TaskCount("B", 3, 2)]
    # (1/4 + 2/3) / 2 = 11/24 for both
    assert macro(counts, "pass@k", 1).value == pytest.approx(11 / 24)
    assert macro(counts, "pass^k", 1).value == pytest.approx(11 / 24)


def test_bootstrap_intervals_resample_tasks() -> None:
    # Identical tasks: every resample has the same mean, so the interval is a point.
    assert mean_interval([0.5, 0.5, 0.5], n_boot=200) == pytest.approx((0.5, 0.5))
    # Two tasks at 0 and 1: resamples give means 0, 0.5 or 1, so the interval spans [0, 1].
    assert mean_interval([0.0, 1.0], n_boot=400) == pytest.approx((0.0, 1.0))
    # One task: no interval (a bootstrap over one cluster says nothing).
    assert mean_interval([0.3]) is None
    # Pooled rate: task A 4/4 and B 0/4; resamples give 0, 4/8 or 8/8.
    pooled = pooled_interval([TaskCount("A", 4, 4), TaskCount("B", 4, 0)], n_boot=400)
    assert pooled == pytest.approx((0.0, 1.0))
