"""The cluster dossier on hand-worked populations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration.intervals import wilson
from judge.errors import InputError
from judge.failures import Cluster, RunRecord
from judge.failures.dossier import NOT_RECORDED, dossier, family_runset, trend
from tests.judge.failures.helpers import runs

DEPLOY = {"tool": "deploy"}
RETRY = Cluster(
    cluster_id="ambiguous-effect-retry",
    definition="non-idempotent tool timed out after possible acceptance, then retried",
    exclusions=["read-only retries"],
    condition=DEPLOY,
    owners=["tool"],
    hypothesis="accepted-timeout and pre-send-timeout share one error",
)


def test_population_counts_exposed_runs_failed_or_not() -> None:
    """12 deploy runs (3 failed), 5 other runs (2 failed), 1 excluded deploy run.

    Exposed: the 12 valid deploy runs; failures 3; rate 3/12 = 0.25; the Wilson interval is
    calibration's for (3, 12). The excluded run and the other runs count nowhere."""
    population = [
        *runs("d", 12, failed=3, features=DEPLOY, fbd_confirmed=True, owner="tool"),
        *runs("o", 5, failed=2, features={"tool": "read"}),
        RunRecord(case_id="x", failed=True, excluded="infra_error", features=DEPLOY),
    ]
    d = dossier(RETRY, population)
    assert d.population.exposed_runs == 12
    assert d.population.failures == 3
    assert d.population.rate == pytest.approx(0.25)
    assert d.population.rate_ci == pytest.approx(list(wilson(3, 12)))
    assert d.counterexamples.count == 9
    assert d.counterexamples.case_ids[0] == "d-10"  # sorted as text: d-10, d-11, d-3, ...
    assert "d-0" not in d.counterexamples.case_ids
    assert d.owners == ["tool"]
    assert d.hypothesis.startswith("accepted-timeout")


def test_members_are_the_failures_when_the_cluster_has_them() -> None:
    """Two deploy runs failed, only one is a member: the other failed for another reason."""
    population = runs("d", 4, failed=2, features=DEPLOY)
    cluster = RETRY.model_copy(update={"members": ["d-0"]})
    d = dossier(cluster, population)
    assert (d.population.exposed_runs, d.population.failures) == (4, 1)
    assert d.population.members == 1


def test_a_member_the_audit_confirmed_is_a_failure_though_its_run_passed() -> None:
    """4 deploy runs passed; people found d-1 wrong and it joined the cluster: 1 failure of 4
    exposed, and d-1 is no counterexample."""
    cluster = RETRY.model_copy(update={"members": ["d-1"]})
    d = dossier(cluster, runs("d", 4, features=DEPLOY))
    assert (d.population.exposed_runs, d.population.failures) == (4, 1)
    assert d.counterexamples.case_ids == ["d-0", "d-2", "d-3"]


def test_unrecorded_figures_say_not_recorded() -> None:
    d = dossier(
        RETRY.model_copy(update={"hypothesis": ""}), runs("d", 3, failed=2, features=DEPLOY)
    )
    assert d.impact.cost_after_fbd_usd == NOT_RECORDED
    assert d.impact.cost_after_fbd_recorded == NOT_RECORDED
    assert d.evidence.counterfactual_recovered == NOT_RECORDED
    assert d.hypothesis == NOT_RECORDED
    # Undiagnosed failures are neither confirmed nor tentative.
    assert (d.evidence.confirmed_fbd, d.evidence.tentative_fbd, d.evidence.undiagnosed) == (0, 0, 2)
    assert "not recorded" in d.model_dump_json()


def test_impact_and_evidence_add_what_the_failures_recorded() -> None:
    """Failures: a (duplicate, $2, confirmed, replays 9/10), b (irreversible, $0.5,
    tentative, replays 1/2), c (duplicate, no cost, undiagnosed); a and b on task t1."""
    population = [
        RunRecord(
            case_id="a",
            task_id="t1",
            failed=True,
            features=DEPLOY,
            effects=["duplicate"],
            cost_after_fbd_usd=2.0,
            fbd_confirmed=True,
            critical_cause="retried",
            replays=10,
            replays_recovered=9,
        ),
        RunRecord(
            case_id="b",
            task_id="t1",
            failed=True,
            features=DEPLOY,
            effects=["irreversible"],
            cost_after_fbd_usd=0.5,
            critical_cause="retried",
            replays=2,
            replays_recovered=1,
        ),
        RunRecord(case_id="c", task_id="t2", failed=True, features=DEPLOY, effects=["duplicate"]),
    ]
    d = dossier(RETRY, population)
    assert d.impact.task_failures == 2
    assert d.impact.failed_runs == 3
    assert d.impact.effects == {"duplicate": 2, "irreversible": 1}
    assert (d.impact.duplicate_effects, d.impact.irreversible_effects) == (2, 1)
    assert d.impact.cost_after_fbd_usd == pytest.approx(2.5)
    assert d.impact.cost_after_fbd_recorded == "2 of 3"
    assert (d.evidence.confirmed_fbd, d.evidence.tentative_fbd, d.evidence.undiagnosed) == (1, 1, 1)
    assert d.evidence.counterfactual_recovered == "10/12"


