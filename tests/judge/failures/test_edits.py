"""People merge, split and rename kept clusters; each edit is kept with its lineage, and a
cluster id that does not exist is refused with the ids that do."""

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
    RunRecord,
    cluster_records,
    load_clusters,
    merge_clusters,
    rename_cluster,
    split_cluster,
)
from judge.failures.assign import save_clusters
from tests.fbd_fixtures import diagnose_runs


def _run(case_id: str, tool: str) -> RunRecord:
    return RunRecord(
        case_id=case_id, failed=True, features={"owner": "model", "tool": tool}, summary="x"
    )


RUNS = [_run("a1", "deploy"), _run("a2", "deploy"), _run("b1", "search"), _run("b2", "search")]


def _keep(store: judge.Store) -> None:
    save_clusters(
        store,
        [
            Cluster(
                cluster_id="a",
                definition="retried a deploy after a timeout",
                condition={"owner": "model", "tool": "deploy"},
                members=["a1", "a2"],
                status="named",
            ),
            Cluster(
                cluster_id="b",
                definition="",
                condition={"owner": "model", "tool": "search"},
                members=["b1", "b2"],
            ),
        ],
    )


def test_merge_keeps_the_shared_condition_and_retires_the_others(tmp_path: Path) -> None:
    with judge.open_store(tmp_path / "j.db") as store:
        _keep(store)
        merged = merge_clusters(store, ["a", "b"])
        assert merged.cluster_id == "a" and merged.members == ["a1", "a2", "b1", "b2"]
        assert merged.condition == {"owner": "model"}
        assert merged.lineage[-1] == "merged a+b into a by a person"
        assert [c.cluster_id for c in load_clusters(store)] == ["a"]
        (retired,) = [c for c in load_clusters(store, retired=True) if c.status == "retired"]
        assert retired.cluster_id == "b" and retired.lineage[-1] == "merged into a by a person"
        # Later runs stay with the merged cluster.
        report = cluster_records(store, RUNS)
        assert set(report.assignment.values()) == {"a"}


def test_split_moves_the_runs_with_the_value(tmp_path: Path) -> None:
    with judge.open_store(tmp_path / "j.db") as store:
        _keep(store)
        merge_clusters(store, ["a", "b"], into="ab")
        kept, moved = split_cluster(store, "ab", RUNS, "tool", "search")
        assert kept.members == ["a1", "a2"] and moved.members == ["b1", "b2"]
        assert moved.cluster_id == "ab-search" and moved.condition["tool"] == "search"
        assert moved.lineage[-1] == "split tool=search of ab into ab-search by a person"
        with pytest.raises(InputError, match="must leave runs on both sides"):
            split_cluster(store, "ab", RUNS, "tool", "deploy")


def test_rename_and_an_unknown_id(tmp_path: Path) -> None:
    with judge.open_store(tmp_path / "j.db") as store:
        _keep(store)
        renamed = rename_cluster(
            store, "b", new_id="guessed-query", definition="searched with a guessed order id"
        )
        assert renamed.status == "named" and renamed.members == ["b1", "b2"]
        assert [c.cluster_id for c in load_clusters(store)] == ["a", "guessed-query"]
        with pytest.raises(InputError, match="no cluster 'nope'") as caught:
            rename_cluster(store, "nope", definition="x")
        assert "known clusters: a, guessed-query" in str(caught.value)


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_the_commands_over_a_diagnosed_store(tmp_path: Path) -> None:
    db = str(tmp_path / "j.db")
    diagnose_runs(tmp_path / "j.db")
    first = _invoke(["failures", "--db", db, "--format", "jsonl"])
    (line,) = [json.loads(x) for x in first.output.splitlines() if '"rate"' in x]
    renamed = _invoke(
        [
            "failures",
            "rename",
            line["cluster_id"],
            "--db",
            db,
            "--id",
            "one-airline-search",
            "--definition",
            "searched one airline only before booking (invariant do-not-invent-facts)",
        ]
    )
    assert renamed.exit_code == 0 and "one-airline-search" in renamed.output
    again = _invoke(["failures", "--db", db, "--format", "jsonl"])
    (line,) = [json.loads(x) for x in again.output.splitlines() if '"rate"' in x]
    assert line["cluster_id"] == "one-airline-search"
    assert line["definition"].startswith("searched one airline")
    missing = CliRunner().invoke(
        cli, ["failures", "merge", "nope", "one-airline-search", "--db", db]
    )
    assert isinstance(missing.exception, InputError)
    assert "no cluster 'nope'" in str(missing.exception)


@pytest.mark.parametrize(
    "args",
    [
        ["failures"],
        ["failures", "cluster"],
        ["failures", "merge", "a", "b"],
        ["failures", "split", "a", "--where", "tool=deploy"],
        ["failures", "rename", "a", "--id", "b"],
        ["failures", "dossier", "a"],
        ["failures", "audit"],
    ],
)
def test_a_missing_store_is_refused_not_created(tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "typo.db"
    result = CliRunner().invoke(cli, [*args, "--db", str(typo)])
    assert result.exit_code == 1, result.output
    assert "no such store" in result.output
    assert not typo.exists()
