"""The audit of successes: the stratified draw, the estimate, and confirmed ones into clusters."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from calibration.intervals import wilson
from judge.errors import InputError
from judge.failures import Cluster, RunRecord
from judge.failures.audit import (
    arithmetic,
    confirmed_wrong,
    estimate,
    join_clusters,
    per_stratum,
    plan_audit,
    queue_audit,
    queue_labels,
    read_labels,
)
from judge.review import add_label
from judge.store import Store
from judge.types import Case
from tests.judge.failures.helpers import runs

DEPLOY = Cluster(cluster_id="deploy", definition="d", condition={"tool": "deploy"}, status="named")
READ = Cluster(cluster_id="read", definition="r", condition={"tool": "read"})


def successes() -> list[RunRecord]:
    """130 deploy successes (100 the judge is sure of, 30 it is not), 10 read ones unjudged,
    and 5 failures (never drawn)."""
    return [
        *runs("s", 100, features={"tool": "deploy"}, judge_score=0.95),
        *runs("u", 30, features={"tool": "deploy"}, judge_score=0.6),
        *runs("r", 10, features={"tool": "read"}),
        *runs("f", 5, failed=5, features={"tool": "deploy"}),
    ]


def test_59_runs_find_a_5_percent_rate_with_95_percent_probability() -> None:
    """1 - 0.95^58 = 0.9490 < 0.95 <= 1 - 0.95^59 = 0.9515."""
    assert per_stratum() == 59
    assert 1 - 0.95**58 < 0.95 <= 1 - 0.95**59
    assert "ceil(-2.9957 / -0.051293) = ceil(58.40) = 59" in arithmetic()
    assert per_stratum(0.1, 0.9) == 22  # log(0.1) / log(0.9) = 21.85


def test_the_draw_is_stratified_by_features_and_judge_confidence() -> None:
    plan = plan_audit(successes(), [DEPLOY, READ], seed=7)
    assert plan.features == ["tool"]
    assert [(s.name, s.successes, s.drawn) for s in plan.strata] == [
        ("tool=deploy, judge=sure", 100, 59),
        ("tool=deploy, judge=unsure", 30, 30),
        ("tool=read, judge=unjudged", 10, 10),
    ]
    assert len(plan.chosen) == 99
    assert not any(c.startswith("f-") for c in plan.chosen)


def test_the_draw_is_fixed_by_its_seed_whatever_the_order() -> None:
    made = successes()
    first = plan_audit(made, [DEPLOY], seed=7).chosen
    shuffled = made[:]
    random.Random(1).shuffle(shuffled)
    assert plan_audit(shuffled, [DEPLOY], seed=7).chosen == first
    assert plan_audit(made, [DEPLOY], seed=8).chosen != first


def test_nothing_to_audit_says_so() -> None:
    with pytest.raises(InputError, match="no successful run to audit"):
        plan_audit(runs("f", 3, failed=3), [DEPLOY])


def test_one_stratum_is_plain_wilson() -> None:
    """100 unjudged successes, 59 reviewed, 3 wrong: 3/59 with calibration's Wilson (3, 59)."""
    made = runs("s", 100, features={"tool": "deploy"})
    plan = plan_audit(made, [DEPLOY], seed=1)
    labels = {c: i < 3 for i, c in enumerate(plan.chosen)}
    e = estimate(plan, made, labels)
    assert e.method == "stratified-wilson"
    assert e.rate == pytest.approx(3 / 59)
    assert e.rate_ci == pytest.approx(list(wilson(3, 59)))
    assert (e.reviewed, e.wrong, e.successes) == (59, 3, 100)


def test_strata_are_weighted_by_their_size() -> None:
    """Stratum A: 100 successes, 59 reviewed, 6 wrong; B: 20 successes, all reviewed, none
    wrong. Rate = 100/120 x 6/59 + 20/120 x 0/20 = 0.084746. Kish's effective size:
    120^2 / (100^2/59 + 20^2/20) = 14400 / 189.49 = 75.99 -> 76; wrong 0.084746 x 75.99 =
    6.44 -> 6: Wilson (6, 76)."""
    made = [
        *runs("a", 100, features={"tool": "deploy"}),
        *runs("b", 20, features={"tool": "read"}),
    ]
    plan = plan_audit(made, [DEPLOY], seed=3)
    drawn_a = [c for c in plan.chosen if c.startswith("a-")]
    labels = {c: False for c in plan.chosen} | {c: True for c in drawn_a[:6]}
    e = estimate(plan, made, labels)
    assert e.rate == pytest.approx(100 / 120 * 6 / 59)
    assert e.rate_ci == pytest.approx(list(wilson(6, 76)))


