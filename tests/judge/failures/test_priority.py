"""Priorities on hand-worked clusters: every factor, its source, and the hard override; the
eval card's clusters from a store."""

from __future__ import annotations

from pathlib import Path

import pytest

import judge
from judge.errors import InputError
from judge.failures import Cluster, save_clusters
from judge.failures.priority import card_clusters, load_harm, priority, rank, top_clusters
from judge.runsets import ReportContext, RunSetReport, ScoredRun, build_report
from tests.judge.failures.helpers import runs
from tests.review_fixtures import make_case, make_judgment, seed_store

COSMETIC = Cluster(
    cluster_id="misaligned-table",
    definition="the summary table's columns are misaligned when a cell wraps",
    condition={"stage": "render"},
    owners=["harness"],
)
DEPLOY = Cluster(
    cluster_id="double-deploy",
    definition="deploy retried after an ambiguous timeout without reconciling",
    condition={"tool": "deploy"},
    owners=["model"],
)


def population() -> list:
    return [
        *runs(
            "r",
            1000,
            failed=200,
            features={"stage": "render"},
            effects=["cosmetic"],
            fbd_confirmed=True,
        ),
        *runs(
            "d",
            50,
            failed=1,
            features={"tool": "deploy"},
            effects=["irreversible"],
            critical_cause="retried deploy",
        ),
    ]


def test_a_rare_irreversible_cluster_outranks_a_frequent_cosmetic_one() -> None:
    """With the shipped table (judge/failures/harm.yaml):

    cosmetic: exposure 1000 x P 200/1000 = 0.2 x harm 0.1 (effects.cosmetic) x fixability 0.8
    (owners.harness) x confidence 1.0 (200 confirmed) / cost 1.0 (owners.harness) = 16.0.
    deploy: exposure 50 x P 1/50 = 0.02 x harm 20 (effects.irreversible) x fixability 0.3
    (owners.model) x confidence 0.5 (1 tentative) / cost 3.0 (owners.model) = 1.0.

    By value the cosmetic cluster is 16 times higher; the irreversible one still ranks first,
    with the override's reason."""
    runs_ = population()
    table = load_harm()
    cosmetic = priority(COSMETIC, runs_, table)
    deploy = priority(DEPLOY, runs_, table)
    assert cosmetic.priority == pytest.approx(16.0)
    assert deploy.priority == pytest.approx(1.0)
    assert cosmetic.override is None
    assert deploy.override is not None and "irreversible in 1 of 1 failures" in deploy.override
    assert [p.cluster_id for p in rank([COSMETIC, DEPLOY], runs_, table)] == [
        "double-deploy",
        "misaligned-table",
    ]


def test_every_factor_names_its_source() -> None:
    p = priority(DEPLOY, population(), load_harm())
    sources = {f.name: f.source for f in p.factors}
    assert list(sources) == ["exposure", "p_failure", "harm", "fixability", "confidence", "cost"]
    assert sources["p_failure"] == "1 failures / 50 exposed runs"
    assert sources["harm"] == "judge/failures/harm.yaml: mean of effects.irreversible x1"
    assert sources["fixability"] == "judge/failures/harm.yaml: owners.model"
    assert sources["cost"] == "judge/failures/harm.yaml: owners.model"
    assert "1 tentative x 0.5" in sources["confidence"]


def test_harm_is_the_mean_over_failures() -> None:
    """4 failures: 1 duplicate (harm 5), 3 with no effect (default 1): mean (5 + 3) / 4 = 2."""
    made = [
        *runs("a", 1, failed=1, features={"tool": "deploy"}, effects=["duplicate"]),
        *runs("b", 3, failed=3, features={"tool": "deploy"}),
    ]
    harm = {f.name: f for f in priority(DEPLOY, made, load_harm()).factors}["harm"]
    assert harm.value == pytest.approx(2.0)
    assert harm.source.endswith("default x3, effects.duplicate x1")


def test_an_edited_table_changes_the_factors_and_is_named(tmp_path: Path) -> None:
    """The user's table makes the deploy failures cosmetic and drops the override."""
    path = tmp_path / "harm.yaml"
    path.write_text(
        "effects:\n  irreversible: {harm: 0.1}\ninvariants:\n  reconcile: {cost: 4.0}\n",
        encoding="utf-8",
    )
    table = load_harm(path)
    made = runs(
        "d",
        10,
        failed=2,
        features={"tool": "deploy"},
        effects=["irreversible"],
        invariant="reconcile",
    )
    p = priority(DEPLOY, made, table)
    factors = {f.name: f for f in p.factors}
    assert p.override is None
    assert factors["harm"].value == pytest.approx(0.1)
    assert (
        factors["cost"].value == 4.0 and factors["cost"].source == f"{path}: invariants.reconcile"
    )
    # Not in the user's table: the default.
    assert factors["fixability"].source == f"{path}: default"


