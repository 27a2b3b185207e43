"""The eval card: figures checked by hand on a small run set, a gate whose decision is known,
the schema, the pluggable failure clusters, the report page, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.errors import InputError
from judge.runsets import (
    ReportContext,
    RunSetReport,
    ScoredRun,
    build_report,
    eval_card,
    gate,
    load_schema,
    render_markdown,
    write_eval_card,
)
from tests.conftest import DATA
from tests.judge.runsets.evalcards import check_card, valid_card

SMALL = DATA / "runsets" / "small.jsonl"


def _run(treatment: str, task: str, rep: int, outcome: str | None, **kw: Any) -> ScoredRun:
    fields: dict[str, Any] = {
        "run_id": f"{treatment}-{task}-{rep}",
        "task_id": task,
        "treatment": treatment,
        "benchmark": "b",
        "repetition": rep,
        "agent_model": "m",
        "status": "completed",
        "outcome": outcome,
        "source": "gold",
        "route": "gold",
        "official": outcome,
        "cost_usd": 0.3,
    }
    return ScoredRun(**(fields | kw))


def _treatment(name: str) -> list[ScoredRun]:
    """t1: pass, pass; t2: pass, fail; and an infra-failed run of t1 (excluded, cost kept)."""
    return [
        _run(name, "t1", 0, "pass"),
        _run(name, "t1", 1, "pass"),
        _run(name, "t2", 0, "pass"),
        _run(name, "t2", 1, "fail"),
        _run(name, "t1", 2, None, status="infra_error", analysed=False, source="rule:infra"),
    ]


def _report(*treatments: str) -> RunSetReport:
    runs = [r for t in treatments for r in _treatment(t)]
    ctx = ReportContext(runset="hand.jsonl", mode="gold", ks=[1, 2], n_boot=2000, seed=3)
    return build_report(runs, ctx)


def test_hand_worked_run_set() -> None:
    """Treatment A: task t1 passes 2 of 2 runs, t2 passes 1 of 2; one more run of t1 failed in
    the harness (infra_error: excluded, its $0.30 still counted).

    - pass@1 per task: 2/2 = 1 and 1/2 = 0.5; macro 0.75. pass^2 per task: C(2,2)/C(2,2) = 1
      and C(1,2)/C(2,2) = 0; macro 0.5.
    - task-cluster bootstrap over 2 tasks: a resample is {t1,t1}, {t1,t2} or {t2,t2} with
      probability 1/4, 1/2, 1/4, so the macro pass@1 of a resample is 1, 0.75 or 0.5: each end
      holds a quarter of the resamples (far more than 2.5%), and the 95% percentile interval is
      [0.5, 1]; for pass^2 the values are 1, 0.5, 0 and the interval is [0, 1].
    - cost per verified success: $0.30 per raw run (5 runs, the infra-failed one included)
      divided by the pooled success rate 3/4 = $0.40.
    """
    card = check_card(eval_card(_report("A")))
    res = card["results"]["per_treatment"]["A"]
    assert res["primary"]["value"] == pytest.approx(0.75)
    assert res["primary"]["ci95"] == pytest.approx([0.5, 1.0])
    (k1, k2) = res["pass_hat_k"]
    assert (k1["k"], k1["value"]) == (1, pytest.approx(0.75))
    assert (k2["k"], k2["value"]) == (2, pytest.approx(0.5))
    assert k2["ci95"] == pytest.approx([0.0, 1.0])
    cost = res["cost_per_verified_success"]
    assert cost["value_usd"] == pytest.approx(0.4) and cost["runs_with_cost"] == 5
    assert cost["ci95"] is None and "no interval" in cost["unknown"]["ci95"]
    audit = card["task_set"]["validity_audit"]
    assert (audit["raw_runs"], audit["excluded_infra_error"], audit["analysed"]) == (5, 1, 4)
    assert card["failures"]["infra_errors"] == 1 and card["failures"]["timeouts"] == 0
    assert card["statistics"]["replicates"] == 2000 and card["statistics"]["seed"] == 3
    assert card["protocol"]["repetitions"] == {"A": {"min": 2, "max": 2}}
    assert card["protocol"]["paired"] is False
    # Nothing the report does not know is invented: null with its reason.
    assert card["identity"]["owner"] is None and card["identity"]["unknown"]["owner"]
    assert card["decision"]["value"] is None and "no gate ran" in card["decision"]["reason"]
    assert card["failures"]["refusals"] is None and card["failures"]["unknown"]["refusals"]
    assert card["failures"]["top_clusters"] == []
    assert "no failure clusters" in card["failures"]["unknown"]["top_clusters"]
    assert card["failures"]["first_bad_decision_review_n"] is None
    assert card["artifacts"]["files"] == [] and card["artifacts"]["unknown"]["files"]


def test_a_gate_whose_decision_is_known() -> None:
    """A and B ran the same outcomes on the same 2 tasks: every per-task difference is 0, so
    every resample's mean is 0, the interval is [0, 0], above -0.05: ship."""
    report = _report("A", "B")
    report.gate = gate(
        report, baseline="A", candidate="B", margin=0.05, tolerance=0.05, min_tasks=2
    )
    card = check_card(eval_card(report))
    assert card["decision"]["value"] == "ship" and card["claim"]["decision"] == "ship"
    comparison = card["results"]["comparison"]
    assert (comparison["delta"], comparison["ci95"], comparison["n_shared"]) == (0, [0, 0], 2)
    assert comparison["baseline"] == comparison["candidate"] == pytest.approx(0.75)
    assert (card["systems"]["baseline"], card["systems"]["candidate"]) == ("A", "B")
    assert card["systems"]["shared"]["shared_tasks"] == 2
    assert card["claim"]["primary"].startswith("B is non-inferior to A on pass@1")
    assert card["claim"]["unsupported_claims"] == report.gate.cannot_support
    assert card["protocol"]["paired"] is True
    assert card["statistics"]["multiplicity_policy"].startswith("one primary test")


