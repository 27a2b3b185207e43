"""Run-set reports: figures checked by hand on a small run set (gold labels), built end to end
from runs judged on the loopback server (cache, self-family exclusion, panels, unscored runs,
criteria and hard gates, routing with a card, Rogan-Gladen correction), and tau-bench."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import judge
from judge.cli import cli
from judge.diagnosis import DEFAULT_FBD_RUBRIC, diagnose
from judge.errors import InputError
from judge.rubrics import load_rubric
from judge.runsets import rogan_gladen
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from tests.conftest import DATA, shared_path
from tests.judge.runsets.conftest import score_args
from tests.judge.runsets.evalcards import valid_card

SMALL = DATA / "runsets" / "small.jsonl"


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _macro(report: dict[str, Any], treatment: str, metric: str, k: int) -> dict[str, Any]:
    figs = report["per_treatment"][treatment]["macro"][metric]
    found: dict[str, Any] = next(f for f in figs if f["k"] == k)
    return found


# --- gold labels, checked by hand ----------------------------------------------------------------


@pytest.fixture(scope="module")
def gold_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("gold")
    result = _invoke(
        ["score", str(SMALL), "--gold-labels", "--out-dir", str(out), "--n-boot", "300"]
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert (out / "report.md").read_text().startswith("# Run-set report")
    html = (out / "report.html").read_text()
    assert html.count("<svg") >= 3  # pass^k curves, task matrix, paired differences
    return report


def test_counts_and_declared_rules(gold_report: dict[str, Any]) -> None:
    base = gold_report["per_treatment"]["base"]["counts"]
    # base: 12 raw runs; a3 r2 ended in infra_error (excluded); b1 r1 timed out (a failure).
    assert base == {
        "raw": 12,
        "excluded": 1,
        "excluded_infra_error": 1,
        "analysis": 11,
        "timeouts_counted_as_fail": 1,
        "unscored": 0,
        "scored": 11,
        "passes": 6,
        "tasks": 4,
    }
    assert set(gold_report["rules"]) == {"infra_error", "timeout", "unscored", "self_family"}
    assert gold_report["per_treatment"]["base"]["routing"]["gold"] == 10
    assert gold_report["per_treatment"]["base"]["routing"]["by_rule"] == 1


def test_macro_pass_k_by_hand(gold_report: dict[str, Any]) -> None:
    # base per task (passes/scored): a1 2/3, a2 0/3, a3 2/2 (infra run excluded), b1 2/3
    # pass@1 = (2/3 + 0 + 1 + 2/3) / 4 = 7/12
    assert _macro(gold_report, "base", "pass@k", 1)["value"] == pytest.approx(7 / 12)
    # pass^2: a1 C(2,2)/C(3,2) = 1/3, a2 0, a3 C(2,2)/C(2,2) = 1, b1 1/3 -> (5/3)/4 = 5/12
    assert _macro(gold_report, "base", "pass^k", 2)["value"] == pytest.approx(5 / 12)
    # pass^3: a1 C(2,3) = 0, a2 0, b1 0; a3 has 2 runs < 3: omitted -> 0 over 3 tasks
    m3 = _macro(gold_report, "base", "pass^k", 3)
    assert m3["value"] == pytest.approx(0.0)
    assert m3["n_tasks"] == 3 and m3["omitted"] == ["bench-a/a3"]
    # pass@3: a1 1 - C(1,3)/C(3,3) = 1, a2 1 - C(3,3)/1 = 0, b1 1 -> 2/3
    assert _macro(gold_report, "base", "pass@k", 3)["value"] == pytest.approx(2 / 3)
    # cand: a1 3/3, a2 1/3, a3 2/3, b2 0/2 -> pass@1 = (1 + 1/3 + 2/3 + 0)/4 = 1/2
    assert _macro(gold_report, "cand", "pass@k", 1)["value"] == pytest.approx(0.5)
    # k runs 1..3: the most scored runs a task has within one treatment
    assert gold_report["params"]["ks"] == [1, 2, 3]
    pooled = gold_report["per_treatment"]["base"]["pooled"]
    assert (pooled["k"], pooled["n"]) == (6, 11)


def test_per_task_wilson_and_matrix(gold_report: dict[str, Any]) -> None:
    tasks = {t["task"]: t for t in gold_report["per_treatment"]["base"]["tasks"]}
    a1 = tasks["bench-a/a1"]
    assert (a1["c"], a1["n"]) == (2, 3)
    # Wilson 95% for 2/3: centre (2 + 1.96²/2)/(3 + 1.96²) = 3.9207/6.8415 = 0.5731,
    # half-width 1.96·sqrt(2·1/3 + 1.96²/4)/6.8415 = 0.3654 -> [0.2077, 0.9385]
    assert a1["wilson95"] == pytest.approx([0.2077, 0.9385], abs=1e-3)
    assert a1["pass^k"]["3"] == 0.0 and tasks["bench-a/a3"]["pass^k"]["3"] is None
    rows = {r["task"]: r["cells"] for r in gold_report["task_matrix"]["rows"]}
    assert rows["bench-b/b1"] == {"base": {"c": 2, "n": 3}, "cand": None}
    assert rows["bench-a/a2"]["cand"] == {"c": 1, "n": 3}


def test_benchmark_balanced_beside_pooled(gold_report: dict[str, Any]) -> None:
    b = gold_report["per_treatment"]["cand"]["balanced"]
    # cand: bench-a macro (1 + 1/3 + 2/3)/3 = 2/3; bench-b 0/2 -> balanced (2/3 + 0)/2 = 1/3,
    # while pooled over tasks is 1/2 and over runs 6/11: uneven coverage moves them apart.
    assert b["balanced"]["value"] == pytest.approx(1 / 3)
    assert b["pooled_over_tasks"]["value"] == pytest.approx(0.5)
    assert b["pooled_over_runs"]["value"] == pytest.approx(6 / 11)
    by_bench = gold_report["per_treatment"]["base"]["by_benchmark"]
    assert by_bench["bench-b"]["counts"]["timeouts_counted_as_fail"] == 1


def test_paired_differences_on_shared_tasks(gold_report: dict[str, Any]) -> None:
    p1 = next(p for p in gold_report["paired"] if p["metric"] == "pass@1")
    # shared: a1, a2, a3 (b1 only base, b2 only cand); cand - base per task:
    # a1 1 - 2/3 = 1/3, a2 1/3 - 0 = 1/3, a3 2/3 - 1 = -1/3 -> mean 1/9
    assert p1["diff"] == pytest.approx(1 / 9)
    assert (p1["n_shared"], p1["only_baseline"], p1["only_candidate"]) == (3, 1, 1)
    lo, hi = p1["ci95"]
    assert -1 / 3 - 1e-9 <= lo <= 1 / 9 <= hi <= 1 / 3 + 1e-9


def test_cost_per_run_and_per_success(gold_report: dict[str, Any]) -> None:
    cost = gold_report["per_treatment"]["base"]["cost"]
    # 10 completed runs at $0.10, the infra_error run $0.05, the timeout $0.20: $1.25 / 12
    assert cost["total_usd"] == pytest.approx(1.25)
    assert cost["per_run_usd"] == pytest.approx(1.25 / 12)
    # per success = per run / pooled success rate (6/11)
    assert cost["per_success_usd"] == pytest.approx(1.25 / 12 / (6 / 11))
    assert cost["duration_s"]["median"] is not None and cost["tokens"]["p95"] is not None


def test_headline_table(gold_report: dict[str, Any]) -> None:
    h = gold_report["headline"]
    assert h["columns"][4] == "pass@1 [95% CI]" and "pass^3" in h["columns"]
    first = h["rows"][0]
    assert first[:4] == ["base", "all", "12 / 11 / 1", "4"]
    assert first[4].startswith("0.583 [")
    assert "(1 task omitted)" in first[6]


def test_rogan_gladen_by_hand() -> None:
    # (0.5 - 0.1) / (1 - 0.1 - 0.2) = 0.4 / 0.7
    assert rogan_gladen(0.5, 0.1, 0.2) == pytest.approx(0.4 / 0.7)
    # observed below the false accept rate: clipped at 0
    assert rogan_gladen(0.05, 0.1, 0.2) == 0.0
    # a judge no better than chance corrects nothing
    assert rogan_gladen(0.5, 0.5, 0.5) is None


def test_gold_labels_refuses_runs_without_labels(tmp_path: Path) -> None:
    record = json.loads(SMALL.read_text().splitlines()[0])
    record.pop("official")
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(InputError, match="no gold label") as info:
        _invoke(["score", str(path), "--gold-labels", "--out-dir", str(tmp_path / "r")])
    assert info.value.field == "official" and info.value.line == 1


def test_invalid_records_stop_scoring_unless_skipped(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(SMALL.read_text() + '{"run_id": "x"}\n')
    result = _invoke(["score", str(path), "--gold-labels", "--out-dir", str(tmp_path / "r")])
    assert result.exit_code == 1 and "runs.jsonl:24" in result.output
    assert "--skip-invalid" in result.output and not (tmp_path / "r").exists()
    skipped = _invoke(
        [
            "score",
            str(path),
            "--gold-labels",
            "--skip-invalid",
            "--n-boot",
            "50",
            "--no-charts",
            "--out-dir",
            str(tmp_path / "r"),
        ]
    )
    assert skipped.exit_code == 1
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert any("skipped" in n for n in report["notes"])


# --- judged on the loopback server ---------------------------------------------------------------


def _answer(request: dict[str, Any]) -> Reply:
    """pass when the trace shows a passing test, fail otherwise; P(pass) 0.6/0.4 for task a3
    (so a card sends those to review); cannot_determine when the trace says UNSURE."""
    text = json.dumps(request["messages"])
    if "UNSURE" in text:
        label, p = "cannot_determine", 0.2
    else:
        label = "pass" if "1 passed" in text else "fail"
        uncertain = "tests/test_a3.py" in text
        p = (0.6 if label == "pass" else 0.4) if uncertain else (0.97 if label == "pass" else 0.02)
    content = json.dumps({"verdict": label, "evidence": ["E1"], "rationale": "from the test run"})
    dist = {"pass": p, "fail": 1 - p - 0.005, "cannot_determine": 0.005}
    if label == "cannot_determine":
        dist = {"pass": 0.1, "fail": 0.1, "cannot_determine": 0.8}
    return Reply(content=content, logprobs=logprobs_for(content, dist))


def _runset(tmp_path: Path, *, unsure: str | None = None) -> Path:
    """The small run set with base run by a Claude agent and cand by a GPT agent."""
    lines = []
    for line in SMALL.read_text().splitlines():
        record = json.loads(line)
        record["agent_model"] = "claude-3-5-sonnet" if record["treatment"] == "base" else "gpt-4o"
        if unsure and record["run_id"] == unsure:
            record["case"]["trace"][1]["content"] = "UNSURE what happened"
        lines.append(json.dumps(record))
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _score(
    server: LoopbackServer,
    runs: Path,
    out: Path,
    db: Path,
    *extra: str,
    rubric: str = "agent-run-success",
) -> Result:
    return _invoke(score_args(server, runs, db, *extra, "--out-dir", str(out), rubric=rubric))


def test_score_judges_with_the_protocol_of_judge_run(tmp_path: Path, api_key: None) -> None:
    """`judge score` and `judge run` give one rubric one protocol: every prompt variant."""
    runs = _runset(tmp_path)
    variants = load_rubric("agent-run-success").n_variants
    with LoopbackServer(_answer) as server:
        result = _invoke(
            [
                "score",
                str(runs),
                "--rubric",
                "agent-run-success",
                "--model",
                "openai/loopback",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "j.db"),
                "--out-dir",
                str(tmp_path / "r"),
                "--quiet",
                "--n-boot",
                "200",
                "--no-charts",
            ]
        )
    assert result.exit_code == 0, result.output
    # 21 completed runs (the infra_error and the timeout run are never judged), each judged once
    # per prompt variant and pooled into one verdict per run.
    assert variants == 3 and len(server.requests) == 21 * variants
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    judged = [r for r in report["runs"] if r["source"].startswith("judge:")]
    assert len(judged) == 21 and all(len(r["judgment_ids"]) == variants for r in judged)


def test_judged_report_end_to_end_uses_the_cache(
    tmp_path: Path, api_key: None, gold_report: dict[str, Any]
) -> None:
    runs = _runset(tmp_path)
    db = tmp_path / "j.db"
    with LoopbackServer(_answer) as server:
        first = _score(server, runs, tmp_path / "r1", db, "--model", "openai/loopback")
        assert first.exit_code == 0, first.output
        # 23 runs: the infra_error and the timeout run are never judged.
        assert len(server.requests) == 21
        second = _score(server, runs, tmp_path / "r2", db, "--model", "openai/loopback")
        assert second.exit_code == 0 and len(server.requests) == 21  # all from the store
    report = json.loads((tmp_path / "r2" / "report.json").read_text())
    assert report["mode"] == "judge" and report["judging"]["cached"] == 21
    # The judge agreed with every gold label, so the figures are the gold report's.
    for t in ("base", "cand"):
        for metric in ("pass@k", "pass^k"):
            for k in (1, 2, 3):
                assert _macro(report, t, metric, k)["value"] == pytest.approx(
                    _macro(gold_report, t, metric, k)["value"]
                )
    assert report["per_treatment"]["base"]["routing"]["uncalibrated"] == 10
    judges = report["judges"]["judges"]
    assert judges == [{"model": "openai/loopback", "family": None, "runs_excluded": 0}]
    assert "| base | all | 12 / 11 / 1 | 4 |" in first.output


def test_judging_cost_comes_from_the_usage_the_judgments_recorded(
    tmp_path: Path, api_key: None
) -> None:
    # The loopback judge returns token usage but litellm has no price for it: the report used
    # to show "—" as judging cost; it shows the tokens (and says they were not priced).
    def answer(request: dict[str, Any]) -> Reply:
        return replace(_answer(request), prompt_tokens=300, completion_tokens=45)

    with LoopbackServer(answer) as server:
        result = _score(
            server,
            _runset(tmp_path),
            tmp_path / "r",
            tmp_path / "j.db",
            "--model",
            "openai/loopback",
        )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    cost = report["per_treatment"]["base"]["cost"]
    # base: 12 runs, 10 judged (the infra_error and timeout runs are not), 300 + 45 tokens each
    assert (cost["judge_tokens"], cost["judge_judgments"], cost["judge_priced"]) == (3450, 10, 0)
    assert cost["judge_usd"] is None
    rows = [
        line
        for line in (tmp_path / "r" / "report.md").read_text().splitlines()
        if line.startswith("| base | 12/12 |")
    ]
    assert rows and rows[0].endswith("| 3,450 tokens (not priced) |"), rows
    # cand: 11 judged runs x 345 = 3,795 tokens
    assert report["per_treatment"]["cand"]["cost"]["judge_tokens"] == 3795


def test_a_judge_never_grades_its_own_family(tmp_path: Path, api_key: None) -> None:
    runs = _runset(tmp_path)
    with LoopbackServer(_answer) as server:
        with pytest.raises(InputError, match="of the openai family, like the agent of 11"):
            _score(server, runs, tmp_path / "r", tmp_path / "j.db", "--model", "openai/gpt-4o-mini")
        assert server.requests == []  # refused before anything was paid for
        # A panel keeps, per run, only the members of another family.
        result = _score(
            server,
            runs,
            tmp_path / "r",
            tmp_path / "j.db",
            "--model",
            "openai/gpt-4o-mini",
            "--model",
            "openai/loopback",
        )
        assert result.exit_code == 0, result.output
    models = Counter(r["model"] for r in server.requests)
    # base (Claude agent): 10 completed runs, both judges; cand (GPT agent): 11, loopback only
    assert models == {"gpt-4o-mini": 10, "loopback": 21}
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    excluded = {j["model"]: j["runs_excluded"] for j in report["judges"]["judges"]}
    assert excluded == {"openai/gpt-4o-mini": 11, "openai/loopback": 0}
    sources = {r["run_id"]: r["source"] for r in report["runs"]}
    assert sources["cand-a1-r0"] == "judge:openai/loopback"
    assert sources["base-a1-r0"] == "panel:openai/gpt-4o-mini,openai/loopback"


def test_runs_without_a_verdict_are_unscored_not_failed(tmp_path: Path, api_key: None) -> None:
    runs = _runset(tmp_path, unsure="base-a2-r0")
    with LoopbackServer(_answer) as server:
        result = _score(
            server, runs, tmp_path / "r", tmp_path / "j.db", "--model", "openai/loopback"
        )
    assert result.exit_code == 3
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["unscored"] == [
        {
            "run_id": "base-a2-r0",
            "treatment": "base",
            "task": "a2",
            "reason": "no verdict (openai/loopback: abstain)",
        }
    ]
    counts = report["per_treatment"]["base"]["counts"]
    assert counts["unscored"] == 1 and counts["scored"] == 10
    # a2 now has 2 scored runs (0 passes): pass@1 = (2/3 + 0 + 1 + 2/3)/4 is unchanged,
    # but pass^3 and pass@3 lose a2 as well as a3.
    assert _macro(report, "base", "pass^k", 3)["n_tasks"] == 2
    assert "Unscored runs" in (tmp_path / "r" / "report.md").read_text()


def _gates_answer(request: dict[str, Any]) -> Reply:
    """coding-run-gates: safety fails on cand's a1 runs, code quality fails on task a2."""
    text = json.dumps(request["messages"])
    passed = "1 passed" in text
    unsafe = "[cand-a1-" in text
    criteria = []
    for cid in (
        "environment_integrity",
        "safety",
        "functional",
        "regression",
        "code_quality",
        "scope",
    ):
        label = "pass"
        if cid == "functional" and not passed:
            label = "fail"
        if cid == "safety" and unsafe:
            label = "fail"
        if cid == "code_quality" and "tests/test_a2.py" in text:
            label = "fail"
        if cid == "scope" and "tests/test_b" in text:
            label = "not_applicable"
        criteria.append({"id": cid, "verdict": label, "evidence": ["E1"]})
    verdict = "pass" if passed and not unsafe else "fail"
    content = json.dumps(
        {
            "verdict": verdict,
            "evidence": ["E1"],
            "criteria": criteria,
            "rationale": "criterion by criterion",
        }
    )
    return Reply(content=content)