def test_judge_scores_on_every_success_give_ppi() -> None:
    made = successes()[:130]
    plan = plan_audit(made, [DEPLOY], seed=2)
    labels = {c: c.startswith("u-") and int(c[2:]) % 3 == 0 for c in plan.chosen}
    e = estimate(plan, made, labels)
    assert e.method == "ppi++"
    assert e.rate_ci[0] <= e.rate <= e.rate_ci[1]
    assert 0 < e.rate < 0.2


def test_all_reviews_alike_fall_back_to_wilson_with_a_note() -> None:
    made = successes()[:130]
    plan = plan_audit(made, [DEPLOY], seed=2)
    e = estimate(plan, made, {c: False for c in plan.chosen})
    assert e.method == "stratified-wilson" and e.rate == 0.0 and e.rate_ci[1] > 0
    assert any("same label" in n for n in e.notes)


def test_labels_must_be_of_drawn_runs() -> None:
    made = runs("s", 100, features={"tool": "deploy"})
    plan = plan_audit(made, [DEPLOY], seed=1)
    stray = next(r.case_id for r in made if r.case_id not in plan.chosen)
    with pytest.raises(InputError, match="not drawn by the audit"):
        estimate(plan, made, {stray: True})
    with pytest.raises(InputError, match="no drawn run is labelled"):
        estimate(plan, made, {})
    partial = estimate(plan, made, {plan.chosen[0]: False, plan.chosen[1]: True})
    assert "57 drawn run(s) not reviewed yet" in partial.notes


def test_confirmed_wrong_successes_join_the_most_specific_cluster() -> None:
    narrow = Cluster(
        cluster_id="deploy-prod",
        definition="d",
        condition={"tool": "deploy", "env": "prod"},
        members=["old"],
        status="named",
    )
    made = [
        RunRecord(case_id="a", failed=False, features={"tool": "deploy", "env": "prod"}),
        RunRecord(case_id="b", failed=False, features={"tool": "deploy"}),
        RunRecord(case_id="c", failed=False, features={"tool": "other"}),
        RunRecord(case_id="d", failed=False, features={"tool": "deploy"}),
    ]
    wrong = confirmed_wrong(made, {"a": True, "b": True, "c": True, "d": False})
    assert [r.case_id for r in wrong] == ["a", "b", "c"]
    assert all(r.failed and r.symptom == "silent wrong success (audit)" for r in wrong)
    joined, left = join_clusters([DEPLOY, narrow], wrong)
    by_id = {c.cluster_id: c for c in joined}
    assert by_id["deploy-prod"].members == ["old", "a"]
    assert by_id["deploy"].members == ["b"]
    assert by_id["deploy"].lineage == ["audit: +1 confirmed silent wrong successes"]
    assert left == ["c"]


def test_labels_file(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"case_id": "a", "label": "fail"}\n{"case_id": "b", "label": "pass"}\n')
    assert read_labels(path) == {"a": True, "b": False}
    path.write_text('{"case_id": "a", "label": "wrong"}\n')
    with pytest.raises(InputError, match="label"):
        read_labels(path)


def test_the_draw_goes_through_the_review_queue(tmp_path: Path) -> None:
    """Drawn runs with a stored case are queued blind; people's final labels come back."""
    made = runs("s", 5, features={"tool": "deploy"})
    plan = plan_audit(made, [DEPLOY], seed=0)
    with Store(str(tmp_path / "judge.db")) as store:
        for r in made[:4]:
            store.put_case(Case(id=r.case_id, kind="agent_run", task=f"task {r.case_id}"))
        plan_id, new, missing = queue_audit(store, plan, source="runs.jsonl")
        assert (new, missing) == (4, ["s-4"])
        assert queue_audit(store, plan, source="runs.jsonl")[1] == 0
        item = store.review_items(status="open")[0]
        assert item.blind and item.reason == "label_plan"
        add_label(store, item.id, reviewer="ann", role="reviewer", label="fail")
        assert queue_labels(store, plan_id, plan) == {item.case_id: True}