def test_failure_clusters_plug_in_by_one_argument() -> None:
    rows = [
        {"cluster_id": "c2", "definition": "deletes data", "priority": 9.0, "override": "data"},
        {"cluster_id": "c1", "definition": "retries a 4xx", "priority": 2.5, "override": None},
    ]
    card = check_card(eval_card(_report("A"), clusters=lambda report: rows))
    assert card["failures"]["top_clusters"] == rows
    assert "top_clusters" not in card["failures"]["unknown"]
    empty = check_card(eval_card(_report("A"), clusters=lambda report: []))
    assert empty["failures"]["unknown"]["top_clusters"] == "the cluster source returned no cluster"


def test_the_schema_refuses_a_card_that_breaks_its_contract() -> None:
    card = eval_card(_report("A"))
    schema = load_schema()
    for broken in (
        {k: v for k, v in card.items() if k != "decision"},  # a section missing
        card | {"decision": {"value": "maybe", "reason": "x", "unknown": {}}},
        card | {"extra": 1},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_written_card_digests_its_artifacts_and_the_page_shows_it(tmp_path: Path) -> None:
    report = _report("A")
    (tmp_path / "report.json").write_text("{}\n")
    path = write_eval_card(report, tmp_path / "out", artifacts=[tmp_path / "report.json"])
    card = valid_card(path)
    first, runset = card["artifacts"]["files"]
    # sha256 of the three bytes "{}\n"
    assert first["bytes"] == 3 and first["sha256"] == (
        "sha256:ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356"
    )
    assert runset["path"] == "hand.jsonl" and runset["sha256"] is None
    assert runset["unknown"]["sha256"].startswith("cannot read it")
    md = render_markdown(report)
    assert "## Eval card" in md and "eval-card.yaml" in md
    assert f"| identity.result_id | {card['identity']['result_id']} |" in md
    assert "| results.per_treatment.A.primary.value | 0.75 |" in md
    assert "| identity.owner | unknown: the run set and the report record no owner |" in md


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args)


def _gate(report: Path) -> list[str]:
    """``judge gate`` of cand against base on ``report``, margin 0.1."""
    pair = ["--baseline", "base", "--candidate", "cand", "--margin", "0.1"]
    return ["gate", "--report", str(report), *pair]


def test_score_and_gate_write_valid_cards(tmp_path: Path) -> None:
    out = tmp_path / "r"
    scored = _invoke(
        ["score", str(SMALL), "--gold-labels", "--out-dir", str(out), "--n-boot", "100"]
    )
    assert scored.exit_code == 0, scored.output
    card = valid_card(out / "eval-card.yaml")
    report = json.loads((out / "report.json").read_text())
    base = card["results"]["per_treatment"]["base"]["primary"]
    pass1 = next(f for f in report["per_treatment"]["base"]["macro"]["pass@k"] if f["k"] == 1)
    assert (base["value"], base["ci95"]) == (pass1["value"], pass1["ci95"])
    assert [f["path"] for f in card["artifacts"]["files"][:3]] == [
        "report.json",
        "report.md",
        "report.html",
    ]
    assert "Eval card" in (out / "report.html").read_text()
    elsewhere = tmp_path / "gate" / "g.json"
    elsewhere.parent.mkdir()
    gated = _invoke([*_gate(out / "report.json"), "--out", str(elsewhere), "--no-rewrite"])
    assert gated.exit_code == 4, gated.output  # 3 shared tasks < 10: inconclusive
    card = valid_card(elsewhere.parent / "eval-card.yaml")
    assert card["decision"]["value"] == "inconclusive"
    assert card["results"]["comparison"]["delta"] == pytest.approx(1 / 9)
    names = [Path(f["path"]).name for f in card["artifacts"]["files"]]
    assert names[:2] == ["report.json", "g.json"]


def test_an_out_dir_that_is_a_file_is_refused_before_judging(tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    result = _invoke(["score", str(SMALL), "--gold-labels", "--out-dir", str(blocker)])
    # `judge` prints an InputError as "error: ..." with exit code 2 (judge.cli.main)
    assert isinstance(result.exception, InputError)
    assert str(result.exception) == (
        f"{blocker}: the output folder is a file "
        "(give --out-dir a folder; it is created when missing)"
    )
    assert blocker.read_text() == "x"
    with pytest.raises(InputError, match="the output folder is a file"):
        write_eval_card(_report("A"), blocker)


def test_a_report_missing_fields_gets_a_clear_message_and_no_card(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert _invoke(["score", str(SMALL), "--gold-labels", "--out-dir", str(out)]).exit_code == 0
    report = json.loads((out / "report.json").read_text())
    del report["per_treatment"]
    (out / "report.json").write_text(json.dumps(report))
    (out / "eval-card.yaml").unlink()
    result = _invoke(_gate(out / "report.json"))
    assert isinstance(result.exception, InputError)
    assert result.exception.field == "per_treatment"
    assert "not a run-set report" in str(result.exception)
    assert not (out / "eval-card.yaml").exists()
