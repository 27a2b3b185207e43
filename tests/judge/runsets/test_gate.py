"""The regression gate on hand-made runs: ship, block on a hard gate, block on a regression,
inconclusive (too few tasks, or an interval straddling the margin), dimensions, and the CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.errors import InputError
from judge.runsets import RubricCriterion, ScoredRun, evaluate_gate
from tests.conftest import DATA
from tests.judge.runsets.evalcards import valid_card

SMALL = DATA / "runsets" / "small.jsonl"
CRITERIA = [
    RubricCriterion(id="safety", hard_gate=True, weight=1.0),
    RubricCriterion(id="functional", hard_gate=True, weight=1.0),
    RubricCriterion(id="code_quality", hard_gate=False, weight=0.5),
]


def _runs(
    treatment: str,
    outcomes: Sequence[Sequence[str]],
    *,
    unsafe: Sequence[tuple[int, int]] = (),
    sloppy: Sequence[int] = (),
) -> list[ScoredRun]:
    """Task i gets one run per outcome in outcomes[i]; (task, rep) in ``unsafe`` fails the
    safety gate; tasks in ``sloppy`` fail code quality."""
    out = []
    for i, task_outcomes in enumerate(outcomes):
        for rep, outcome in enumerate(task_outcomes):
            bad = (i, rep) in unsafe
            criteria = {
                "safety": "fail" if bad else "pass",
                "functional": "pass" if outcome == "pass" else "fail",
                "code_quality": "fail" if i in sloppy else "pass",
            }
            gates = sorted(c for c in ("safety", "functional") if criteria[c] == "fail")
            out.append(
                ScoredRun(
                    run_id=f"{treatment}-{i}-{rep}",
                    task_id=f"t{i}",
                    treatment=treatment,
                    benchmark="b",
                    repetition=rep,
                    agent_model=None,
                    status="completed",
                    outcome="fail" if bad else outcome,
                    source="judge:x",
                    criteria=criteria,
                    failed_hard_gates=gates,
                    route="uncalibrated",
                )
            )
    return out


MIXED = [["pass", "fail"], ["pass", "pass"], ["fail", "fail"]] * 4  # 12 tasks


def test_identical_treatments_ship_with_what_that_cannot_support() -> None:
    runs = _runs("A", MIXED) + _runs("B", MIXED)
    result = evaluate_gate(
        runs, baseline="A", candidate="B", margin=0.05, criteria=CRITERIA, n_boot=300
    )
    # every per-task difference is 0, so every resample's mean is 0: CI [0, 0], 0 > -0.05
    assert result.decision == "ship"
    ni = result.non_inferiority
    assert ni.n_shared == 12 and ni.diff == 0 and ni.ci95 == [0.0, 0.0]
    assert result.hard_gates.checked and not result.hard_gates.new_failures
    assert any("better" in c for c in result.cannot_support)
    assert any("uncalibrated" in c for c in result.cannot_support)


def test_a_new_hard_gate_failure_blocks_whatever_the_rates() -> None:
    # Task 1 (both pass in A): one B run fails safety. Rates barely move: (1/2 - 1)/12.
    runs = _runs("A", MIXED) + _runs("B", MIXED, unsafe=[(1, 0)])
    result = evaluate_gate(
        runs, baseline="A", candidate="B", margin=0.2, criteria=CRITERIA, n_boot=300
    )
    assert result.decision == "block"
    assert [f.model_dump() for f in result.hard_gates.new_failures] == [
        {"task": "t1", "run_id": "B-1-0", "gates": ["safety"]}
    ]
    # The same gate failing in the baseline on that task is not new: no block from it.
    both = _runs("A", MIXED, unsafe=[(1, 1)]) + _runs("B", MIXED, unsafe=[(1, 0)])
    again = evaluate_gate(
        both, baseline="A", candidate="B", margin=0.2, criteria=CRITERIA, n_boot=300
    )
    assert again.hard_gates.new_failures == [] and again.decision == "ship"


def test_functional_failures_are_not_new_when_the_baseline_failed_them_too() -> None:
    # Task 2 fails (functional) in both treatments: a shared failure, not a new one.
    runs = _runs("A", MIXED) + _runs("B", MIXED)
    result = evaluate_gate(
        runs, baseline="A", candidate="B", margin=0.05, criteria=CRITERIA, n_boot=200
    )
    assert result.hard_gates.new_failures == []


def test_a_clear_regression_blocks() -> None:
    runs = _runs("A", [["pass", "pass"]] * 12) + _runs("B", [["fail", "fail"]] * 12)
    result = evaluate_gate(runs, baseline="A", candidate="B", margin=0.05, n_boot=300)
    # every task: 0 - 1 = -1; CI [-1, -1], upper -1 < -0.05
    assert result.decision == "block"
    assert result.non_inferiority.ci95 == [-1.0, -1.0]
    assert "worse by more than the margin" in result.reason
    # without criteria the hard gates are not checked, and the result says so
    assert not result.hard_gates.checked
    assert any("hard gates" in c for c in result.cannot_support)


def test_too_few_tasks_is_inconclusive_never_no_regression() -> None:
    runs = _runs("A", MIXED[:3]) + _runs("B", MIXED[:3])
    result = evaluate_gate(runs, baseline="A", candidate="B", margin=0.05, n_boot=200)
    # 3 shared tasks < min_tasks 10, even though every difference is 0
    assert result.decision == "inconclusive"
    assert "only 3 shared task(s)" in result.reason
    assert any("'no regression'" in c for c in result.cannot_support)


def test_an_interval_straddling_the_margin_is_inconclusive() -> None:
    # 12 tasks: B gains 0.5 on six and loses 0.5 on six. Mean 0; the bootstrap mean of 12
    # draws of ±0.5 has sd 0.5/sqrt(12) = 0.144, so the 95% CI is about [-0.28, 0.28]:
    # it holds -0.05, neither ruling a regression out nor showing one.
    a = [["pass", "fail"]] * 12
    b = [["pass", "pass"]] * 6 + [["fail", "fail"]] * 6
    result = evaluate_gate(
        _runs("A", a) + _runs("B", b), baseline="A", candidate="B", margin=0.05, n_boot=500
    )
    assert result.decision == "inconclusive"
    ci = result.non_inferiority.ci95
    assert ci is not None
    lo, hi = ci
    assert lo < -0.05 < hi and result.non_inferiority.diff == pytest.approx(0.0)
    # a margin wider than the interval's reach ships
    wide = evaluate_gate(
        _runs("A", a) + _runs("B", b), baseline="A", candidate="B", margin=0.5, n_boot=500
    )
    assert wide.decision == "ship"


def test_dimensions_that_moved_are_listed() -> None:
    runs = _runs("A", MIXED) + _runs("B", MIXED, sloppy=range(6))
    result = evaluate_gate(
        runs,
        baseline="A",
        candidate="B",
        margin=0.05,
        criteria=CRITERIA,
        tolerance=0.05,
        n_boot=200,
    )
    dims = {d.id: d for d in result.dimensions}
    # code quality: 1.0 in A on all 12 tasks; in B 0 on 6 tasks -> mean diff -6/12 = -0.5
    assert dims["code_quality"].diff == pytest.approx(-0.5) and dims["code_quality"].moved
    assert not dims["safety"].moved
    assert result.warnings == ["code_quality dropped by 0.500 (> 0.05)"]
    assert result.decision == "ship"  # dimensions inform; they do not decide


def test_bad_arguments() -> None:
    runs = _runs("A", MIXED)
    with pytest.raises(InputError, match="no treatment 'Z'"):
        evaluate_gate(runs, baseline="A", candidate="Z", margin=0.05)
    with pytest.raises(InputError, match="margin must be >= 0"):
        evaluate_gate(runs, baseline="A", candidate="A", margin=-0.1)


def test_gate_command_on_a_report(tmp_path: Path) -> None:
    out = tmp_path / "r"
    runner = CliRunner()
    scored = runner.invoke(
        cli,
        [
            "score",
            str(SMALL),
            "--gold-labels",
            "--out-dir",
            str(out),
            "--n-boot",
            "200",
            "--no-charts",
        ],
        catch_exceptions=False,
    )
    assert scored.exit_code == 0, scored.output
    assert valid_card(out / "eval-card.yaml")["decision"]["value"] is None
    result = runner.invoke(
        cli,
        [
            "gate",
            "--report",
            str(out / "report.json"),
            "--baseline",
            "base",
            "--candidate",
            "cand",
            "--margin",
            "0.1",
        ],
        catch_exceptions=False,
    )
    # 3 shared tasks (a1, a2, a3) < 10: inconclusive, exit code 4
    assert result.exit_code == 4, result.output
    assert result.output.startswith("INCONCLUSIVE: only 3 shared task(s)")
    gate = json.loads((out / "gate.json").read_text())
    assert gate["non_inferiority"]["diff"] == pytest.approx(1 / 9)
    report = json.loads((out / "report.json").read_text())
    assert report["gate"]["decision"] == "inconclusive"
    assert "## Regression gate" in (out / "report.md").read_text()
    assert "Regression gate" in (out / "report.html").read_text()
    card = valid_card(out / "eval-card.yaml")
    assert card["decision"]["value"] == "inconclusive" == card["claim"]["decision"]
    assert card["results"]["comparison"]["delta"] == pytest.approx(1 / 9)


def test_a_gate_on_gold_labels_does_not_speak_of_a_rubric(tmp_path: Path) -> None:
    # Scored from gold labels there is no rubric at all: the hard-gate check used to say "the
    # rubric has no hard-gate criteria"; it says why there are no criteria instead.
    out = tmp_path / "r"
    runner = CliRunner()
    scored = runner.invoke(
        cli,
        [
            "score",
            str(SMALL),
            "--gold-labels",
            "--out-dir",
            str(out),
            "--n-boot",
            "50",
            "--no-charts",
        ],
        catch_exceptions=False,
    )
    assert scored.exit_code == 0, scored.output
    result = runner.invoke(
        cli,
        [
            "gate",
            "--report",
            str(out / "report.json"),
            "--baseline",
            "base",
            "--candidate",
            "cand",
            "--margin",
            "0.1",
        ],
        catch_exceptions=False,
    )
    expected = (
        "not checked: the run set was scored from gold labels, so there are no judge criteria"
    )
    assert f"hard gates: {expected}" in result.output
    assert "rubric" not in result.output
    gate = json.loads((out / "gate.json").read_text())
    assert gate["hard_gates"] == {"checked": False, "new_failures": [], "summary": expected}
    assert f"safety on hard gates: {expected}" in gate["cannot_support"]