def test_a_bad_table_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "harm.yaml"
    path.write_text("effects:\n  duplicate: {harm: -1}\n", encoding="utf-8")
    with pytest.raises(InputError, match="effects.duplicate.harm"):
        load_harm(path)
    with pytest.raises(InputError, match="cannot read"):
        load_harm(tmp_path / "missing.yaml")


def test_top_clusters_for_the_eval_card() -> None:
    top = top_clusters([COSMETIC, DEPLOY], population(), n=1)
    assert top == [
        {
            "cluster_id": "double-deploy",
            "definition": DEPLOY.definition,
            "priority": pytest.approx(1.0),
            "override": top[0]["override"],
        }
    ]
    assert top[0]["override"]


def _runset(*run_ids: str) -> RunSetReport:
    """A scored run set whose runs are ``run_ids`` (all passed, by gold labels)."""
    scored = [
        ScoredRun(
            run_id=run_id,
            task_id=f"t{i}",
            treatment="A",
            benchmark="b",
            repetition=0,
            agent_model="m",
            status="completed",
            outcome="pass",
            source="gold",
            route="gold",
            official="pass",
        )
        for i, run_id in enumerate(run_ids)
    ]
    return build_report(scored, ReportContext(runset="hand.jsonl", mode="gold", n_boot=10))


def test_the_cards_clusters_are_the_stored_ones_ranked_over_the_run_sets_runs(
    tmp_path: Path,
) -> None:
    """Six passed runs judged into a store; three kept clusters whose members (successes
    people found wrong) are case-0..3 ("wide"), case-4 ("narrow") and case-5 ("elsewhere").
    The run set holds case-0, case-1 and case-4 (and a run the store never judged).

    With the shipped table every member is an undiagnosed failure: harm 1, fixability 0.5,
    confidence 0.25, cost 1, so a cluster's priority is 0.125 x its exposed members in the run
    set: wide 2 (case-2 and case-3 are not in the run set) -> 0.25, narrow 1 -> 0.125,
    elsewhere 0 -> 0. Over the whole store it would be wide 0.5, then elsewhere and narrow
    tied at 0.125 (elsewhere first by id)."""
    db = tmp_path / "j.db"
    with judge.open_store(db) as store:
        seed_store(
            store,
            [make_case(i) for i in range(6)],
            [make_judgment(f"case-{i}", 0.9) for i in range(6)],
        )
        save_clusters(
            store,
            [
                Cluster(cluster_id="wide", definition="w", members=[f"case-{i}" for i in range(4)]),
                Cluster(cluster_id="narrow", definition="n", members=["case-4"]),
                Cluster(cluster_id="elsewhere", definition="e", members=["case-5"]),
            ],
        )
        source = card_clusters(store)
    assert source is not None
    # The source reads nothing more from the store (closed by now).
    top = source(_runset("case-0", "case-1", "case-4", "not-in-the-store"))
    assert [(row["cluster_id"], row["priority"]) for row in top] == [
        ("wide", pytest.approx(0.25)),
        ("narrow", pytest.approx(0.125)),
        ("elsewhere", 0.0),
    ]
    assert [row["definition"] for row in top] == ["w", "n", "e"]
    assert all(row["override"] is None for row in top)
    # Another run set, another ranking from the same source.
    other = source(_runset(*(f"case-{i}" for i in range(6))))
    assert [(row["cluster_id"], row["priority"]) for row in other] == [
        ("wide", pytest.approx(0.5)),
        ("elsewhere", pytest.approx(0.125)),
        ("narrow", pytest.approx(0.125)),
    ]


def test_a_store_without_clusters_gives_the_card_no_cluster_source(tmp_path: Path) -> None:
    with judge.open_store(tmp_path / "j.db") as store:
        seed_store(store, [make_case(0)], [make_judgment("case-0", 0.2)])
        assert card_clusters(store) is None
    with judge.open_store(tmp_path / "empty.db") as store:
        assert card_clusters(store) is None
