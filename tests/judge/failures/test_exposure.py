"""Exposure from conditions successes can meet: a cluster's exposure is counted over run
features (task and trace fields every run has), never over the critical step's ``step.*``
features only failures have; one function counts it for the report, the dossier and the
priority; a store's runs carry their judges' P(pass)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

import judge
from calibration.intervals import wilson
from judge.failures import (
    Cluster,
    FailureReport,
    RunRecord,
    dossier,
    exposure,
    exposure_condition,
    find_clusters,
    load_harm,
    priority,
    rank,
    ranked_jsonl,
    records_from_store,
)
from judge.failures.labels import trace_features
from judge.types import TraceTurn
from tests.review_fixtures import make_case, make_judgment, seed_store

#: What the runs of the task share, failed or not.
RUN = {"benchmark": "retail", "horizon": "short", "uses.refund": "yes"}
#: What only the failures' critical steps have.
STEP = {"step.tool": "refund", "step.stage": "late", "step.owner": "model"}


def _population() -> list[RunRecord]:
    """3 failures whose critical step retried a refund, 2 successes of the same task kind, 4
    runs of another benchmark (1 failed there for another reason), 1 excluded retail run."""
    failures = [
        RunRecord(
            case_id=f"f{i}",
            failed=True,
            features={**RUN, **STEP},
            summary="retried the refund after a timeout without checking the refund id",
            owner="model",
        )
        for i in range(3)
    ]
    successes = [RunRecord(case_id=f"s{i}", failed=False, features=dict(RUN)) for i in range(2)]
    other = [
        RunRecord(case_id=f"o{i}", failed=i == 0, features={**RUN, "benchmark": "airline"})
        for i in range(4)
    ]
    excluded = RunRecord(case_id="x", failed=True, excluded="infra_error", features=dict(RUN))
    return [*failures, *successes, *other, excluded]


def test_a_found_cluster_is_exposed_in_the_successes_that_meet_its_run_features() -> None:
    """Hand-worked: the condition's run features hold in 2 successes and 3 failures, so
    exposed 5, failures 3, rate 3/5 = 0.6, the Wilson interval of (3, 5), 2 counterexamples.
    Before, the condition carried the critical step's features too and only the 3 failures
    met it (rate 1.0, no counterexample)."""
    population = _population()
    (found,) = [c.cluster for c in find_clusters(population) if "f0" in c.cluster.members]
    assert found.members == ["f0", "f1", "f2"]
    # The condition keeps the step's pairs (later failures join by them) ...
    assert found.condition == {**RUN, **STEP}
    # ... but exposure is counted over the run features only.
    assert exposure_condition(found.condition) == RUN
    exposed, failed = exposure(found, population)
    assert sorted(r.case_id for r in exposed) == ["f0", "f1", "f2", "s0", "s1"]
    assert failed == {"f0", "f1", "f2"}
    d = dossier(found, population)
    assert (d.population.exposed_runs, d.population.failures) == (5, 3)
    assert d.population.rate == pytest.approx(0.6)
    assert d.population.rate_ci == pytest.approx(list(wilson(3, 5)))
    assert (d.counterexamples.count, d.counterexamples.case_ids) == (2, ["s0", "s1"])
    factors = {f.name: f.value for f in priority(found, population, load_harm()).factors}
    assert (factors["exposure"], factors["p_failure"]) == (5.0, pytest.approx(0.6))


def test_the_report_and_the_dossier_count_exposure_the_same_way() -> None:
    """The jsonl cluster line and the dossier give the same exposed, failures and rate, with
    a member whose run passed (an audit-confirmed wrong success) counted as a failure."""
    population = _population()
    cluster = Cluster(
        cluster_id="refund-retry",
        definition="d",
        condition={"benchmark": "retail", "step.tool": "refund"},
        members=["f0", "f1", "f2", "s1"],
    )
    report = FailureReport(
        records=population,
        clusters=[cluster],
        assignment={m: "refund-retry" for m in ("f0", "f1", "f2")},
    )
    (line,) = report.cluster_lines()
    d = dossier(cluster, population)
    assert (line["exposed"], line["failures"]) == (5, 4)
    assert (d.population.exposed_runs, d.population.failures) == (5, 4)
    assert line["rate"] == pytest.approx(d.population.rate) == pytest.approx(0.8)
    assert line["rate_ci"] == pytest.approx(d.population.rate_ci)


def test_the_jsonl_counts_each_clusters_exposure_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``judge failures --format jsonl``: two clusters with members, one without (ranked, no
    line): three exposures counted, one per cluster, and the same lines as ranking and writing
    them separately (which counts the two with members twice)."""
    population = _population()
    refund = Cluster(cluster_id="refund", definition="d", condition=RUN, members=["f0", "f1"])
    airline = Cluster(cluster_id="airline", definition="a", condition={"benchmark": "airline"})
    empty = Cluster(cluster_id="empty", definition="e", condition={"benchmark": "none"})
    report = FailureReport(
        records=population,
        clusters=[airline, empty, refund],
        assignment={"f0": "refund", "f1": "refund", "o0": "airline"},
    )
    ranked = rank(report.clusters, report.records)
    separately = report.jsonl({p.cluster_id: (p.priority, p.override) for p in ranked})
    counted: list[str] = []

    def counting(cluster: Cluster, runs: list[RunRecord]) -> tuple[list[RunRecord], set[str]]:
        counted.append(cluster.cluster_id)
        return exposure(cluster, runs)

    # The modules (the package's ``assign`` and ``priority`` names are functions).
    for module in ("judge.failures.assign", "judge.failures.priority"):
        monkeypatch.setattr(importlib.import_module(module), "exposure", counting)
    assert ranked_jsonl(report) == separately
    assert sorted(counted) == ["airline", "empty", "refund"]
    lines = [json.loads(line) for line in separately.splitlines() if "exposed" in line]
    assert [(x["cluster_id"], x["exposed"], x["failures"]) for x in lines] == [
        ("refund", 5, 2),
        ("airline", 4, 1),
    ]
    assert all(x["priority"] is not None for x in lines)