def test_criteria_rates_weighted_overall_and_hard_gates(tmp_path: Path, api_key: None) -> None:
    runs = _runset(tmp_path)
    with LoopbackServer(_gates_answer) as server:
        result = _score(
            server,
            runs,
            tmp_path / "r",
            tmp_path / "j.db",
            "--model",
            "openai/loopback",
            rubric="coding-run-gates",
        )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    crit = report["per_treatment"]["cand"]["criteria"]
    rows = {c["id"]: c for c in crit["criteria"]}
    # cand: 11 scored runs; safety fails on its 3 a1 runs -> 8/11
    assert (rows["safety"]["pass"], rows["safety"]["fail"]) == (8, 3)
    assert rows["safety"]["value"] == pytest.approx(8 / 11) and rows["safety"]["hard_gate"]
    # scope is not_applicable on b2's 2 runs: 9/9
    assert rows["scope"]["not_applicable"] == 2 and rows["scope"]["value"] == 1.0
    # weighted overall, per run: weights 1,1,1,1,0.5,0.5 over answered criteria; e.g. a1 run:
    # safety fails -> (5 - 1)/5 = 0.8; a2 fail run: functional + code_quality fail ->
    # (5 - 1 - 0.5)/5 = 0.7; a2 pass run -> (5 - 0.5)/5 = 0.9; a3 pass 1.0, fail 0.8;
    # b2 (scope n/a, functional fail): (4.5 - 1)/4.5.
    per_run = [0.8] * 3 + [0.9, 0.7, 0.7] + [1.0, 0.8, 1.0] + [3.5 / 4.5] * 2
    assert crit["weighted_overall"]["value"] == pytest.approx(sum(per_run) / 11)
    failed = {f["run_id"]: f["gates"] for f in report["hard_gate_failures"]}
    assert failed["cand-a1-r0"] == ["safety"]
    assert "functional" in failed["base-a2-r0"]
    md = (tmp_path / "r" / "report.md").read_text()
    assert "Failed hard gates" in md and "weighted overall" in md


