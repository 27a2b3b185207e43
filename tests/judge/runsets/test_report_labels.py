"""Human labels in run-set reports: `judge review plan` draws the runs to label and queues them,
`judge gold export --plan` writes their labels, `judge score --labels` reports pass@1 from the
labels alone and by PPI++ beside the judge's, and `judge gate` uses the PPI++ interval. End to
end through the loopback model server; the figures checked against calibration/ppi.py and, on a
tiny case, by hand; bad label files refused naming file, line and field."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import judge
import judge.review
import judge.runsets
from calibration.ppi import labels_only, plan_labels, ppi_difference, ppi_mean
from judge.cli import cli
from judge.errors import InputError
from judge.runsets import ReportContext, ScoredRun, build_report
from judge.runsets.models import LabelsInfo
from judge.runsets.plots import FOREST_METHODS
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from tests.conftest import DATA, bench_module, shared_path
from tests.judge.runsets.conftest import score_args

SMALL = DATA / "runsets" / "small.jsonl"
#: Runs the loopback judge gets wrong (so PPI has something to correct).
WRONG = ("base-a1-r2", "cand-a3-r0", "cand-a2-r1")
BUDGET = 12


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _answer(request: dict[str, Any]) -> Reply:
    """pass (P 0.8) when the trace shows a passing test, fail (P(pass) 0.25) otherwise; wrong
    on the runs of WRONG."""
    text = json.dumps(request["messages"])
    passed = ("1 passed" in text) != any(f"[{w}]" in text for w in WRONG)
    p = 0.8 if passed else 0.25
    content = json.dumps(
        {
            "verdict": "pass" if passed else "fail",
            "evidence": ["E1"],
            "rationale": "from the test run",
        }
    )
    return Reply(
        content=content,
        logprobs=logprobs_for(
            content, {"pass": p, "fail": 1 - p - 0.005, "cannot_determine": 0.005}
        ),
    )


def _runset(folder: Path) -> Path:
    lines = []
    for line in SMALL.read_text().splitlines():
        record = json.loads(line)
        record["agent_model"] = "claude-3-5-sonnet" if record["treatment"] == "base" else "gpt-4o"
        lines.append(json.dumps(record))
    path = folder / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


TRUTH = {
    json.loads(x)["run_id"]: json.loads(x).get("official") for x in SMALL.read_text().splitlines()
}


@dataclass
class Flow:
    """One pass through plan -> label -> export -> score --labels -> gate."""

    folder: Path
    runs: Path
    db: Path
    server: LoopbackServer
    plan_output: str
    plan_id: str
    labels: Path
    score: Result
    report: dict[str, Any]
    requests_before_labels: int
    gate: Result

    def score_args(self, *extra: str, db: Path | None = None) -> list[str]:
        return _score_args(self.server, self.runs, db or self.db, *extra)


def _score_args(server: LoopbackServer, runs: Path, db: Path, *extra: str) -> list[str]:
    return score_args(server, runs, db, "--model", "openai/loopback", *extra)


def _label_all(db: Path, truth: dict[str, str | None] = TRUTH) -> None:
    with judge.open_store(str(db)) as store:
        for item in judge.review.queue(store, limit=1000):
            judge.review.add_label(
                store, item.id, reviewer="ann", role="reviewer", label=str(truth[item.case_id])
            )


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    folder = tmp_path_factory.mktemp("labels")
    runs = _runset(folder)
    db = folder / "j.db"
    with pytest.MonkeyPatch.context() as mp, LoopbackServer(_answer) as server:
        mp.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        first = _invoke(_score_args(server, runs, db, "--out-dir", str(folder / "r0")))
        assert first.exit_code == 0, first.output
        planned = _invoke(
            [
                "review",
                "plan",
                str(runs),
                "--budget",
                str(BUDGET),
                "--seed",
                "0",
                "--db",
                str(db),
                "--out",
                str(folder / "plan.json"),
            ]
        )
        assert planned.exit_code == 0, planned.output
        plan_id = re.search(r"plan (plan-[0-9a-f]{16}):", planned.output)
        assert plan_id, planned.output
        _label_all(db)
        exported = _invoke(
            [
                "gold",
                "export",
                "--plan",
                plan_id.group(1),
                "--db",
                str(db),
                "--out",
                str(folder / "labels.jsonl"),
            ]
        )
        assert exported.exit_code == 0, exported.output
        before = len(server.requests)
        scored = _invoke(
            _score_args(
                server,
                runs,
                db,
                "--out-dir",
                str(folder / "r1"),
                "--labels",
                str(folder / "labels.jsonl"),
            )
        )
        assert scored.exit_code == 0, scored.output
        gated = _invoke(
            [
                "gate",
                "--report",
                str(folder / "r1" / "report.json"),
                "--baseline",
                "base",
                "--candidate",
                "cand",
                "--margin",
                "0.2",
                "--min-tasks",
                "2",
            ]
        )
        yield Flow(
            folder,
            runs,
            db,
            server,
            planned.output,
            plan_id.group(1),
            folder / "labels.jsonl",
            scored,
            json.loads((folder / "r1" / "report.json").read_text()),
            before,
            gated,
        )


# --- judge review plan and the export ------------------------------------------------------------


def test_plan_draws_a_uniform_sample_and_queues_it_blind(flow: Flow) -> None:
    plan = json.loads((flow.folder / "plan.json").read_text())
    # 23 runs: the infra_error and the timeout run are decided by rules; 21 can be labelled.
    assert len(plan["plan"]["run_ids"]) == 21 and plan["plan"]["design"] == "uniform"
    assert plan["plan"]["probs"] == [pytest.approx(BUDGET / 21)] * 21
    # The draw is calibration.ppi's, reproducible from the seed.
    again = plan_labels([0.5] * 21, BUDGET, active=False, seed=0, run_ids=plan["plan"]["run_ids"])
    assert list(again.chosen) == plan["plan"]["chosen"] and len(again.chosen) == BUDGET
    assert f"{BUDGET} new item(s) queued for blind review" in flow.plan_output
    with judge.open_store(str(flow.db)) as store:
        planned = [i for i in judge.review.queue(store, limit=1000)] + [
            i for i in store.review_items(status="done", limit=1000) if i.reason == "label_plan"
        ]
        assert {i.case_id for i in planned} == set(plan["plan"]["chosen"])
        assert all(i.blind and i.card_digest is None and i.routing_id is None for i in planned)
        # The review page shows a planned run blind: no judge verdict, score or reason.
        view = judge.review.item_view(store, planned[0].id)
        assert view.blind and view.verdicts == [] and view.reason_text is None
        assert view.task.startswith("Task ")
        # Drawing the same plan again queues nothing new.
        result = judge.runsets.plan_review(
            store, judge.load_runs(flow.runs).runs, source="x", budget=BUDGET, seed=0
        )
        assert not result.new and result.enqueued == 0 and result.stored.id == flow.plan_id


def test_exported_plan_labels_are_the_labels_file(flow: Flow) -> None:
    records = [json.loads(x) for x in flow.labels.read_text().splitlines()]
    plan = json.loads((flow.folder / "plan.json").read_text())["plan"]
    assert sorted(r["id"] for r in records) == sorted(plan["chosen"])
    assert all(r["gold"] == TRUTH[r["id"]] for r in records)
    # Lineage names the review item, and no routing decision or card (there was none).
    refs = records[0]["lineage"]["derived_from"]
    assert any(x.startswith("review:q-") for x in refs)
    assert not any(x.startswith(("routing:", "card:")) for x in refs)


# --- the report ----------------------------------------------------------------------------------


def test_report_gives_judge_labels_only_and_ppi_side_by_side(flow: Flow) -> None:
    report = flow.report
    info = report["labels"]
    assert info["valid_for_ppi"] and info["plan"]["id"] == flow.plan_id
    assert info["sampling"] == "uniform" and info["n_labels"] == BUDGET
    # Nothing is judged again: the judgments come from the store.
    assert len(flow.server.requests) == flow.requests_before_labels
    for t in ("base", "cand"):
        sec = report["per_treatment"][t]
        for key in ("ppi", "labels_only"):
            fig = sec[key]["pass@1"]
            assert {"value", "ci95", "n_labels"} <= set(fig)
            assert 0 <= fig["ci95"][0] <= fig["value"] <= fig["ci95"][1] <= 1
        assert sec["ppi"]["pass@1"]["effective_labels"] > 0
        assert sec["labels_only"]["pass@1"]["method"] == "labels_only"
        # Per benchmark too (the run set mixes bench-a and bench-b).
        assert set(sec["by_benchmark"]) == {"bench-a", "bench-b"}
        assert all("ppi" in b and "labels_only" in b for b in sec["by_benchmark"].values())
    paired = {p["metric"]: p for p in report["paired"]}
    assert "ppi" in paired["pass@1"] and "labels_only" in paired["pass@1"]
    assert "ppi" not in paired["pass^2"]  # PPI figures are for pass@1 only
    # The human labels and inclusion probabilities are kept with the runs (the gate uses them).
    runs = {r["run_id"]: r for r in report["runs"]}
    assert sum(r["label"] is not None for r in runs.values()) == BUDGET
    assert runs["base-b1-r1"]["label_prob"] is None  # timeout: decided by rule
    md = (flow.folder / "r1" / "report.md").read_text()
    assert "## Judge only, labels only and PPI++" in md
    assert "| estimand | judge only [95% CI] | labels only [95% CI] | labels | PPI++ [95% CI]" in md
    assert "| cand - base pass@1 |" in md
    # One line per treatment on stderr, e.g. "pass@1 base: judge 0.667 [...]; labels only ...".
    assert re.search(
        r"pass@1 base: judge [0-9.]+ \[.*\]; labels only [0-9.]+ \[.*\] \(6 "
        r"labels\); PPI\+\+ [0-9.]+ \[.*\], worth [0-9.]+ labels",
        flow.score.output,
    )


def _inputs(
    report: dict[str, Any], treatments: tuple[str, ...], multi: bool = True
) -> dict[str, list[Any]]:
    """calibration.ppi's inputs rebuilt from the report's runs, independently of the code
    under test: judge score (the timeout: 0), label (the timeout: fail), inclusion
    probability (the plan's BUDGET / 21; the timeout: 1)."""
    out: dict[str, list[Any]] = {k: [] for k in ("ids", "f", "y", "pi", "task", "treatment")}
    for r in report["runs"]:
        if r["treatment"] not in treatments or r["status"] == "infra_error":
            continue
        timeout = r["status"] == "timeout"
        out["ids"].append(r["run_id"])
        out["f"].append(0.0 if timeout else r["judge_score"])
        out["y"].append(0 if timeout else ({"pass": 1, "fail": 0}.get(r["label"])))
        out["pi"].append(1.0 if timeout else BUDGET / 21)
        out["task"].append(f"{r['benchmark']}/{r['task_id']}" if multi else r["task_id"])
        out["treatment"].append(r["treatment"])
    return out


def test_report_figures_are_calibration_ppi(flow: Flow) -> None:
    report = flow.report
    # The judge's score is its P(pass) from the loopback's logprobs, renormalised over the
    # verdict labels (P(cannot_determine) 0.005 left out): 0.8 / 0.995, 0.25 / 0.995.
    scores = {round(r["judge_score"], 4) for r in report["runs"] if r["judge_score"] is not None}
    assert scores == {round(0.8 / 0.995, 4), round(0.25 / 0.995, 4)}
    for t in ("base", "cand"):
        x = _inputs(report, (t,))
        ppi = ppi_mean(x["f"], x["y"], task_ids=x["task"], run_ids=x["ids"], probs=x["pi"])
        alone = labels_only(x["y"], task_ids=x["task"], run_ids=x["ids"], probs=x["pi"])
        got = report["per_treatment"][t]
        assert got["ppi"]["pass@1"]["value"] == pytest.approx(ppi.value)
        assert got["ppi"]["pass@1"]["ci95"] == pytest.approx(list(ppi.ci95))
        assert got["ppi"]["pass@1"]["lambda"] == pytest.approx(ppi.lam)
        assert got["labels_only"]["pass@1"]["value"] == pytest.approx(alone.value)
        assert got["labels_only"]["pass@1"]["ci95"] == pytest.approx(list(alone.ci95))
        n = sum(
            1
            for i, y in zip(x["ids"], x["y"], strict=True)
            if y is not None and report_run(report, i)["status"] == "completed"
        )
        assert got["ppi"]["pass@1"]["n_labels"] == n
        assert got["ppi"]["pass@1"]["effective_labels"] == pytest.approx(
            n * (ppi.se_labels_only / ppi.se) ** 2
        )
        # labels only by hand: the macro-weighted, inverse-probability-weighted mean of the
        # labelled runs (Hajek): sum a_i y_i / sum a_i, a_i = w_i / pi_i, w_i = 1 / runs of task.
        per_task = {t2: x["task"].count(t2) for t2 in x["task"]}
        a = [
            1 / per_task[tk] / p
            for tk, p, y in zip(x["task"], x["pi"], x["y"], strict=True)
            if y is not None
        ]
        ys = [y for y in x["y"] if y is not None]
        assert got["labels_only"]["pass@1"]["value"] == pytest.approx(
            sum(ai * yi for ai, yi in zip(a, ys, strict=True)) / sum(a)
        )
    x = _inputs(report, ("base", "cand"))
    diff = ppi_difference(
        x["f"],
        x["y"],
        x["treatment"],
        x["task"],
        first="cand",
        second="base",
        run_ids=x["ids"],
        probs=x["pi"],
    )
    paired = next(p for p in report["paired"] if p["metric"] == "pass@1")
    assert paired["ppi"]["value"] == pytest.approx(diff.value)
    assert paired["ppi"]["ci95"] == pytest.approx(list(diff.ci95))


def report_run(report: dict[str, Any], run_id: str) -> dict[str, Any]:
    run: dict[str, Any] = next(r for r in report["runs"] if r["run_id"] == run_id)
    return run


def test_gate_uses_the_ppi_interval(flow: Flow) -> None:
    gate = json.loads((flow.folder / "r1" / "gate.json").read_text())
    paired = next(p for p in flow.report["paired"] if p["metric"] == "pass@1")
    ni = gate["non_inferiority"]
    assert ni["ci95"] == pytest.approx(paired["ppi"]["ci95"])
    assert ni["diff"] == pytest.approx(paired["ppi"]["value"])
    # The per-treatment rates at the difference's lambda add up to the difference.
    assert ni["candidate"] - ni["baseline"] == pytest.approx(ni["diff"])
    assert ni["method"].startswith("PPI++") and "interval: PPI++" in flow.gate.output
    assert any("labelling mistakes" in c for c in gate["cannot_support"])
    # The library's gate on the same report, without the labels: the judge's bootstrap.
    report = judge.runsets.load_report(flow.folder / "r1" / "report.json")
    plain = judge.gate(
        report, baseline="base", candidate="cand", margin=0.2, min_tasks=2, use_labels=False
    )
    assert plain.non_inferiority.method.startswith("paired task-cluster bootstrap")
    assert plain.non_inferiority.ci95 == pytest.approx(paired["ci95"])


# --- labels that are not the plan's sample -------------------------------------------------------


def test_hand_picked_labels_are_not_valid_for_ppi(flow: Flow, tmp_path: Path) -> None:
    records = [json.loads(x) for x in flow.labels.read_text().splitlines()]
    plan = json.loads((flow.folder / "plan.json").read_text())["plan"]
    extra = next(r for r in plan["run_ids"] if r not in plan["chosen"])
    records.append({"id": extra, "gold": TRUTH[extra]})
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = _invoke(
        flow.score_args(
            "--out-dir",
            str(tmp_path / "r"),
            "--labels",
            str(labels),
            "--baseline",
            "base",
            "--candidate",
            "cand",
            "--margin",
            "0.2",
            "--min-tasks",
            "2",
        )
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    info = report["labels"]
    assert not info["valid_for_ppi"] and info["sampling"] == "not planned"
    assert "1 labelled run(s) were not drawn by the plan (hand-picked)" in info["reason"]
    assert "labels not valid for PPI" in result.output
    for t in ("base", "cand"):
        assert "ppi" not in report["per_treatment"][t]  # no PPI figure without a valid plan
        assert report["per_treatment"][t]["labels_only"]["pass@1"]["value"] is not None
    assert "**Not valid for PPI**" in (tmp_path / "r" / "report.md").read_text()
    gate = report["gate"]
    assert gate["non_inferiority"]["method"].startswith("paired task-cluster bootstrap")
    assert any("not valid for PPI" in w for w in gate["warnings"])


def test_labels_without_a_plan_are_not_valid_for_ppi(flow: Flow, tmp_path: Path) -> None:
    # A fresh store: the same loopback judge judges the runs again, but no plan is stored.
    result = _invoke(
        flow.score_args(
            "--out-dir", str(tmp_path / "r"), "--labels", str(flow.labels), db=tmp_path / "other.db"
        )
    )
    assert result.exit_code == 0, result.output
    info = json.loads((tmp_path / "r" / "report.json").read_text())["labels"]
    assert not info["valid_for_ppi"] and "no label plan" in info["reason"]


# --- active plans --------------------------------------------------------------------------------


def test_active_plan_records_its_probabilities_and_stays_valid(flow: Flow, tmp_path: Path) -> None:
    db = tmp_path / "active.db"
    # Judge the runs into this store first (the active plan reads their stored scores).
    first = _invoke(flow.score_args("--out-dir", str(tmp_path / "r0"), db=db))
    assert first.exit_code == 0, first.output
    planned = _invoke(
        [
            "review",
            "plan",
            str(flow.runs),
            "--budget",
            "10",
            "--active",
            "--seed",
            "4",
            "--db",
            str(db),
            "--out",
            str(tmp_path / "plan.json"),
        ]
    )
    assert planned.exit_code == 0, planned.output
    stored = json.loads((tmp_path / "plan.json").read_text())
    plan = stored["plan"]
    assert plan["design"] == "active" and stored["scores"]["models"] == ["openai/loopback"]
    # Probabilities from the judge's uncertainty: sqrt(f (1 - f)) mixed 0.2 with uniform,
    # scaled to sum to the budget (calibration.ppi.uncertainty_probs): P(pass) 0.251 is less
    # certain than 0.804 (sqrt(.188) = 0.434 > sqrt(.158) = 0.397): drawn more often.
    assert sum(plan["probs"]) == pytest.approx(10)
    report0 = json.loads((tmp_path / "r0" / "report.json").read_text())
    score = {r["run_id"]: r["judge_score"] for r in report0["runs"]}
    probs = dict(zip(plan["run_ids"], plan["probs"], strict=True))
    low = [probs[r] for r in probs if score[r] < 0.5]
    high = [probs[r] for r in probs if score[r] > 0.5]
    assert low and high and min(low) > max(high)
    plan_id = stored["id"]
    with judge.open_store(str(db)) as store:
        for item in judge.review.queue(store, limit=1000):
            judge.review.add_label(
                store, item.id, reviewer="bo", role="reviewer", label=str(TRUTH[item.case_id])
            )
    assert (
        _invoke(
            [
                "gold",
                "export",
                "--plan",
                plan_id,
                "--db",
                str(db),
                "--out",
                str(tmp_path / "labels.jsonl"),
            ]
        ).exit_code
        == 0
    )
    result = _invoke(
        flow.score_args(
            "--out-dir", str(tmp_path / "r1"), "--labels", str(tmp_path / "labels.jsonl"), db=db
        )
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r1" / "report.json").read_text())
    assert report["labels"]["valid_for_ppi"] and report["labels"]["sampling"] == "active"
    # The report's PPI++ uses the plan's inclusion probabilities (weighted estimator).
    x = _inputs(report, ("cand",))
    x["pi"] = [probs.get(i, 1.0) for i in x["ids"]]  # the timeout: observed with certainty
    expected = ppi_mean(x["f"], x["y"], task_ids=x["task"], run_ids=x["ids"], probs=x["pi"])
    got = report["per_treatment"]["cand"]["ppi"]["pass@1"]
    assert got["value"] == pytest.approx(expected.value)
    assert got["ci95"] == pytest.approx(list(expected.ci95))


def test_an_active_plan_needs_stored_judgments(flow: Flow, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no stored judgment of these runs") as info:
        _invoke(
            [
                "review",
                "plan",
                str(flow.runs),
                "--budget",
                "5",
                "--active",
                "--db",
                str(tmp_path / "empty.db"),
            ]
        )
    assert info.value.field == "active" and "judge score" in str(info.value.hint)
    with pytest.raises(InputError, match="budget 30") as info:
        _invoke(
            ["review", "plan", str(flow.runs), "--budget", "30", "--db", str(tmp_path / "empty.db")]
        )
    assert info.value.field == "budget"


# --- bad label files -----------------------------------------------------------------------------


def _bad(flow: Flow, tmp_path: Path, lines: list[dict[str, Any]]) -> InputError:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    before = len(flow.server.requests)
    with pytest.raises(InputError) as info:
        _invoke(
            flow.score_args(
                "--out-dir", str(tmp_path / "r"), "--labels", str(path), db=tmp_path / "fresh.db"
            )
        )
    # Refused before anything was judged (a fresh store: every run would be a model call).
    assert len(flow.server.requests) == before
    assert info.value.file == str(path)
    return info.value


def test_labels_for_unknown_runs_are_refused(flow: Flow, tmp_path: Path) -> None:
    error = _bad(
        flow, tmp_path, [{"id": "base-a1-r0", "gold": "pass"}, {"id": "nope", "gold": "fail"}]
    )
    assert (error.line, error.field) == (2, "id") and "unknown run 'nope'" in error.reason


def test_a_label_file_of_another_run_set_is_refused(flow: Flow, tmp_path: Path) -> None:
    error = _bad(flow, tmp_path, [{"id": "x-1", "gold": "pass"}, {"id": "x-2", "gold": "fail"}])
    assert (error.line, error.field) == (1, "id") and "another run set" in error.reason
    # Same run ids, other runs: the record's task is not the run's.
    error = _bad(flow, tmp_path, [{"id": "base-a1-r0", "gold": "pass", "task": "Other task"}])
    assert (error.line, error.field) == (1, "task") and "another run set" in error.reason


def test_duplicate_labels_are_refused(flow: Flow, tmp_path: Path) -> None:
    error = _bad(
        flow,
        tmp_path,
        [
            {"id": "base-a1-r0", "gold": "pass"},
            {"id": "base-a2-r0", "gold": "fail"},
            {"id": "base-a1-r0", "gold": "fail"},
        ],
    )
    assert (error.line, error.field) == (3, "id") and "first is on line 1" in error.reason


def test_labels_outside_the_rubrics_labels_are_refused(flow: Flow, tmp_path: Path) -> None:
    error = _bad(flow, tmp_path, [{"id": "base-a1-r0", "gold": "cannot_determine"}])
    assert (error.line, error.field) == (1, "gold") and "pass, fail" in error.reason


def test_malformed_label_records_are_refused(flow: Flow, tmp_path: Path) -> None:
    error = _bad(flow, tmp_path, [{"id": "base-a1-r0"}])
    assert (error.line, error.field) == (1, "gold")
    error = _bad(flow, tmp_path, [{"id": "base-a1-r0", "gold": "pass", "labell": "x"}])
    assert (error.line, error.field) == (1, "labell")
    error = _bad(flow, tmp_path, [{"id": "base-b1-r1", "gold": "pass"}])  # the timeout run
    assert error.field == "id" and "declared rule" in error.reason


# --- a tiny case by hand -------------------------------------------------------------------------


def _run(task: str, f: float, label: str | None) -> ScoredRun:
    return ScoredRun(
        run_id=f"r-{task}",
        task_id=task,
        treatment="x",
        benchmark="b",
        repetition=0,
        agent_model=None,
        status="completed",
        outcome="pass" if f > 0.5 else "fail",
        source="judge:m",
        route="uncalibrated",
        judge_score=f,
        label=label,  # type: ignore[arg-type]
        label_prob=0.5,
    )


def test_ppi_in_the_report_by_hand() -> None:
    """Four tasks of one run, two labelled (a uniform plan, pi = 2/4):
    r1 f 0.9 y 1, r2 f 0.2 y 0 labelled; r3 f 0.8, r4 f 0.1 not. Weights w = 1/4.

    labels only = (1 + 0) / 2 = 0.5. F = mean f = 0.5, f_lab = 0.55, theta(lam) = 0.5 -
    0.05 lam. Influences (each run its own task): alpha = an (y - y_lab) = +0.25, -0.25;
    beta = w (f - F) - an (f - f_lab): r1 0.1 - 0.175 = -0.075, r2 -0.075 + 0.175 = 0.1,
    r3 0.075, r4 -0.1. saa = 0.125, sab = -0.01875 - 0.025 = -0.04375, sbb = 0.03125:
    lam = 0.04375 / 0.03125 = 1.4, clipped to 1 -> theta = 0.45. Variance (m = 2 labelled
    tasks, factor m / (m - 1) = 2): (0.125 - 0.0875 + 0.03125) * 2 = 0.1375 (se 0.3708);
    labels only 0.125 * 2 = 0.25 (se 0.5). Effective labels 2 * 0.25 / 0.1375 = 3.636.
    """
    runs = [
        _run("t1", 0.9, "pass"),
        _run("t2", 0.2, "fail"),
        _run("t3", 0.8, None),
        _run("t4", 0.1, None),
    ]
    info = LabelsInfo(
        file="l.jsonl",
        n_labels=2,
        n_pass=1,
        n_fail=1,
        valid_for_ppi=True,
        reason=None,
        plan=None,
        sampling="uniform",
        population="tasks",
        method="m",
        notes=[],
    )
    ctx = ReportContext(runset="s", mode="judge", n_boot=50, labels=info)
    report = build_report(runs, ctx)
    sec = report.per_treatment["x"]
    assert sec.labels_only is not None and sec.ppi is not None
    alone, both = sec.labels_only["pass@1"], sec.ppi["pass@1"]
    assert alone.value == pytest.approx(0.5) and alone.se == pytest.approx(0.5)
    assert both.value == pytest.approx(0.45) and both.lam == pytest.approx(1.0)
    assert both.se == pytest.approx(math.sqrt(0.1375))
    assert both.effective_labels == pytest.approx(2 * 0.25 / 0.1375)
    # t with 1 df: 12.706 * 0.3708 is far past [0, 1]: the interval is clipped to it.
    assert both.ci95 == [0.0, 1.0] and both.labelled_units == 2
    # The judge-only figure is the verdicts' macro mean: (1 + 0 + 1 + 0) / 4 = 0.5.
    assert sec.macro.pass_at_k[0].value == pytest.approx(0.5)
    dumped = report.model_dump(mode="json")
    assert dumped["per_treatment"]["x"]["ppi"]["pass@1"]["lambda"] == pytest.approx(1.0)
    # report.json reads back with its label figures.
    assert type(report).model_validate_json(json.dumps(dumped)).per_treatment["x"].ppi


def test_a_report_without_labels_has_no_label_keys(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert (
        _invoke(
            [
                "score",
                str(SMALL),
                "--gold-labels",
                "--out-dir",
                str(out),
                "--n-boot",
                "50",
                "--no-charts",
            ]
        ).exit_code
        == 0
    )
    report = json.loads((out / "report.json").read_text())
    assert "labels" not in report and "ppi" not in report["per_treatment"]["base"]
    assert "ppi" not in report["paired"][0]
    assert "PPI" not in (out / "report.md").read_text()


# --- the HTML report in headless Chromium ------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
#: Where the screenshot of the report's label section is kept for a person to look at.
REPORT_SCREENSHOT = Path("/tmp/judge-report-ppi.png")


def _pixels_near(png: bytes, colour: str, tolerance: int = 12) -> int:
    """How many pixels of a PNG are within ``tolerance`` of ``colour`` (#rrggbb) per channel."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)
    target = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(pixels - target) <= tolerance).all(axis=-1).sum())


@pytest.mark.browser
@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium is absent: apt-get install -y chromium"
)
def test_report_html_shows_the_forest_plot(flow: Flow, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    report = judge.runsets.load_report(flow.folder / "r1" / "report.json")
    paths = judge.write_report(report, tmp_path / "html")  # with its charts this time
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(paths["html"].as_uri())
        heading = page.locator("h2", has_text="Judge only, labels only and PPI++")
        assert heading.count() == 1
        # The section's table, then its chart: one small forest plot.
        table = heading.locator("xpath=following-sibling::table[1]")
        assert "PPI++ [95% CI]" in table.inner_text() and "cand - base pass@1" in (
            table.inner_text()
        )
        figures = heading.locator("xpath=following-sibling::div[contains(@class, 'figs')][1]")
        plot = figures.locator("svg")
        assert plot.count() == 1
        plot.scroll_into_view_if_needed()
        assert plot.is_visible()
        box = plot.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 150
        shot = plot.screenshot()
        page.screenshot(path=str(REPORT_SCREENSHOT))  # the viewport, scrolled to the plot
        browser.close()
    # Each of the three estimates is drawn in its own colour (judge grey, labels only orange,
    # PPI++ blue): their intervals are on the screen, not just in the markup.
    for name, colour, _ in FOREST_METHODS:
        assert _pixels_near(shot, colour) > 50, name


# --- the bench on real runs ----------------------------------------------------------------------


@pytest.mark.shared
def test_bench_ppi_report_on_the_embedded_judges_tau_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/ppi_report.py (the README's line): 60 tau-bench runs, the embedded judge's
    recorded judgments (no model call), 20 labels drawn uniformly with seed 0."""
    shared_path("gold/taubench_airline_dev.jsonl")
    bench = bench_module("ppi_report")
    assert bench.main(["--dataset", "tau", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "180 judgments from the store" in printed
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    sec = report["per_treatment"]["gpt-4o"]
    # A judge at chance (AUROC 0.44 on these runs, JUDGE_QUALITY.md) gets lambda 0: PPI++ is
    # the labels-only estimate and worth exactly the labels used.
    assert sec["ppi"]["pass@1"]["lambda"] == pytest.approx(0.0)
    assert sec["ppi"]["pass@1"]["value"] == pytest.approx(sec["labels_only"]["pass@1"]["value"])
    assert sec["ppi"]["pass@1"]["effective_labels"] == pytest.approx(20.0)
    assert "truth 0.407; judge 0.120 [0.013, 0.240]; labels only 0.340 [0.079, 0.601]" in printed


def test_a_labels_file_accepts_every_field_of_a_gold_record() -> None:
    """Labels files are what `judge gold export` writes: a new gold field must not break them."""
    from calibration.gold import GoldRecord
    from judge.runsets.labels import LabelRecord

    assert set(GoldRecord.model_fields) <= set(LabelRecord.model_fields)