def test_a_condition_over_the_critical_step_only_exposes_its_members() -> None:
    """No run-feature pair: no success can meet it, so only the members are exposed."""
    population = _population()
    cluster = Cluster(cluster_id="step-only", definition="d", condition=STEP, members=["f0", "f1"])
    exposed, failed = exposure(cluster, population)
    assert sorted(r.case_id for r in exposed) == ["f0", "f1"] and failed == {"f0", "f1"}


def test_successes_and_failures_have_the_same_run_features_from_their_traces() -> None:
    trace = [
        TraceTurn(id="t0", role="agent", kind="tool_call", content="[refund] order 7"),
        TraceTurn(id="t1", role="tool", kind="tool_result", content="error: timeout"),
        TraceTurn(id="t2", role="agent", kind="tool_call", content="[refund] order 7"),
        TraceTurn(id="t3", role="agent", kind="tool_call", content="[lookup] order 7"),
    ]
    passed = trace_features(trace, None)
    failed = trace_features(trace, 2)
    assert passed == {
        "horizon": "short",
        "retries": "1-2",
        "errors": "yes",
        "uses.lookup": "yes",
        "uses.refund": "yes",
    }
    assert {k: v for k, v in failed.items() if not k.startswith("step.")} == passed
    assert failed["step.tool"] == "refund" and failed["step.error_before"] == "yes"
    assert failed["step.stage"] == "late"


def test_store_runs_carry_their_judges_p_pass(tmp_path: Path) -> None:
    """Two judgments of case-0 (P(pass) 0.9 and 0.7: mean 0.8), one of case-1 (0.2), none
    with probabilities for case-2 (an error): judge_score 0.8, 0.2, None."""
    with judge.open_store(tmp_path / "j.db") as store:
        cases = [make_case(i) for i in range(3)]
        seed_store(
            store,
            cases,
            [
                make_judgment("case-0", 0.9),
                make_judgment("case-0", 0.7, sample=1),
                make_judgment("case-1", 0.2),
                make_judgment("case-2", None, status="infra_error"),
            ],
        )
        records = {r.case_id: r for r in records_from_store(store)}
    assert records["case-0"].failed is False
    assert records["case-0"].judge_score == pytest.approx(0.8)
    assert records["case-1"].failed is True
    assert records["case-1"].judge_score == pytest.approx(0.2)
    assert records["case-2"].judge_score is None