# --- first bad decisions that `judge diagnose` stored ---------------------------------------------

DIAGNOSER = "openai/diagnoser"
#: What the diagnosing judge says of three failed runs: (critical step, owner, invariant).
FOUND = {
    "base-a2-r0": ("E2", "model", "verify-before-claiming-success"),
    "base-a2-r1": ("E1", "tool", "do-not-ignore-tool-errors"),
    "cand-b2-r0": (None, None, None),
}


def _diagnosis_answer(request: dict[str, Any]) -> Reply:
    text = json.dumps(request["messages"])
    run = next(r for r in FOUND if f"[{r}]" in text)
    step, owner, invariant = FOUND[run]
    body = {
        "verdict": "located" if step else "no_single_step",
        "critical_step": step,
        "evidence": [step or "E1"],
        "decision": "claimed success" if step else "",
        "information_available": [{"id": "E1", "claim": "the test run"}],
        "violated_invariant": invariant,
        "symptom": {"id": "E2", "description": "the test still fails"},
        "causal_chain": [{"id": step or "E1", "did": "went on"}],
        "counterfactual": "run the test again",
        "recoverable_at_step": None,
        "owner": owner,
        "confidence": "medium",
        "minimal_fix": "rerun the test",
        "checks": [],
        "rationale": f"{step or 'no step'} decided it.",
    }
    return Reply(content=json.dumps(body))


