"""The run-set report's failed-checks table (judge.runsets.checks): per treatment, each check
that failed on its runs, the runs failed, their share of the analysed runs and example runs;
absent from report.json when no run recorded a failed check."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from judge import checks
from judge.runsets.checks import failed_checks
from judge.runsets.scoring import ScoredRun
from judge.testing.loopback import LoopbackServer
from judge.types import Case, CheckResult
from tests.judge.runsets.test_report import _gates_answer, _runset, _score


def _run(
    run_id: str, treatment: str, failed: Sequence[str] = (), analysed: bool = True
) -> ScoredRun:
    return ScoredRun(
        run_id=run_id,
        task_id=run_id.split("-")[1],
        treatment=treatment,
        benchmark="b",
        repetition=0,
        agent_model=None,
        status="completed",
        outcome="pass",
        source="judge:m",
        analysed=analysed,
        failed_checks=list(failed),
    )


def test_failed_checks_per_treatment_with_share_and_examples() -> None:
    runs = [
        _run("base-a-r0", "base", ["check:tests-deleted@1"]),
        _run("base-b-r0", "base"),
        _run("cand-a-r0", "cand", ["check:skip-added@1", "check:tests-deleted@1"]),
        _run("cand-b-r0", "cand", ["check:skip-added@1"]),
        _run("cand-c-r0", "cand", ["check:skip-added@1"], analysed=False),
        _run("cand-d-r0", "cand"),
    ]
    table = failed_checks(runs, ["base", "cand"])
    assert table is not None
    assert [(f.check, f.runs_failed, f.share, f.example_runs) for f in table["base"]] == [
        ("check:tests-deleted@1", 1, 0.5, ["base-a-r0"])
    ]
    assert [(f.check, f.runs_failed, f.share) for f in table["cand"]] == [
        ("check:skip-added@1", 2, pytest.approx(2 / 3)),
        ("check:tests-deleted@1", 1, pytest.approx(1 / 3)),
    ]
    assert failed_checks([_run("base-a-r0", "base")], ["base"]) is None
    assert "failed_checks" not in _run("base-a-r0", "base").model_dump(mode="json")


def test_the_report_shows_the_failed_checks_of_judged_runs(
    tmp_path: Path, api_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_checks(case: Case, *, protected: Sequence[str] = ()) -> list[CheckResult]:
        status = "fail" if "[cand-a1-" in json.dumps(case.model_dump(mode="json")) else "pass"
        return [CheckResult(id="skip-added", version=1, status=status, reason="skip added")]

    monkeypatch.setattr(checks, "run_checks", run_checks)
    runs = _runset(tmp_path)
    with LoopbackServer(_gates_answer) as server:
        result = _score(
            server,
            runs,
            tmp_path / "r",
            tmp_path / "j.db",
            "--model",
            "openai/loopback",
            rubric="coding-run-gates@2",
        )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    (row,) = report["failed_checks"]["cand"]
    assert row["check"] == "check:skip-added@1" and row["runs_failed"] == 3
    assert row["example_runs"] == ["cand-a1-r0", "cand-a1-r1", "cand-a1-r2"]
    assert not [r for r in report["failed_checks"]["base"] if r["check"] == row["check"]]
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "## Failed checks" in markdown and "check:skip-added@1" in markdown
