"""The run-set report's "first bad decisions" from hand-made diagnoses: what `judge diagnose`
stored of the failed runs, summarised (diagnosed, located, confirmed, by owner and invariant,
queued for review, the command for the rest) in the JSON and the Markdown; absent when the store
holds none. Through `judge score` with runs diagnosed on the loopback server: test_report.py."""

from __future__ import annotations

import json
from typing import Any

from judge.diagnosis import DEFAULT_FBD_RUBRIC, RunDiagnosis, StoredDiagnoses
from judge.runsets import ReportContext, build_report, render_markdown
from judge.runsets.fbd import TENTATIVE, first_bad_decisions
from judge.runsets.models import RunSetReport
from judge.runsets.scoring import ScoredRun
from judge.types import Diagnosis
from tests.conftest import DATA

SMALL = DATA / "runsets" / "small.jsonl"
JUDGE = "openai/loopback"
DIAGNOSER = "openai/diagnoser"
DB = "/data/judge.db"


# --- the section from hand-made diagnoses --------------------------------------------------------


def _run(run_id: str, outcome: str | None, official: str | None, status: str = "completed") -> Any:
    return ScoredRun(
        run_id=run_id,
        task_id=run_id.split("-")[0],
        treatment="base",
        benchmark="b",
        repetition=0,
        agent_model=None,
        status=status,
        outcome=outcome,
        official=official,
        source="judge:" + JUDGE,
    )


def _diagnosis(
    case_id: str,
    status: str = "ok",
    step: int | None = 2,
    owner: str | None = "model",
    invariant: str | None = "verify-before-claiming-success",
    fbd: str = "tentative",
    model: str = DIAGNOSER,
) -> RunDiagnosis:
    report = (
        Diagnosis(
            critical_step=f"E{step + 1}" if step is not None else None,
            step_index=step,
            owner=owner,  # type: ignore[arg-type]
            violated_invariant=invariant if step is not None else None,
        )
        if status == "ok"
        else None
    )
    return RunDiagnosis(
        case_id=case_id,
        model=model,
        n_steps=5,
        status=status,  # type: ignore[arg-type]
        samples=1 if status in ("ok", "abstain") else 0,
        step_scores=(0.0,) * 5,
        report=report,
        judgment_ids=[f"j-{case_id}"],
        fbd_status=fbd,  # type: ignore[arg-type]
    )


RUNS = [
    _run("a-r0", "fail", "fail"),
    _run("a-r1", "fail", None),
    _run("b-r0", "pass", "fail"),  # judged pass, labelled fail: failed
    _run("b-r1", "pass", "pass"),  # passed
    _run("c-r0", "fail", None, status="timeout"),  # failed by rule, never judged: not counted
    _run("c-r1", "fail", None),
    _run("d-r0", "fail", None),
]


def _stored(*rows: RunDiagnosis, rubric: str = DEFAULT_FBD_RUBRIC, **kw: Any) -> StoredDiagnoses:
    return StoredDiagnoses(DB, {(DIAGNOSER, rubric): list(rows)}, **kw)


def test_the_section_counts_the_stored_diagnoses_of_the_failed_runs() -> None:
    stored = _stored(
        _diagnosis("a-r0"),
        _diagnosis("a-r1", step=0, owner="tool", invariant="do-not-ignore-tool-errors"),
        _diagnosis("c-r1", owner=None, invariant=None),
        _diagnosis("d-r0", status="abstain", step=None),
        _diagnosis("b-r0", status="parse_error"),  # a failed diagnosis is no diagnosis
        _diagnosis("b-r1"),  # a passed run's diagnosis is not counted
        awaiting_review={("a-r0", DIAGNOSER, "first-bad-decision")},
    )
    fbd = first_bad_decisions(RUNS, stored)
    assert fbd is not None
    assert (fbd.failed_runs, fbd.diagnosed_runs, fbd.undiagnosed) == (5, 4, ["b-r0"])
    assert fbd.undiagnosed_not_judged_fail == 1
    (j,) = fbd.judges
    assert (j.model, j.rubric) == (DIAGNOSER, DEFAULT_FBD_RUBRIC)
    assert (j.diagnosed, j.located, j.no_single_step, j.failed) == (4, 3, 1, 1)
    assert (j.confirmed, j.queued_for_review) == (0, 1)
    assert j.by_owner == {"model": 1, "tool": 1, "unstated": 1}
    assert j.by_invariant == {
        "verify-before-claiming-success": 1,
        "do-not-ignore-tool-errors": 1,
        "unstated": 1,
    }
    assert fbd.status == TENTATIVE == "tentative until a person confirms"
    assert fbd.db == DB and fbd.command == f"judge diagnose --db {DB} --model {DIAGNOSER}"


def test_a_confirmed_diagnosis_and_another_rubric_are_said() -> None:
    stored = _stored(
        _diagnosis("a-r0", fbd="confirmed"),
        _diagnosis("a-r1"),
        rubric="my-fbd@2",
    )
    fbd = first_bad_decisions(RUNS, stored)
    assert fbd is not None and fbd.judges[0].confirmed == 1
    assert fbd.status == f"the others {TENTATIVE}"
    assert fbd.command == f"judge diagnose --db {DB} --model {DIAGNOSER} --rubric my-fbd@2"
    everything = _stored(*(_diagnosis(r.run_id) for r in RUNS))
    done = first_bad_decisions(RUNS, everything)
    assert done is not None and done.undiagnosed == [] and done.command is None


def test_no_diagnosis_of_a_failed_run_means_no_section() -> None:
    assert first_bad_decisions(RUNS, StoredDiagnoses(DB)) is None
    assert first_bad_decisions(RUNS, _stored(_diagnosis("b-r1"))) is None


def _built(stored: StoredDiagnoses | None) -> RunSetReport:
    ctx = ReportContext(runset="runs.jsonl", mode="judge", n_boot=50, diagnoses=stored)
    return build_report(RUNS, ctx)


def test_the_section_in_json_and_markdown_and_absent_without_diagnoses() -> None:
    stored = _stored(_diagnosis("a-r0"), _diagnosis("d-r0", status="abstain", step=None))
    report = _built(stored)
    data = report.model_dump(mode="json")
    assert data["first_bad_decisions"]["judges"][0]["located"] == 1
    # report.json reads back (`judge gate` rewrites it) with the section.
    again = RunSetReport.model_validate_json(json.dumps(data))
    assert again.first_bad_decisions == report.first_bad_decisions
    md = render_markdown(report)
    assert "## First bad decisions" in md
    assert (
        "5 failed run(s) (completed, judged fail or labelled fail): 2 diagnosed by "
        "`judge diagnose`, 3 not" in md
    )
    assert "Confirmed: 0 (tentative until a person confirms)." in md
    assert f"| {DIAGNOSER} | {DEFAULT_FBD_RUBRIC} | 2 | 1 | 1 | 0 | 0 | 0 |" in md
    assert f"| owner | {DIAGNOSER}: located runs |" in md and "| model | 1 |" in md
    assert "| verify-before-claiming-success | 1 |" in md
    assert f"`judge diagnose --db {DB} --model {DIAGNOSER}`" in md
    assert "Not judged fail (their official label is fail), so left out by" in md
    for stored_none in (None, StoredDiagnoses(DB)):
        plain = _built(stored_none)
        assert "first_bad_decisions" not in plain.model_dump(mode="json")
        assert "First bad decisions" not in render_markdown(plain)