def _fbd_review_item(case_id: str) -> dict[str, Any]:
    """A review item that answers the diagnosis of ``case_id`` (open, awaiting a person)."""
    return {
        "id": f"f-{case_id}",
        "routing_id": None,
        "card_digest": None,
        "case_id": case_id,
        "model": DIAGNOSER,
        "rubric_id": "first-bad-decision",
        "kind": "binary",
        "reason": "a first bad decision to confirm",
        "detail": None,
        "audit": 0,
        "band": None,
        "auto_label": "located",
        "score": None,
        "priority": 0.5,
        "required_labels": 1,
        "blind": 0,
        "status": "open",
        "created_at": datetime.now(UTC).isoformat(),
    }


def test_score_reports_the_first_bad_decisions_judge_diagnose_stored(
    tmp_path: Path, api_key: None
) -> None:
    runs, db = _runset(tmp_path), tmp_path / "j.db"
    with LoopbackServer(_answer) as server:
        first = _score(server, runs, tmp_path / "r1", db, "--model", "openai/loopback")
        assert first.exit_code == 0, first.output
        before = json.loads((tmp_path / "r1" / "report.json").read_text())
        assert "first_bad_decisions" not in before  # nothing diagnosed yet: no section
        assert "First bad decisions" not in (tmp_path / "r1" / "report.md").read_text()
        with LoopbackServer(_diagnosis_answer) as doctor, judge.open_store(db) as store:
            options = judge.JudgeOptions(api_base=doctor.api_base)
            cases = list(store.get_cases(sorted(FOUND)).values())
            diagnosed = diagnose(store, cases, models=[DIAGNOSER], options=options)
            assert [r.status for r in diagnosed.runs] == ["ok", "ok", "ok"]
            store.enqueue_items([_fbd_review_item("base-a2-r0")])  # awaits a person
        assert len(doctor.requests) == 3
        second = _score(server, runs, tmp_path / "r2", db, "--model", "openai/loopback")
        assert second.exit_code == 0, second.output
        assert (
            len(server.requests) == 21
        )  # verdicts from the store; `judge score` diagnoses nothing
    fbd = json.loads((tmp_path / "r2" / "report.json").read_text())["first_bad_decisions"]
    # 9 completed runs failed (the timed-out one failed by rule, unjudged: not counted).
    assert (fbd["failed_runs"], fbd["diagnosed_runs"], len(fbd["undiagnosed"])) == (9, 3, 6)
    (j,) = fbd["judges"]
    assert (j["model"], j["rubric"]) == (DIAGNOSER, DEFAULT_FBD_RUBRIC)
    assert (j["diagnosed"], j["located"], j["no_single_step"], j["failed"]) == (3, 2, 1, 0)
    assert (j["confirmed"], j["queued_for_review"]) == (0, 1)
    assert j["by_owner"] == {"model": 1, "tool": 1}
    assert j["by_invariant"] == {
        "verify-before-claiming-success": 1,
        "do-not-ignore-tool-errors": 1,
    }
    assert fbd["status"] == "tentative until a person confirms"
    assert fbd["command"] == f"judge diagnose --db {db} --model {DIAGNOSER}"
    md = (tmp_path / "r2" / "report.md").read_text()
    assert "## First bad decisions" in md
    assert "9 failed run(s) (completed, judged fail or labelled fail): 3 diagnosed" in md
    assert "Confirmed: 0 (tentative until a person confirms)." in md
    assert f"| {DIAGNOSER} | {DEFAULT_FBD_RUBRIC} | 3 | 2 | 1 | 0 | 0 | 1 |" in md
    assert "| do-not-ignore-tool-errors | 1 |" in md and "| tool | 1 |" in md
    assert f"6 failed run(s) have no diagnosis: `judge diagnose --db {db} --model" in md
    assert "First bad decisions" in (tmp_path / "r2" / "report.html").read_text()
    failures = valid_card(tmp_path / "r2" / "eval-card.yaml")["failures"]
    assert failures["first_bad_decision_review_n"] == 0  # none confirmed by a person yet
    assert (failures["first_bad_decisions_diagnosed"], failures["failed_runs"]) == (3, 9)


