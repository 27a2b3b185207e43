"""Prediction-powered pass rates (calibration/ppi.py): hand-worked cases, properties, a
cross-check against ppi_py (the authors' package) when it is installed, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.ppi import (
    active_mean,
    effective_labels,
    estimate_batch,
    labels_only,
    plan_covers,
    plan_labels,
    ppi_difference,
    ppi_mean,
    uncertainty_probs,
)
from judge.errors import InputError

# --------------------------------------------------------------------------- hand-worked cases


def test_labels_only_by_hand() -> None:
    # Labels 1, 1, 0, 1 on runs 0-3 (each its own task), run 4 unlabelled.
    # mean = 3/4; s^2 = (3 * 0.25^2 + 0.75^2) / 3 = 0.75 / 3 = 0.25, se = s / sqrt(4) = 0.25.
    # t(3, 0.975) = 3.1824: 0.75 -+ 0.7956 -> (-0.0456, 1.5456), clipped to (0, 1).
    r = labels_only([1, 1, 0, 1, None])
    assert r.value == pytest.approx(0.75)
    assert r.se == pytest.approx(0.25)
    assert r.df == 3
    assert r.ci95 == (0.0, 1.0)
    assert (r.n_labels, r.n_runs, r.lam, r.method) == (4, 5, 0.0, "labels_only")


def test_ppi_by_hand_lambda_one() -> None:
    # f = 0.9, 0.2, 0.8, 0.4 (four tasks, one run each); labels 1, 0 on the first two.
    # F (all runs) = 2.3 / 4 = 0.575; F_lab = 0.55; Y_lab = 0.5.
    # lambda = 1: 0.5 + (0.575 - 0.55) = 0.525.
    # Influence: alpha = (1/2)(Y - 0.5) = (.25, -.25, 0, 0);
    # beta = (1/4)(f - .575) - [lab](1/2)(f - .55)
    #      = (.08125 - .175, -.09375 + .175, .05625, -.04375) = (-.09375, .08125, .05625, -.04375)
    # psi = alpha + beta = (.15625, -.16875, .05625, -.04375); sum psi^2 = .05796875;
    # CR1 with m = 2 labelled tasks: x 2 -> .1159375; se = .340496.
    f = [0.9, 0.2, 0.8, 0.4]
    r = ppi_mean(f, [1, 0, None, None], lam=1.0)
    assert r.value == pytest.approx(0.525)
    assert r.se**2 == pytest.approx(0.1159375)
    assert r.method == "ppi"
    # Tuned: saa = .125, sab = .25 * -.09375 - .25 * .08125 = -.04375, sbb = .02046875:
    # lambda* = .04375 / .02046875 = 2.14, clipped to 1.
    assert ppi_mean(f, [1, 0, None, None]).lam == pytest.approx(1.0)


def test_ppi_by_hand_runs_population() -> None:
    # Same data, population = these 4 runs. Residual part only, for the 2 labelled runs:
    # alpha + lambda * delta = (.25 - .175, -.25 + .175) = (.075, -.075);
    # x (1 - pi) = 1 - 2/4: .5 * 2 * .075^2 = .005625; x m/(m-1) = 2 -> .01125; se = .1060660.
    r = ppi_mean([0.9, 0.2, 0.8, 0.4], [1, 0, None, None], lam=1.0, population="runs")
    assert r.value == pytest.approx(0.525)
    assert r.se == pytest.approx(math.sqrt(0.01125))


def test_macro_weights_by_hand() -> None:
    # Task a: runs 1, 0 (rate 1/2); task b: run 1 (rate 1). Macro = (0.5 + 1) / 2 = 0.75,
    # not the run mean 2/3.
    assert labels_only([1, 0, 1], task_ids=["a", "a", "b"]).value == pytest.approx(0.75)
    assert labels_only([1, 0, 1]).value == pytest.approx(2 / 3)
    # Weights given explicitly win over the macro weights.
    assert labels_only([1, 0, 1], weights=[1, 1, 2]).value == pytest.approx(0.75)


def test_difference_by_hand_and_pairing() -> None:
    # A: t1 pass, t2 fail (0.5); B: t1 fail, t2 fail (0). Difference 0.5.
    # Per task influence: t1: .5 (1 - .5) = .25, t2: -.25; CR1 x 2: 2 * .0625 * 2 = .25 -> se .5.
    d = ppi_difference(
        [0.5] * 4, [1, 0, 0, 0], ["A", "A", "B", "B"], ["t1", "t2", "t1", "t2"], lam=0
    )
    assert d.value == pytest.approx(0.5)
    assert d.se == pytest.approx(0.5)
    assert d.estimand == "pass@1[A] - pass@1[B]"
    # Identical outcomes task by task: the paired influence cancels in each task -> se 0.
    same = ppi_difference(
        [0.5] * 4, [1, 0, 1, 0], ["A", "A", "B", "B"], ["t1", "t2", "t1", "t2"], lam=0
    )
    assert same.value == 0.0 and same.se == 0.0


def test_difference_leaves_unshared_tasks_out() -> None:
    d = ppi_difference(
        [0.5] * 5, [1, 0, 0, 0, 1], ["A", "A", "B", "B", "A"], ["t1", "t2", "t1", "t2", "t3"], lam=0
    )
    assert d.value == pytest.approx(0.5)  # t3 (A only) is not compared
    assert d.n_tasks == 2 and d.n_runs == 4
    assert d.note is not None and "1 run(s)" in d.note


# --------------------------------------------------------------------------- properties


def _population(n: int, seed: int, noise: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.6).astype(float)
    f = np.clip(np.where(y == 1, 0.75, 0.3) + rng.normal(0, noise, n), 0, 1)
    return f, y


def _masked(y: np.ndarray, idx: np.ndarray) -> list[float | None]:
    chosen = set(idx.tolist())
    return [float(v) if i in chosen else None for i, v in enumerate(y)]


@pytest.mark.parametrize("population", ["tasks", "runs"])
def test_lambda_zero_is_labels_only(population: str) -> None:
    f, y = _population(300, 1)
    tasks = [i // 3 for i in range(300)]
    labels = _masked(y, np.arange(0, 300, 7))
    zero = ppi_mean(f, labels, lam=0.0, task_ids=tasks, population=population)  # type: ignore[arg-type]
    only = labels_only(labels, task_ids=tasks, population=population)  # type: ignore[arg-type]
    assert zero.value == pytest.approx(only.value)
    assert zero.ci95 == pytest.approx(only.ci95)
    assert effective_labels(zero) == pytest.approx(zero.n_labels)


def test_perfect_judge_narrows_the_interval() -> None:
    f, y = _population(1000, 2)
    labels = _masked(y, np.arange(0, 1000, 10))  # 100 labels of 1000
    only = labels_only(labels)
    perfect = ppi_mean(y, labels)  # the judge's score is the truth
    w_only = only.ci95[1] - only.ci95[0]
    w_perfect = perfect.ci95[1] - perfect.ci95[0]
    # Tasks population: the perfect judge leaves only task-sampling noise, sd/sqrt(1000)
    # against sd/sqrt(100): about sqrt(10) = 3.2 times narrower.
    assert w_perfect < 0.4 * w_only
    assert perfect.lam == pytest.approx(1.0)
    assert effective_labels(perfect) > 700
    # These runs' own pass rate is known exactly when the judge is perfect.
    assert ppi_mean(y, labels, population="runs").se == pytest.approx(0.0, abs=1e-12)


def test_judge_at_chance_gains_nothing() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(2000) < 0.5).astype(float)
    noise = rng.random(2000)  # scores unrelated to the truth
    r = ppi_mean(noise, _masked(y, np.arange(0, 2000, 10)))
    assert r.lam < 0.2
    assert effective_labels(r) == pytest.approx(r.n_labels, rel=0.05)


def test_batch_equals_public_function() -> None:
    f, y = _population(200, 4)
    tasks = np.repeat(np.arange(50), 4)
    idx = np.arange(3, 200, 9)
    lab = np.zeros(200, bool)
    lab[idx] = True
    r = ppi_mean(f, _masked(y, idx), task_ids=tasks.tolist())
    b = estimate_batch(
        f[None],
        y[None],
        lab[None],
        np.ones((1, 200)),
        np.full((1, 200), lab.sum() / 200),
        tasks[None],
        50,
    )
    assert (b.value[0], b.se[0], b.lam[0]) == pytest.approx((r.value, r.se, r.lam))


@pytest.mark.parametrize("lam", [1.0, None])
def test_unbiased_over_simulated_draws(lam: float | None) -> None:
    # One fixed population of 400 runs; 4,000 uniform samples of 40 labels; the mean estimate
    # must be within 3 Monte Carlo standard errors of the population's pass rate (lambda = 1
    # is exactly unbiased; tuned, the bias is O(1/n) and must still be invisible here).
    f, y = _population(400, 5, noise=0.25)
    reps, n = 4000, 40
    rng = np.random.default_rng(6)
    ranks = np.argsort(rng.random((reps, 400)), axis=1).argsort(axis=1)
    lab = ranks < n
    b = estimate_batch(
        f[None],
        y[None],
        lab,
        np.ones((1, 400)),
        np.full((1, 400), n / 400),
        np.arange(400)[None],
        400,
        lam=lam,
    )
    mcse = b.value.std() / math.sqrt(reps)
    assert abs(b.value.mean() - y.mean()) < 3 * mcse
    coverage = ((b.lo <= y.mean()) & (y.mean() <= b.hi)).mean()
    assert coverage > 0.93  # these runs' rate, by the (conservative) tasks interval


def test_active_sampling_is_unbiased_and_covers() -> None:
    f, y = _population(400, 7, noise=0.25)
    reps = 4000
    pi = uncertainty_probs(f, 60.0, 0.2)
    assert pi.sum() == pytest.approx(60.0) and pi.min() > 0 and pi.max() <= 1
    lab = np.random.default_rng(8).random((reps, 400)) < pi
    b = estimate_batch(
        f[None],
        y[None],
        lab,
        np.ones((1, 400)),
        pi[None],
        np.arange(400)[None],
        400,
        population="runs",
    )
    mcse = b.value.std() / math.sqrt(reps)
    assert abs(b.value.mean() - y.mean()) < 3 * mcse
    coverage = ((b.lo <= y.mean()) & (y.mean() <= b.hi)).mean()
    assert 0.93 < coverage < 0.975


def test_active_mean_needs_probs_and_uses_them() -> None:
    f, y = _population(200, 9)
    plan = plan_labels(f, 40, active=True, seed=1)
    labels = {rid: y[int(rid)] for rid in plan.chosen}
    r = active_mean(f, labels, plan.probs, run_ids=plan.run_ids)
    assert r.sampling == "weighted" and r.n_labels == len(plan.chosen)
    with pytest.raises(InputError, match="probs"):
        active_mean(f, labels, None, run_ids=plan.run_ids)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- plans


def test_uniform_plan() -> None:
    plan = plan_labels([0.5] * 20, 5, active=False, seed=3)
    assert len(plan.chosen) == 5 and set(plan.probs) == {0.25}
    assert plan_labels([0.5] * 20, 5, active=False, seed=3) == plan  # reproducible
    assert plan_covers(plan, plan.chosen).valid


def test_active_plan_probabilities_by_hand() -> None:
    # f = 0.5 (sd .5), 0.9 (sd .3), 1.0 (sd 0), 0.0 (sd 0); sum of sd = .8; budget 2, mix .2:
    # pi = 2 * (.8 * sd / .8 + .2 / 4) = 2 * (sd + .05) = 1.1, .7, .1, .1;
    # the first is capped at 1 and its .1 spread over the rest in proportion (.7 : .1 : .1):
    # 1, .7 + .1 * 7/9, .1 + .1/9, .1 + .1/9.
    pi = uncertainty_probs(np.array([0.5, 0.9, 1.0, 0.0]), 2.0, 0.2)
    assert pi == pytest.approx([1.0, 0.7 + 0.7 / 9, 0.1 + 0.1 / 9, 0.1 + 0.1 / 9])
    # Hard verdicts carry no uncertainty: the active plan is uniform.
    assert uncertainty_probs(np.array([1.0, 0.0, 1.0, 0.0]), 2.0, 0.2) == pytest.approx([0.5] * 4)


def test_plan_covers_flags_hand_picked_missing_and_edited() -> None:
    plan = plan_labels([0.1, 0.5, 0.5, 0.6, 0.9, 0.3] * 10, 12, active=True, seed=0)
    ok = plan_covers(plan, plan.chosen)
    assert ok.valid and ok.reproducible and ok.reason is None
    other = next(r for r in plan.run_ids if r not in plan.chosen)
    picked = plan_covers(plan, [*plan.chosen, other])
    assert not picked.valid and picked.unplanned == (other,)
    assert "hand-picked" in (picked.reason or "")
    missing = plan_covers(plan, plan.chosen[1:])
    assert not missing.valid and missing.unlabelled == (plan.chosen[0],)
    edited = type(plan)(**{**plan.__dict__, "chosen": (*plan.chosen[1:], other)})
    bad = plan_covers(edited, edited.chosen)
    assert not bad.valid and not bad.reproducible


# --------------------------------------------------------------------------- cross-check


def test_cross_check_with_ppi_py() -> None:
    ppi_py = pytest.importorskip("ppi_py", reason="ppi-python is not installed (optional)")
    from scipy.stats import norm

    f, y = _population(2000, 11, noise=0.25)
    idx = np.arange(0, 2000, 8)  # 250 labels
    lab = np.zeros(2000, bool)
    lab[idx] = True
    labels = _masked(y, idx)
    n, big_n = lab.sum(), 2000
    for lam in (0.0, 0.3, 1.0):
        ours = ppi_mean(f, labels, lam=lam)
        # Our lambda multiplies the mean over ALL runs; ppi_py's the mean over the unlabelled
        # ones: the same estimator when lam' = lam (1 - n/N).
        theirs = ppi_py.ppi_mean_pointestimate(y[lab], f[lab], f[~lab], lam=lam * (1 - n / big_n))
        assert ours.value == pytest.approx(float(np.ravel(theirs)[0]), abs=1e-12)
        lo, hi = ppi_py.ppi_mean_ci(y[lab], f[lab], f[~lab], lam=lam * (1 - n / big_n), alpha=0.05)
        their_se = (float(hi[0]) - float(lo[0])) / (2 * norm.ppf(0.975))
        # They use z and ddof 0, we t(n-1) and n/(n-1): equal at lambda 0 up to that factor,
        # within 2% otherwise (our variance keeps the covariance of the overlapping sets).
        if lam == 0.0:
            assert ours.se == pytest.approx(their_se * math.sqrt(n / (n - 1)), rel=1e-9)
        else:
            assert ours.se == pytest.approx(their_se, rel=0.02)
    tuned = ppi_mean(f, labels)
    theirs = ppi_py.ppi_mean_pointestimate(y[lab], f[lab], f[~lab])
    assert tuned.value == pytest.approx(float(np.ravel(theirs)[0]), abs=0.005)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "field", "words"),
    [
        (lambda: ppi_mean([0.5, 0.5], [1, 2]), "labels", "not 0/1"),
        (lambda: ppi_mean([0.5, 0.5], [1, "maybe"]), "labels", "not 0/1"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0.5]), "labels", "not 0/1"),
        (lambda: ppi_mean([0.5, 0.5], [1]), "labels", "1 labels for 2 runs"),
        (lambda: ppi_mean([0.5, 0.5], [None, None]), "labels", "no run is labelled"),
        (lambda: ppi_mean([0.5, 1.5], [1, 0]), "scores", "not in [0, 1]"),
        (lambda: ppi_mean([0.5, float("nan")], [1, 0]), "scores", "not in [0, 1]"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0], run_ids=["a", "a"]), "run_ids", "duplicate"),
        (lambda: ppi_mean([0.5, 0.5], {"x": 1}, run_ids=["a", "b"]), "labels", "unknown run"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0], probs=[0.5, 0.0]), "probs", "not in (0, 1]"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0], probs=[0.5, 1.2]), "probs", "not in (0, 1]"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0], probs=[0.5]), "probs", "1 inclusion"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0], task_ids=["a"]), "task_ids", "1 task_ids"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0], lam=1.5), "lam", "not in [0, 1]"),
        (lambda: ppi_mean([0.5, 0.5], [1, 0], task_ids=["a", "a"]), "labels", "in 1 tasks"),
        (lambda: ppi_mean([0.5] * 3, [1, None, None]), "labels", "at least 2"),
        (
            lambda: ppi_mean([0.5, 0.5], [1, 0], population="items"),  # type: ignore[arg-type]
            "population",
            "unknown",
        ),
        (lambda: plan_labels([0.5] * 4, 5, active=False, seed=0), "budget", "[1, 4]"),
        (lambda: plan_labels([0.5] * 4, 2, active=True, seed=0, mix=0), "mix", "(0, 1]"),
        (
            lambda: ppi_difference([0.5] * 2, [1, 0], ["A", "A"], ["t", "t"]),
            "treatments",
            "1 treatments",
        ),
        (
            lambda: ppi_difference(
                [0.5] * 4, [1, 0, None, None], ["A", "A", "B", "B"], ["t1", "t2", "t1", "t2"]
            ),
            "labels",
            "treatment 'B'",
        ),
        (
            lambda: ppi_difference([0.5] * 2, [1, 0], ["A", "B"], ["t1", "t2"]),
            "task_ids",
            "share no task",
        ),
    ],
)
def test_bad_input_names_the_field(call: object, field: str, words: str) -> None:
    with pytest.raises(InputError) as err:
        call()  # type: ignore[operator]
    assert err.value.field == field
    assert words in str(err.value)


def test_labels_accept_words_booleans_and_mappings() -> None:
    a = ppi_mean([0.9, 0.1, 0.5], ["pass", "FAIL", None], task_ids=None)
    b = ppi_mean([0.9, 0.1, 0.5], [True, False, None])
    c = ppi_mean([0.9, 0.1, 0.5], {"r1": 1, "r2": 0}, run_ids=["r1", "r2", "r3"])
    assert a.value == pytest.approx(b.value) == pytest.approx(c.value)


def test_one_class_labels_say_so() -> None:
    r = labels_only([1, 1, 1, None])
    assert r.se == 0.0 and r.note is not None and "same class" in r.note


def _two_treatments(seed: int) -> tuple[np.ndarray, ...]:
    # 150 tasks x 2 treatments x 2 runs; a strong task effect shared by both treatments
    # (easy tasks pass under both), B a little better; the judge sees the truth with noise.
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(150), 4)
    group = np.tile([0, 0, 1, 1], 150)
    easy = rng.random(150)[tasks]
    y = (rng.random(600) < np.clip(easy + 0.1 * group, 0, 1)).astype(float)
    f = np.clip(y + rng.normal(0, 0.3, 600), 0, 1)
    return tasks, group, y, f


def test_paired_difference_covers_and_pairing_narrows() -> None:
    tasks, group, y, f = _two_treatments(12)
    truth = y[group == 0].mean() - y[group == 1].mean()  # equal runs per task: macro = run mean
    reps = 2000
    lab = np.random.default_rng(13).random((reps, 600)) < 0.15
    kw = {"groups": group[None], "signs": (1.0, -1.0), "bounds": (-1.0, 1.0)}
    runs = estimate_batch(
        f[None],
        y[None],
        lab,
        np.ones((1, 600)),
        np.full((1, 600), 0.15),
        tasks[None],
        150,
        population="runs",
        **kw,
    )  # type: ignore[arg-type]
    cover = ((runs.lo <= truth) & (truth <= runs.hi)).mean()
    assert 0.93 < cover < 0.97
    # Tasks population, every run labelled: summing a task's contributions from both treatments
    # cancels the shared task effect; counting B's runs of a task as another task does not.
    everything = np.ones((1, 600), bool)
    paired = estimate_batch(
        f[None],
        y[None],
        everything,
        np.ones((1, 600)),
        np.ones((1, 600)),
        tasks[None],
        150,
        lam=0.0,
        **kw,
    )  # type: ignore[arg-type]
    unpaired = estimate_batch(
        f[None],
        y[None],
        everything,
        np.ones((1, 600)),
        np.ones((1, 600)),
        (tasks + 150 * group)[None],
        300,
        lam=0.0,
        **kw,
    )  # type: ignore[arg-type]
    assert paired.value[0] == pytest.approx(truth)
    assert paired.se[0] < 0.8 * unpaired.se[0]
