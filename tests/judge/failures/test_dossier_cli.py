"""``judge failures dossier`` and ``judge failures audit`` on files, as a user runs them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner

from judge.commands.failures_dossier import audit, dossier
from judge.errors import InputError
from judge.failures import Cluster, RunRecord
from tests.judge.failures.helpers import runs

CLUSTERS = [
    Cluster(
        cluster_id="double-deploy",
        definition="deploy retried after an ambiguous timeout without reconciling",
        condition={"tool": "deploy"},
        owners=["tool"],
        status="named",
    ),
]


def _write(tmp_path: Path, made: Sequence[RunRecord]) -> tuple[Path, Path]:
    runs_file = tmp_path / "runs.jsonl"
    runs_file.write_text("".join(r.model_dump_json() + "\n" for r in made), encoding="utf-8")
    clusters_file = tmp_path / "clusters.yaml"
    clusters_file.write_text(yaml.safe_dump([c.model_dump() for c in CLUSTERS]), encoding="utf-8")
    return runs_file, clusters_file


def _invoke(command: click.Command, args: list[str]) -> Any:
    return CliRunner().invoke(command, args, catch_exceptions=False)


def _population() -> list[RunRecord]:
    return [
        *runs(
            "d", 20, failed=4, features={"tool": "deploy"}, effects=["irreversible"], task_id="t1"
        ),
        *runs("r", 80, failed=2, features={"tool": "read"}),
    ]


def test_dossier_yaml_with_its_priority(tmp_path: Path) -> None:
    runs_file, clusters_file = _write(tmp_path, _population())
    result = _invoke(
        dossier, ["double-deploy", "--records", str(runs_file), "--clusters", str(clusters_file)]
    )
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.output)
    assert data["population"]["exposed_runs"] == 20 and data["population"]["failures"] == 4
    assert data["impact"]["cost_after_fbd_usd"] == "not recorded"
    assert data["priority"]["override"].startswith("severe effect")
    factors = {f["name"]: f for f in data["priority"]["factors"]}
    assert factors["cost"]["source"] == "judge/failures/harm.yaml: owners.tool"


def test_dossier_writes_the_eval_family_as_a_run_set(tmp_path: Path) -> None:
    runs_file, clusters_file = _write(tmp_path, _population())
    source = tmp_path / "source.jsonl"
    records = [
        {"run_id": "d-0", "task_id": "t1", "treatment": "a", "repetition": 0, "case": {}},
        {"run_id": "x", "task_id": "t2", "treatment": "a", "repetition": 0, "case": {}},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    family = tmp_path / "family.jsonl"
    args = ["double-deploy", "--records", str(runs_file), "--clusters", str(clusters_file)]
    result = _invoke(
        dossier, [*args, "--format", "json", "--family-out", str(family), "--runset", str(source)]
    )
    assert json.loads(result.stdout)["eval_family"]["name"] == "double-deploy@3"
    assert [json.loads(x)["run_id"] for x in family.read_text().splitlines()] == ["d-0"]


def test_bad_input_gets_a_clear_message(tmp_path: Path) -> None:
    runs_file, clusters_file = _write(tmp_path, _population())
    with pytest.raises(InputError, match="no cluster 'nope'.*known clusters: double-deploy"):
        _invoke(dossier, ["nope", "--records", str(runs_file), "--clusters", str(clusters_file)])
    no_failures, _ = _write(tmp_path, runs("s", 5, features={"tool": "deploy"}))
    with pytest.raises(InputError, match="no failed run"):
        _invoke(
            dossier,
            ["double-deploy", "--records", str(no_failures), "--clusters", str(clusters_file)],
        )
    only_failures, _ = _write(tmp_path, runs("f", 5, failed=5, features={"tool": "deploy"}))
    with pytest.raises(InputError, match="no successful run to audit"):
        _invoke(audit, ["--records", str(only_failures)])


def test_audit_draws_estimates_and_joins_clusters(tmp_path: Path) -> None:
    made = [*runs("s", 100, features={"tool": "deploy"}), *runs("f", 3, failed=3)]
    runs_file, clusters_file = _write(tmp_path, made)
    args = ["--records", str(runs_file), "--clusters", str(clusters_file), "--seed", "4"]
    plan = yaml.safe_load(_invoke(audit, args).output)["plan"]
    assert plan["per_stratum"] == 59 and len(plan["chosen"]) == 59
    assert "= 59 per stratum" in plan["arithmetic"]
    labels = tmp_path / "labels.jsonl"
    wrong = plan["chosen"][:2]
    labels.write_text(
        "".join(
            json.dumps({"case_id": c, "label": "fail" if c in wrong else "pass"}) + "\n"
            for c in plan["chosen"]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "clusters.out.yaml"
    result = _invoke(audit, [*args, "--labels", str(labels), "--clusters-out", str(out)])
    report = yaml.safe_load(result.stdout)
    assert report["estimate"]["rate"] == pytest.approx(2 / 59)
    assert report["confirmed"]["wrong_successes"] == sorted(wrong)
    assert yaml.safe_load(out.read_text())[0]["members"] == sorted(wrong)


def test_audit_through_the_review_queue(tmp_path: Path) -> None:
    made = runs("s", 3, features={"tool": "deploy"})
    runs_file, _ = _write(tmp_path, made)
    db = str(tmp_path / "judge.db")
    report = yaml.safe_load(
        _invoke(audit, ["--records", str(runs_file), "--db", db, "--queue"]).output
    )
    assert report["queued"]["new_items"] == 0
    assert report["queued"]["not_stored"] == ["s-0", "s-1", "s-2"]


def test_dossier_of_a_cluster_the_store_keeps(tmp_path: Path) -> None:
    from judge.failures.assign import save_clusters
    from judge.store import Store

    runs_file, _ = _write(tmp_path, _population())
    db = str(tmp_path / "judge.db")
    with Store(db) as store:
        save_clusters(store, CLUSTERS)
    result = _invoke(dossier, ["double-deploy", "--records", str(runs_file), "--db", db])
    assert yaml.safe_load(result.stdout)["population"]["failures"] == 4
    with pytest.raises(InputError, match="no cluster 'other'"):
        _invoke(dossier, ["other", "--records", str(runs_file), "--db", db])


def test_confirmed_wrong_successes_join_the_stores_clusters(tmp_path: Path) -> None:
    """20 deploy successes, 4 deploy failures the cluster lists; people find s-0's success
    wrong: the store's cluster lists it too, and its dossier counts 5 failures of 24."""
    from judge.failures import load_clusters
    from judge.failures.assign import save_clusters
    from judge.store import Store

    made = [
        *runs("s", 20, features={"tool": "deploy"}),
        *runs("f", 4, failed=4, features={"tool": "deploy"}),
    ]
    runs_file, _ = _write(tmp_path, made)
    db = str(tmp_path / "judge.db")
    with Store(db) as store:
        members = [f"f-{i}" for i in range(4)]
        save_clusters(store, [CLUSTERS[0].model_copy(update={"members": members})])
    plan = yaml.safe_load(_invoke(audit, ["--records", str(runs_file), "--db", db]).stdout)["plan"]
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"case_id": c, "label": "fail" if c == "s-0" else "pass"}) + "\n"
            for c in plan["chosen"]
        )
    )
    base = ["--records", str(runs_file), "--db", db, "--labels", str(labels)]
    _invoke(audit, [*base, "--dry-run"])
    with Store(db) as store:
        assert load_clusters(store)[0].members == members
    _invoke(audit, base)
    with Store(db) as store:
        assert load_clusters(store)[0].members == [*members, "s-0"]
    result = _invoke(dossier, ["double-deploy", "--records", str(runs_file), "--db", db])
    assert yaml.safe_load(result.stdout)["population"] == {
        **yaml.safe_load(result.stdout)["population"],
        "exposed_runs": 24,
        "failures": 5,
    }