def _card(path: Path, model: str = "openai/loopback") -> Path:
    from calibration.bands import certify
    from calibration.card import (
        CalibrationSection,
        ConfidenceRef,
        GoldRef,
        JudgeSection,
        RubricRef,
        SelectorRef,
        build_card,
        policy_section,
        write_card,
    )
    from calibration.confidence import score_items
    from calibration.records import VerdictRow
    from judge.evidence import SELECTOR_VERSION
    from judge.rubrics import load_rubric

    # 100 items at P(pass) 0.95 (2 fail), 100 at 0.05 (1 pass), 20 at 0.5: bands at 0.95/0.05
    probs = [0.95] * 100 + [0.05] * 100 + [0.5] * 20
    golds = ["fail"] * 2 + ["pass"] * 98 + ["pass"] + ["fail"] * 99 + ["pass", "fail"] * 10
    rows = [
        VerdictRow(
            item_id=str(i), judge=model, verdict="pass" if p > 0.5 else "fail", prob=p, gold=g
        )
        for i, (p, g) in enumerate(zip(probs, golds, strict=True))
    ]
    policy = certify(
        score_items(rows, kind="binary"),
        alpha_accept=0.1,
        alpha_reject=0.1,
        delta=0.1,
        grid="items",
    )
    rubric = load_rubric("agent-run-success")
    card = build_card(
        judge=JudgeSection(
            model=model,
            source="judge store",
            prompt_digest="sha256:p",
            rubric=RubricRef(id=rubric.id, version=rubric.version, digest=rubric.digest),
            evidence_selector=SelectorRef(version=SELECTOR_VERSION),
        ),
        calibration=CalibrationSection(
            kind="binary",
            gold=GoldRef(name="dev", digest="sha256:g", n=220, source="harness"),
            confidence=ConfidenceRef(source="prob"),
            metrics={"confusion_matrix": {"tp": 98, "fp": 2, "tn": 99, "fn": 1}},
        ),
        policy=policy_section(policy),
        created_at=datetime.now(UTC),
    )
    write_card(card, path)
    return path


