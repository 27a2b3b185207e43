"""First-bad-decision calibration: hand-worked step accuracy, baselines and conformal step sets,
the guarantee over random splits, and the published baselines of the shared Who&When runs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import yaml

from calibration.card import GoldRef, JudgeSection
from calibration.fbd import (
    StepRun,
    baselines,
    build_step_card,
    certify_step_set,
    load_recorded_steps,
    parse_step_card,
    route_steps,
    set_summary,
    split_check,
    step_accuracy,
    step_run,
    step_set,
)
from judge.errors import CardError, InputError
from tests.conftest import SHARED


def _run(scores: list[float], gold: int | None, **kw: object) -> StepRun:
    return step_run("r", "j", len(scores), dict(enumerate(scores)), gold, **kw)  # type: ignore[arg-type]


def test_the_located_step_is_the_highest_score_earliest_on_ties() -> None:
    assert _run([0.1, 0.5, 0.5, 0.2], 2).located == 1
    assert _run([0.0, 0.0], 1).located is None
    assert _run([0.3, 0.9], 1, abstained=True).located is None


def test_step_accuracy_by_hand() -> None:
    runs = [
        _run([0.0, 1.0, 0.0, 0.0, 0.0], 1),  # exact
        _run([0.0, 0.0, 1.0, 0.0, 0.0], 1),  # off by one
        _run([1.0, 0.0, 0.0, 0.0, 0.0], 3),  # off by three
        _run([0.0, 0.0, 0.0, 0.0, 0.0], 4),  # abstains (no score)
        _run([0.2, 0.8], None),  # people said: no single step
    ]
    acc = step_accuracy(runs)
    assert acc["n_runs"] == 5 and acc["n_gold_step"] == 4 and acc["n_no_single_step"] == 1
    assert (acc["exact"]["k"], acc["exact"]["n"]) == (1, 4)
    assert acc["within_1"]["k"] == 2
    assert acc["within_3"]["k"] == 3
    assert acc["abstention"]["k"] == 1
    lo, hi = acc["exact"]["ci95"]
    assert lo < 0.25 < hi


def test_steps_are_compared_as_integers_not_strings() -> None:
    """Step 1 is not step 10 (the benchmark's own scorer compared substrings)."""
    scores = [0.0] * 12
    scores[1] = 1.0
    assert step_accuracy([_run(scores, 10)])["exact"]["k"] == 0


def test_same_agent_accuracy_by_hand() -> None:
    agents = ["A", "B", "A", "C"]
    runs = [
        _run([0.0, 0.0, 1.0, 0.0], 0, gold_agent="A", step_agents=agents),  # wrong step, same agent
        _run([0.0, 1.0, 0.0, 0.0], 3, gold_agent="C", step_agents=agents),  # other agent
    ]
    acc = step_accuracy(runs)
    assert (acc["same_agent"]["k"], acc["same_agent"]["n"]) == (1, 2)


def test_baselines_by_hand() -> None:
    runs = [_run([0.0] * 5, 2), _run([0.0] * 10, 0)]
    b = baselines(runs)
    assert b["random"]["exact"]["rate"] == pytest.approx((1 / 5 + 1 / 10) / 2)
    assert b["random"]["within_1"]["rate"] == pytest.approx((3 / 5 + 2 / 10) / 2)
    assert b["random"]["within_3"]["rate"] == pytest.approx((5 / 5 + 4 / 10) / 2)
    assert b["first"]["exact"]["k"] == 1 and b["last"]["exact"]["k"] == 0
    assert b["last"]["within_3"]["k"] == 1  # step 4 of 5 is within 3 of step 2


def test_the_conformal_threshold_by_hand() -> None:
    # Nine runs whose gold steps scored 0.1 ... 0.9 (each run's other step scores 0.05).
    runs = [_run([0.05, i / 10], 1) for i in range(1, 10)]
    policy = certify_step_set(runs, alpha=0.2)  # k = floor(0.2 * 10) = 2
    assert (policy.k, policy.threshold, policy.n) == (2, 0.2, 9)
    assert step_set(runs[0], policy.threshold) == []  # gold scored 0.1: missed (1 of 9)
    assert step_set(runs[4], policy.threshold) == [1]
    trivial = certify_step_set(runs, alpha=0.05)  # k = floor(0.5) = 0
    assert trivial.trivial and trivial.threshold == 0.0
    assert step_set(runs[0], trivial.threshold) == [0, 1]
    assert "every set is the whole run" in trivial.statement()


def test_runs_with_no_single_step_do_not_enter_the_threshold() -> None:
    runs = [_run([0.05, i / 10], 1) for i in range(1, 10)] + [_run([0.9, 0.9], None)]
    assert certify_step_set(runs, alpha=0.2).n_no_single_step == 1
    assert certify_step_set(runs, alpha=0.2).n == 9


def test_set_summary_by_hand() -> None:
    runs = [_run([0.5, 0.1, 0.0, 0.0], 0), _run([0.5, 0.5, 0.5, 0.0], 3)]
    s = set_summary(runs, 0.5)
    assert s["coverage"]["k"] == 1 and s["coverage"]["n"] == 2
    assert s["mean_set_size"] == 2.0
    assert s["mean_set_share"] == pytest.approx((1 / 4 + 3 / 4) / 2)
    assert s["located"]["k"] == 1


def _synthetic(n: int, seed: int) -> list[StepRun]:
    """Runs of 5-30 steps whose gold step the judge scores well, but noisily."""
    rng = random.Random(seed)
    runs = []
    for i in range(n):
        steps = rng.randint(5, 30)
        gold = rng.randrange(steps)
        scores = {j: rng.random() * 0.6 for j in range(steps)}
        scores[gold] = min(1.0, scores[gold] + rng.random() * 0.6)
        runs.append(step_run(f"r{i}", "j", steps, scores, gold))
    return runs


@pytest.mark.parametrize("alpha", [0.1, 0.2, 0.3])
def test_the_step_set_keeps_its_coverage_on_held_out_runs(alpha: float) -> None:
    runs = _synthetic(300, seed=1)
    check = split_check(runs, alpha, draws=300, seed=2)
    # The guarantee is on the mean over draws: >= 1 - alpha, up to the noise of 300 draws.
    assert check.mean_coverage >= 1 - alpha - 0.01
    assert check.mean_set_share < 1  # and the sets are not the whole run


def test_the_split_check_would_catch_a_threshold_one_rank_too_high() -> None:
    """The check can fail: certifying with the (k + 1)-th score instead of the k-th misses
    more than alpha on small calibration sets."""
    runs = _synthetic(300, seed=3)
    rng = random.Random(4)
    alpha, misses, draws = 0.2, 0.0, 400
    for _ in range(draws):
        order = list(runs)
        rng.shuffle(order)
        calib, test = order[:19], order[19:]  # k = floor(0.2 * 20) = 4
        scores = sorted(r.gold_score() for r in calib)
        too_high = scores[4]  # the 5th smallest
        misses += sum(1 for r in test if r.gold_score() < too_high) / len(test)
    assert 1 - misses / draws < 1 - alpha - 0.01


def _card(runs: list[StepRun], alpha: float = 0.2):  # type: ignore[no-untyped-def]
    return build_step_card(
        runs,
        judge=JudgeSection(model="j", source="recorded step scores"),
        gold=GoldRef(name="g", digest="sha256:0", n=len(runs), source="test"),
        alpha=alpha,
    )


def test_a_step_card_routes_single_steps_as_located(tmp_path: Path) -> None:
    runs = [_run([0.05, i / 10], 1) for i in range(1, 10)]
    card = _card(runs)
    again = parse_step_card(json.loads(json.dumps(card.model_dump(mode="json"))))
    assert again == card
    decisions = route_steps(card, [_run([0.9, 0.1], None), _run([0.9, 0.8], None)])
    assert [(d.decision, d.step_set) for d in decisions] == [
        ("located", [0]),
        ("review", [0, 1]),
    ]


def test_a_hand_edited_step_card_is_refused() -> None:
    card = _card([_run([0.05, i / 10], 1) for i in range(1, 10)])
    data = card.model_dump(mode="json")
    data["policy"]["threshold"] = 0.0
    with pytest.raises(CardError, match="card_digest"):
        parse_step_card(data)


def test_recorded_step_scores_are_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "steps.jsonl"
    good = {"item_id": "a", "judge": "j", "n_steps": 3, "step_scores": {"1": 0.7}, "gold_step": 1}
    path.write_text(json.dumps(good) + "\n\n", encoding="utf-8")
    (run,) = load_recorded_steps(path)
    assert run.scores == (0.0, 0.7, 0.0) and run.located == 1
    bad = dict(good, gold_step=3)
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"steps.jsonl:2 field 'gold_step'.*out of range"):
        load_recorded_steps(path)
    path.write_text(json.dumps(dict(good, n_steps=0, step_scores={})) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="no steps"):
        load_recorded_steps(path)
    path.write_text(json.dumps(dict(good, step_scores={"0": 1.5})) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        load_recorded_steps(path)
    path.write_text(json.dumps(dict(good, nsteps=3)) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="nsteps"):
        load_recorded_steps(path)


WHO_AND_WHEN = SHARED / "fbd" / "who_and_when_algorithm_generated"


@pytest.mark.shared
def test_the_baselines_match_the_published_figures_of_who_and_when() -> None:
    """The shared README: a random step is right 12.0% of the time, the last message 0.8%,
    the first (agent) message 15.9%."""
    if not WHO_AND_WHEN.is_dir():
        pytest.skip(f"{WHO_AND_WHEN} is absent (the shared data lies beside the clone in CI)")
    runs = []
    for path in sorted(WHO_AND_WHEN.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        n = len(data["history"])
        runs.append(step_run(path.stem, "none", n, {}, int(data["mistake_step"])))
    assert len(runs) == 126
    b = baselines(runs)
    assert math.isclose(b["random"]["exact"]["rate"], 0.120, abs_tol=0.0005)
    assert round(b["last"]["exact"]["rate"], 3) == 0.008
    assert round(b["first"]["exact"]["rate"], 3) == 0.159


def test_the_card_keeps_the_threshold_exact() -> None:
    """A threshold of 2/3 written to 10 digits (0.6666666667) would leave out the runs whose
    gold step scored exactly 2/3, the very ones the guarantee counts."""
    runs = [_run([0.0, 2 / 3], 1) for _ in range(9)] + [_run([0.0, 1.0], 1)]
    card = _card(runs, alpha=0.2)
    assert card.policy.threshold == 2 / 3
    again = parse_step_card(yaml.safe_load(card.to_yaml()))
    assert all(d.step_set == [1] for d in route_steps(again, runs))
