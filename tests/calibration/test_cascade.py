"""Cascades: hand-worked two-stage cases, routing, cost, split vs shared pools, a simulation of
the split-mode guarantee, and the trust_or_escalate judges."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from calibration.cascade import calibrate_cascade, split_study
from calibration.confidence import ScoreSet, score_items
from calibration.intervals import clopper_pearson_upper as cp_upper
from calibration.records import VerdictRow
from judge.errors import InputError
from tests.conftest import shared_path


def _pairwise(judge: str, probs: dict[str, float], golds: dict[str, str]) -> ScoreSet:
    rows = [
        VerdictRow(item_id=k, judge=judge, verdict="A" if p >= 0.5 else "B", prob=p, gold=golds[k])
        for k, p in probs.items()
    ]
    return score_items(rows, kind="pairwise")


def _two_stage() -> tuple[ScoreSet, ScoreSet]:
    # 100 items, gold A. Cheap judge: P(A) 0.95 on items 0-59 (all right); 0.6 on 60-99, right
    # on half. Costly judge: P(A) 0.99 on every item, wrong (gold B) on items 60, 61, 63 only.
    ids = [f"i{k:03d}" for k in range(100)]
    golds = {k: "A" for k in ids}
    golds["i060"] = golds["i061"] = golds["i063"] = "B"
    cheap_probs = {k: (0.95 if n < 60 else 0.6) for n, k in enumerate(ids)}
    for n in range(60, 100, 2):  # cheap judge wrong on half of 60-99
        golds_flip = ids[n]
        cheap_probs[golds_flip] = 0.4
    costly_probs = dict.fromkeys(ids, 0.99)
    return _pairwise("cheap", cheap_probs, golds), _pairwise("costly", costly_probs, golds)


def test_shared_cascade_hand_worked() -> None:
    cheap, costly = _two_stage()
    result = calibrate_cascade(
        [cheap, costly],
        alpha_accept=0.15,
        delta=0.1,
        grid="items",
        mode="shared",
        costs={"cheap": 1.0, "costly": 10.0},
    )
    s1, s2 = result.stages
    # Stage 1 at delta/2 = 0.05: top 60 (conf 0.95) have 0 errors, U = 1 - 0.05^(1/60) = 0.0487
    # <= 0.15; the next candidate (all 100 items) holds the cheap judge's 21 errors on 60-99
    # (19 evens but i060, and i061, i063): U(21, 100) = 0.288 > 0.15. Band 0.95.
    assert s1.policy.decide_threshold == pytest.approx(0.95)
    assert s1.policy.bands["decide"].level == pytest.approx(0.05)
    assert (s1.n_calibration, s1.n_reached, s1.n_decided, s1.errors) == (100, 100, 60, 0)
    # Stage 2 sees only the 40 items stage 1 left: 3 errors in 40, U(3, 40) at 0.05 = 0.1826 >
    # 0.15: nothing certifies at stage 2 with these 40 items.
    assert cp_upper(3, 40, 0.05) == pytest.approx(0.1826, abs=1e-4)
    assert (s2.n_calibration, s2.n_reached, s2.n_decided) == (40, 40, 0)
    assert not s2.policy.certified
    assert result.coverage == pytest.approx(0.6)
    assert result.agreement == pytest.approx(1.0)
    # Cost: every item pays the cheap judge, the 40 escalated also the costly one:
    # (100 * 1 + 40 * 10) / 60 decided = 8.333.
    assert result.total_cost == pytest.approx(500.0)
    assert result.cost_per_decided == pytest.approx(500 / 60)
    assert "APPROXIMATE" in result.guarantee() and "union bound" in result.guarantee()


def test_second_stage_decides_what_the_first_left() -> None:
    cheap, costly = _two_stage()
    # alpha 0.2: U(3, 40) at 0.05 = 0.1826 <= 0.2, so the costly judge takes the other 40.
    result = calibrate_cascade(
        [cheap, costly], alpha_accept=0.2, delta=0.1, grid="items", mode="shared"
    )
    s1, s2 = result.stages
    assert (s2.n_reached, s2.n_decided, s2.errors) == (40, 40, 3)
    assert result.coverage == 1.0 and result.agreement == pytest.approx(97 / 100)
    assert result.cost_per_decided is None  # no costs given or recorded
    assert result.route({"cheap": 0.97, "costly": 0.2}) == ("cheap", "decide")
    assert result.route({"cheap": 0.6, "costly": 0.995}) == ("costly", "decide")
    assert result.route({"cheap": None, "costly": 0.995}) == ("costly", "decide")
    assert result.route({"cheap": 0.6, "costly": 0.6}) == (None, "review")
    assert (
        "stage 2 costly: calibrated on 40; over all gold: reached 40, decided 40"
        in result.summary()
    )


def test_split_mode_uses_disjoint_label_free_parts() -> None:
    cheap, costly = _two_stage()
    result = calibrate_cascade([cheap, costly], alpha_accept=0.2, delta=0.1, grid="items", seed=3)
    s1, s2 = result.stages
    # Each stage sees only its own part of the gold (about half), so pools add up to <= 100.
    assert s1.n_calibration + s2.n_calibration <= 100
    assert 30 <= s1.n_calibration <= 70
    assert "exact given the earlier thresholds" in result.guarantee()
    # Same seed, same parts; labels play no part in the assignment.
    again = calibrate_cascade([cheap, costly], alpha_accept=0.2, delta=0.1, grid="items", seed=3)
    assert again.stages[0].n_calibration == s1.n_calibration


def test_cascade_input_errors() -> None:
    cheap, _ = _two_stage()
    with pytest.raises(InputError, match="at least one judge"):
        calibrate_cascade([], alpha_accept=0.1, delta=0.1)
    with pytest.raises(InputError, match="mode"):
        calibrate_cascade([cheap], alpha_accept=0.1, delta=0.1, mode="magic")  # type: ignore[arg-type]


def test_one_stage_cascade_is_the_single_judge_band() -> None:
    cheap, _ = _two_stage()
    from calibration.bands import certify

    one = calibrate_cascade([cheap], alpha_accept=0.15, delta=0.1, grid="items", mode="shared")
    direct = certify(cheap, alpha_accept=0.15, delta=0.1, grid="items")
    assert one.stages[0].policy.decide_threshold == direct.decide_threshold
    assert one.coverage == pytest.approx(direct.coverage)


def test_split_mode_cascade_guarantee_in_simulation() -> None:
    # Two independent, perfectly calibrated judges: confidence c ~ U(0.5, 1) and P(right | c) = c,
    # so a band {c >= t} errs at (1 - t) / 2 on the items that reach it, whatever came before.
    # The cascade's error on decided items mixes the two stages; it exceeds alpha = 0.15 only if
    # a stage's threshold is below 0.7. Over 300 draws, that must happen in <= delta (+ noise).
    rng = np.random.default_rng(5)
    draws, n, alpha, delta = 300, 300, 0.15, 0.1
    bad = 0
    ids = [str(k) for k in range(n)]
    for _ in range(draws):
        gold_a = rng.uniform(size=n) < 0.5
        golds = {k: ("A" if g else "B") for k, g in zip(ids, gold_a, strict=True)}
        conf = rng.uniform(0.5, 1.0, size=(2, n))
        stages = []
        for j in range(2):
            # Judge j is right with probability c, independently of the other judge; its P(A)
            # is c when it says A and 1 - c when it says B.
            right = rng.uniform(size=n) < conf[j]
            says_a = right == gold_a
            prob_a = np.where(says_a, conf[j], 1.0 - conf[j])
            stages.append(_pairwise(f"j{j}", dict(zip(ids, prob_a, strict=True)), golds))
        result = calibrate_cascade(stages, alpha_accept=alpha, delta=delta, grid="levels:200")
        for s in result.stages:
            t = s.policy.decide_threshold
            if t is not None and (1 - t) / 2 > alpha:
                bad += 1
                break
    assert bad / draws <= delta + 3 * math.sqrt(delta * (1 - delta) / draws)


def test_split_study_is_seeded_and_bounded() -> None:
    cheap, costly = _two_stage()
    a = split_study([cheap, costly], alpha_accept=0.2, delta=0.1, grid="items", n_splits=20, seed=1)
    b = split_study([cheap, costly], alpha_accept=0.2, delta=0.1, grid="items", n_splits=20, seed=1)
    assert a == b
    assert 0.0 <= a.mean_coverage <= 1.0 and 0.0 <= a.held <= 1.0
    assert "20 random half splits" in a.summary()


def _toe() -> dict[str, ScoreSet]:
    path = shared_path("judgments/trust_or_escalate.jsonl")
    rows = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        rows.append(
            VerdictRow(
                item_id=r["item_id"],
                judge=r["judge"],
                verdict=r["verdict"],
                prob=r["prob"],
                gold=r["gold"],
            )
        )
    names = ["mistral-7b-instruct", "gpt-3.5-turbo", "gpt-4-turbo-2024-04-09"]
    return {j: score_items(rows, kind="pairwise", judge=j) for j in names}


@pytest.mark.shared
def test_trust_or_escalate_cascade_never_certifies_uncertified_stages() -> None:
    toe = _toe()
    stages = list(toe.values())
    shared = calibrate_cascade(stages, alpha_accept=0.15, delta=0.1, mode="shared")
    # Measured: mistral-7b and gpt-3.5 certify nothing at delta/3 (mistral: 5 of its 30 most
    # confident disagree); gpt-4-turbo, on all 246 items, certifies 121 (49.2%).
    assert [s.n_decided for s in shared.stages] == [0, 0, 121]
    assert shared.coverage == pytest.approx(121 / 246)
    for s in shared.stages:
        if s.policy.certified:
            b = s.policy.bands["decide"]
            assert b.upper_bound is not None and b.upper_bound <= 0.15
            assert b.level == pytest.approx(0.1 / 3)