def test_card_routes_verdicts_and_corrects_rates(tmp_path: Path, api_key: None) -> None:
    runs = _runset(tmp_path)
    card = _card(tmp_path / "card.yaml")
    with LoopbackServer(_answer) as server:
        result = _score(
            server,
            runs,
            tmp_path / "r",
            tmp_path / "j.db",
            "--model",
            "openai/loopback",
            "--card",
            str(card),
            "--correct-for-judge",
        )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    routing = report["per_treatment"]["base"]["routing"]
    # base: 10 judged runs; the 2 of task a3 have P(pass) 0.6 (inside the review band)
    assert routing["auto_decided"] == 8 and routing["awaiting_people"] == 2
    assert routing["by_rule"] == 1  # the timeout; the infra_error run is not analysed
    assert report["per_treatment"]["cand"]["routing"]["awaiting_people"] == 3
    assert report["card"]["false_accept_rate"]["value"] == pytest.approx(2 / 101)
    corrected = report["per_treatment"]["base"]["corrected"]
    assert corrected["available"]
    far, frr = 2 / 101, 1 / 99
    # pooled as judged 6/11 -> (6/11 - FAR) / (1 - FAR - FRR)
    assert corrected["pooled"]["value"] == pytest.approx((6 / 11 - far) / (1 - far - frr))
    # the interval also carries the card's uncertainty: wider than the uncorrected one
    lo, hi = corrected["pooled"]["ci95"]
    plo, phi = report["per_treatment"]["base"]["pooled"]["ci95"]
    assert hi - lo > phi - plo
    md = (tmp_path / "r" / "report.md").read_text()
    assert "Judge calibration card" in md and "Rogan-Gladen" in md
    scoring = valid_card(tmp_path / "r" / "eval-card.yaml")["scoring"]
    assert scoring["calibration_card_digest"] == report["card"]["card_digest"]
    assert scoring["review_band"]["awaiting_people"] == 5  # 2 of base, 3 of cand
    assert scoring["judge_models"] == ["openai/loopback"]
    # The review band's verdicts were queued for people in the store.
    from judge.store import Store

    with Store(tmp_path / "j.db") as store:
        assert store.db["review_items"].count >= 5


