"""Failure clusters: three labels per failed run, the validity filter first, candidates by
structured group then text, exposure and Wilson intervals, and ``judge failures`` in JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import judge
from judge.cli import cli
from judge.errors import InputError
from judge.failures import (
    Cluster,
    ClusterOptions,
    RunRecord,
    assign,
    cluster_records,
    exposure,
    find_clusters,
    records_from_store,
    valid_failures,
)
from tests.conftest import shared_path
from tests.fbd_fixtures import diagnose_runs


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def run(case_id: str, summary: str, failed: bool = True, **features: str) -> RunRecord:
    return RunRecord(
        case_id=case_id,
        failed=failed,
        summary=summary,
        features={"owner": "model", **features},
        owner="model" if failed else None,
        symptom="wrong answer" if failed else None,
    )


RETRY = "retried the deploy after an ambiguous timeout without checking the operation id"
GUESS = "guessed the order id instead of asking the user which order to change"


def _mixed() -> list[RunRecord]:
    runs = [run(f"r{i}", RETRY, tool="deploy") for i in range(4)]
    runs += [run(f"g{i}", GUESS, tool="none") for i in range(3)]
    runs += [run(f"p{i}", "", failed=False, tool="deploy") for i in range(4)]
    runs.append(run("x", RETRY, tool="deploy").model_copy(update={"excluded": "parse_error"}))
    return runs


def test_the_validity_filter_keeps_excluded_and_passed_runs_out_of_clusters() -> None:
    runs = _mixed()
    assert [r.case_id for r in valid_failures(runs)] == [f"r{i}" for i in range(4)] + [
        f"g{i}" for i in range(3)
    ]
    found = find_clusters(runs)
    members = sorted(sorted(c.cluster.members) for c in found)
    assert members == [["g0", "g1", "g2"], ["r0", "r1", "r2", "r3"]]
    retry = next(c.cluster for c in found if "r0" in c.cluster.members)
    # The condition is what every member shares; the passed deploy runs are exposed too.
    assert retry.condition["tool"] == "deploy"
    assert len(exposure(retry, runs)[0]) == 8


def test_candidates_are_the_same_whatever_the_order_of_the_runs() -> None:
    runs = _mixed()
    ids = [c.cluster.cluster_id for c in find_clusters(runs)]
    assert [c.cluster.cluster_id for c in find_clusters(runs[::-1])] == ids


def test_a_large_group_is_clustered_on_a_sample_and_everyone_joins_a_cluster() -> None:
    runs = [run(f"r{i}", f"{RETRY} case {i}") for i in range(60)]
    runs += [run(f"g{i}", f"{GUESS} case {i}") for i in range(60)]
    found = find_clusters(runs, ClusterOptions(sample_cap=20, threshold=0.9))
    assert sum(len(c.cluster.members) for c in found) == 120
    for c in found:
        assert len({m[0] for m in c.cluster.members}) == 1


def test_later_runs_join_the_named_cluster_whose_condition_they_meet() -> None:
    named = Cluster(
        cluster_id="ambiguous-retry",
        definition="retried a non-idempotent deploy after a timeout",
        condition={"tool": "deploy"},
        status="named",
    )
    runs = [run("new", "anything", tool="deploy"), run("other", "anything", tool="none")]
    assert assign(runs, [named]) == {"new": "ambiguous-retry"}


def test_store_runs_carry_three_labels_and_the_filter_excludes_errors(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    diagnose_runs(db)
    with judge.open_store(db) as store:
        records = {r.case_id: r for r in records_from_store(store)}
    assert records["run-a"].excluded is None
    assert records["run-a"].critical_cause == "searched one airline only"
    assert records["run-a"].root_mechanism == "do-not-invent-facts"
    assert records["run-a"].symptom == "a dearer flight was booked"
    assert records["run-a"].owner == "model"
    assert records["run-a"].features["step.stage"] in ("early", "middle", "late")
    assert records["run-c"].excluded == "no_diagnosis"  # the judge named no step
    assert records["run-d"].excluded == "parse_error"  # never an agent failure


def test_judge_failures_jsonl_over_a_store(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    diagnose_runs(db)
    result = _invoke(["failures", "--db", str(db), "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    runs = [line for line in lines if "case_id" in line]
    clusters = [line for line in lines if "case_id" not in line]
    assert {r["case_id"] for r in runs} == {"run-a", "run-b", "run-c", "run-d"}
    for r in runs:
        assert set(r) >= {"case_id", "cluster_id", "symptom", "critical_cause"}
        assert set(r) >= {"root_mechanism", "owner"}
    assert {r["case_id"]: r["cluster_id"] is None for r in runs} == {
        "run-a": False,
        "run-b": False,
        "run-c": True,
        "run-d": True,
    }
    (only,) = clusters
    assert set(only) == {
        "cluster_id",
        "definition",
        "failures",
        "exposed",
        "rate",
        "rate_ci",
        "priority",
        "override",
    }
    assert only["failures"] == 2 and only["exposed"] == 2 and only["rate"] == 1.0
    low, high = only["rate_ci"]
    assert 0 < low < 1 == high
    # Run again: the kept cluster keeps its members and its id.
    again = _invoke(["failures", "--db", str(db), "--format", "jsonl"])
    assert again.output == result.output


def test_no_failed_runs_and_no_reports_are_refused_clearly(tmp_path: Path) -> None:
    with judge.open_store(tmp_path / "empty.db") as store:
        with pytest.raises(InputError, match="no failed runs"):
            cluster_records(store, [])
        unreported = [run("a", "").model_copy(update={"excluded": "no_diagnosis"})]
        with pytest.raises(InputError, match="none with a first-bad-decision report"):
            cluster_records(store, unreported)
    result = CliRunner().invoke(cli, ["failures", "--db", str(tmp_path / "empty.db")])
    assert isinstance(result.exception, InputError)  # judge's main prints it, exit code 2
    assert "empty.db: no failed runs" in str(result.exception)
    assert "judge run" in str(result.exception)


def test_recorded_agentrx_runs_are_clustered_with_their_labels(tmp_path: Path) -> None:
    path = shared_path("fbd/agentrx_tau_retail/tau_dataset_failed.json")
    result = _invoke(["failures", str(path), "--db", str(tmp_path / "j.db"), "--format", "jsonl"])
    lines = [json.loads(line) for line in result.output.splitlines()]
    runs = [line for line in lines if "case_id" in line]
    assert len(runs) == 29
    assert all(r["cluster_id"] for r in runs)
    assert {r["owner"] for r in runs} == {"model", "user"}
    assert "intent plan misalignment" in {r["root_mechanism"] for r in runs}