def test_eval_family_and_its_gate() -> None:
    """Tasks of every exposed run (failed or not); the high-risk subset is the tasks with
    risk: high or a severe effect, and the gate asks pass^3 = 100% on it."""
    population = [
        RunRecord(
            case_id="a", task_id="t1", failed=True, features=DEPLOY, effects=["irreversible"]
        ),
        RunRecord(case_id="b", task_id="t2", failed=False, features={**DEPLOY, "risk": "high"}),
        RunRecord(case_id="c", task_id="t3", failed=False, features=DEPLOY),
    ]
    family = dossier(RETRY, population).eval_family
    assert family.name == "ambiguous-effect-retry@3"
    assert family.tasks == ["t1", "t2", "t3"]
    assert family.high_risk_tasks == ["t1", "t2"]
    assert family.ship_gate == "pass^3 = 100% on the high-risk subset (2 tasks)"
    plain = dossier(RETRY, population[2:]).eval_family
    assert plain.ship_gate == "pass^3 on the family's 1 tasks not below the baseline's"


def test_family_runset_keeps_the_source_lines_of_the_family(tmp_path: Path) -> None:
    source = tmp_path / "runs.jsonl"
    lines = [
        {"run_id": "r1", "task_id": "t1", "treatment": "a", "repetition": 0, "case": {}},
        {"run_id": "r2", "task_id": "t9", "treatment": "a", "repetition": 0, "case": {}},
    ]
    source.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    population = [RunRecord(case_id="r1", task_id="t1", failed=True, features=DEPLOY)]
    family = dossier(RETRY, population).eval_family
    assert family_runset(family, [source]) == lines[:1]
    other = dossier(RETRY, [RunRecord(case_id="z", task_id="t7", failed=True, features=DEPLOY)])
    with pytest.raises(InputError, match="no line"):
        family_runset(other.eval_family, [source])


def test_a_traffic_shift_is_not_read_as_a_fix() -> None:
    """v1: 100 of 200 runs exposed, 10 failed (10%). v2: traffic moved away from deploys:
    20 of 400 runs exposed, 2 failed (10%). Failures fell 10 -> 2, the rate did not move:
    change 0.0 pp, and the reading says the traffic moved, not a fix."""
    population = [
        *runs("a", 100, failed=10, run_set="v1", order=1, features=DEPLOY),
        *runs("b", 100, run_set="v1", order=1, features={"tool": "read"}),
        *runs("c", 20, failed=2, run_set="v2", order=2, features=DEPLOY),
        *runs("e", 380, run_set="v2", order=2, features={"tool": "read"}),
    ]
    t = trend(RETRY, population)
    assert [p.run_set for p in t.points] == ["v1", "v2"]
    assert [p.exposure_share for p in t.points] == pytest.approx([0.5, 0.05])
    assert [p.rate for p in t.points] == pytest.approx([0.1, 0.1])
    assert t.rate_change_pp == 0.0
    assert (t.failures_change, t.exposed_change) == (-8, -80)
    assert "unchanged" in t.reading and "traffic moved, not a fix" in t.reading


def test_more_traffic_at_the_same_rate_is_not_a_regression_either() -> None:
    """v1: 50 exposed, 5 failed; v2: 300 exposed, 30 failed: 10% both times."""
    population = [
        *runs("a", 50, failed=5, run_set="v1", order=1, features=DEPLOY),
        *runs("b", 300, failed=30, run_set="v2", order=2, features=DEPLOY),
    ]
    t = trend(RETRY, population)
    assert t.rate_change_pp == 0.0
    assert "not a regression" in t.reading


def test_a_real_drop_in_the_rate_is_read_as_one() -> None:
    """v1: 100 exposed, 40 failed (40%); v2: 100 exposed, 5 failed (5%): the Wilson intervals
    (about [0.31, 0.50] and [0.02, 0.11]) do not overlap."""
    population = [
        *runs("a", 100, failed=40, run_set="v1", order=1, features=DEPLOY),
        *runs("b", 100, failed=5, run_set="v2", order=2, features=DEPLOY),
    ]
    t = trend(RETRY, population)
    assert t.rate_change_pp == pytest.approx(-35.0)
    assert t.reading.startswith("the failure rate fell")


def test_run_sets_follow_their_order_not_their_names() -> None:
    population = [
        *runs("a", 10, failed=1, run_set="z-first", order=1, features=DEPLOY),
        *runs("b", 10, failed=2, run_set="a-second", order=2, features=DEPLOY),
    ]
    assert [p.run_set for p in trend(RETRY, population).points] == ["z-first", "a-second"]
    assert trend(RETRY, population[:10]).reading == "one run set: no trend"


def test_cluster_and_run_files_name_their_bad_field(tmp_path: Path) -> None:
    from judge.failures import read_clusters, read_records

    yaml_file = tmp_path / "clusters.yaml"
    yaml_file.write_text("- {cluster_id: a, definition: d}\n- {cluster_id: b}\n")
    with pytest.raises(InputError, match="field '1.definition'"):
        read_clusters(yaml_file)
    jsonl = tmp_path / "clusters.jsonl"
    jsonl.write_text('{"cluster_id": "a", "definition": "d", "condition": {"tool": "x"}}\n')
    assert read_clusters(jsonl)[0].condition == {"tool": "x"}
    wrapped = tmp_path / "wrapped.yaml"
    wrapped.write_text("clusters:\n  - {cluster_id: a, definition: d}\n")
    assert [c.cluster_id for c in read_clusters(wrapped)] == ["a"]
    records = tmp_path / "runs.jsonl"
    records.write_text('{"case_id": "a", "failed": true}\n{"case_id": "b"}\n')
    with pytest.raises(InputError, match="runs.jsonl:2 field 'failed'"):
        read_records(records)