def test_a_card_for_another_judge_is_refused(tmp_path: Path, api_key: None) -> None:
    from judge.errors import CardError

    runs = _runset(tmp_path)
    card = _card(tmp_path / "card.yaml", model="openai/other-judge")
    with LoopbackServer(_answer) as server:
        with pytest.raises(CardError, match="not among the judges"):
            _score(
                server,
                runs,
                tmp_path / "r",
                tmp_path / "j.db",
                "--model",
                "openai/loopback",
                "--card",
                str(card),
            )
        assert server.requests == []


# --- tau-bench, from the gold labels --------------------------------------------------------------


@pytest.mark.shared
def test_taubench_macro_pass_hat_k_equals_hand_computation(tmp_path: Path) -> None:
    gold = shared_path("gold/taubench_airline_dev.jsonl")
    # Independently of judge: count passes per task from the file, then
    # pass^k(task) = C(c, k) / C(n, k), averaged over tasks.
    per_task: dict[int, list[bool]] = {}
    for line in gold.read_text().splitlines():
        record = json.loads(line)
        per_task.setdefault(record["slices"]["task_id"], []).append(record["gold"] == "pass")
    assert len(per_task) == 25 and all(len(v) == 4 for v in per_task.values())
    expected = {
        k: sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in per_task.values())
        / len(per_task)
        for k in (1, 2, 3, 4)
    }
    runs = tmp_path / "runs.jsonl"
    built = _invoke(["runset", str(gold), "--out", str(runs), "--benchmark", "tau-bench-airline"])
    assert built.exit_code == 0, built.output
    result = _invoke(
        [
            "score",
            str(runs),
            "--gold-labels",
            "--out-dir",
            str(tmp_path / "r"),
            "--n-boot",
            "300",
            "--no-charts",
        ]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["treatments"] == ["gpt-4o"]
    for k, value in expected.items():
        fig = _macro(report, "gpt-4o", "pass^k", k)
        assert fig["value"] == pytest.approx(value)
        assert fig["n_tasks"] == 25 and fig["omitted"] == []
    # 31 passes of 100 runs (the README's count); pass^4 = 4 tasks with 4/4 passes / 25
    assert expected[1] == pytest.approx(0.31) and expected[4] == pytest.approx(4 / 25)
