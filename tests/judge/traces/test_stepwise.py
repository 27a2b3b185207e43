"""Who&When and AgentRx runs: one turn per message, the message index as the step, and the
people's critical step kept apart from anything a judge sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.traces.stepwise import AgentRxTauImporter, WhoAndWhenImporter, normalise_category
from judge.traces.tau_bench import TauBenchImporter
from tests.conftest import SHARED

FBD = SHARED / "fbd"


def _who(tmp_path: Path, name: str = "7.json", **over: object) -> Path:
    run = {
        "is_correct": False,
        "question": "How many stations?",
        "question_ID": "q-1",
        "level": 2,
        "ground_truth": "12",
        "history": [
            {"content": "Plan: count them.", "role": "assistant", "name": "Planner"},
            {
                "content": "exitcode: 1 (execution failed)\nKeyError",
                "role": "user",
                "name": "Computer_terminal",
            },
            {"content": "The answer is 10.", "role": "user", "name": "Verifier"},
        ],
        "mistake_agent": "Verifier",
        "mistake_step": "2",
        "mistake_reason": "accepted a failed run",
    }
    run.update(over)
    path = tmp_path / name
    path.write_text(json.dumps(run), encoding="utf-8")
    return path


def test_a_who_and_when_run_keeps_one_step_per_message(tmp_path: Path) -> None:
    path = _who(tmp_path)
    assert WhoAndWhenImporter().sniff(path) and WhoAndWhenImporter().sniff(tmp_path)
    result = WhoAndWhenImporter().load(path)
    assert result.errors == []
    (case,) = result.cases
    assert case.id == "who-and-when/7" and case.task == "How many stations?"
    assert [(t.step, t.role, t.kind) for t in case.trace] == [
        (0, "Planner", "message"),
        (1, "Computer_terminal", "error"),
        (2, "Verifier", "message"),
    ]
    assert result.gold == {"who-and-when/7": "fail"}
    assert (result.critical[case.id].step, result.critical[case.id].agent) == (2, "Verifier")
    # The right answer and the mistake's reason never reach what a judge sees.
    seen = case.task + "".join(t.content for t in case.trace)
    assert "12" not in seen and "accepted a failed run" not in seen
    assert case.meta["ground_truth"] == "12"


def test_a_who_and_when_step_out_of_range_is_a_clear_error(tmp_path: Path) -> None:
    result = WhoAndWhenImporter().load(_who(tmp_path, mistake_step="3"))
    (error,) = result.errors
    assert "7.json" in str(error) and "mistake_step" in str(error) and "out of range" in str(error)
    assert result.critical == {}


def test_a_run_with_no_messages_is_refused(tmp_path: Path) -> None:
    result = WhoAndWhenImporter().load(_who(tmp_path, history=[]))
    assert result.cases == [] and "no messages" in str(result.errors[0])


def _agentrx(tmp_path: Path, step_number: int = 3, reward: float = 0.0) -> Path:
    runs = [
        {
            "task_id": 5,
            "reward": reward,
            "trial": 0,
            "info": {"task": {"instruction": "return a lamp"}},
            "traj": [
                {"role": "system", "content": "# Retail agent policy"},
                {"role": "user", "content": "Return my lamp."},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "return_item", "arguments": '{"item": 1}'},
                        }
                    ],
                },
                {"role": "tool", "content": "done", "tool_call_id": "c1"},
                {"role": "assistant", "content": "Returned."},
            ],
        }
    ]
    truth = [
        {
            "trajectory_id": 5,
            "failures": [
                {
                    "failure_id": 1,
                    "step_number": step_number,
                    "failure_category": "Instruction/Plan Adherence Failure",
                    "failed_agent": "Assistant",
                }
            ],
            "root_cause": {"failure_id": 1, "reason_for_root_cause": "no authentication"},
            "failure_summary": "returned without authenticating",
        }
    ]
    path = tmp_path / "tau_dataset_failed.json"
    path.write_text(json.dumps(runs), encoding="utf-8")
    (tmp_path / "tau_ground_truth.json").write_text(json.dumps(truth), encoding="utf-8")
    return path


def test_an_agentrx_run_keeps_its_message_indexes_and_a_0_based_critical_step(
    tmp_path: Path,
) -> None:
    path = _agentrx(tmp_path)
    assert AgentRxTauImporter().sniff(path)
    assert not TauBenchImporter().sniff(path)  # the plain tau-bench importer defers to it
    result = AgentRxTauImporter().load(path)
    assert result.errors == []
    (case,) = result.cases
    assert [t.step for t in case.trace] == [0, 1, 2, 3, 4]
    assert case.trace[2].kind == "tool_call" and "return_item" in case.trace[2].content
    assert result.critical[case.id].step == 2  # step_number 3 is 1-based
    assert case.slices["root_cause_category"] == "instruction plan adherence failure"
    assert case.slices["critical_owner"] == "agent"
    assert "authenticat" not in case.task + "".join(t.content for t in case.trace)


def test_an_agentrx_step_out_of_range_and_a_passed_run(tmp_path: Path) -> None:
    result = AgentRxTauImporter().load(_agentrx(tmp_path, step_number=6))
    assert "out of range" in str(result.errors[0]) and result.critical == {}
    passed = AgentRxTauImporter().load(_agentrx(tmp_path, reward=1.0))
    assert passed.gold == {"agentrx-tau-retail/task5": "pass"} and passed.critical == {}


def test_categories_are_normalised() -> None:
    assert (
        normalise_category("Misinterpretation of Tool-Output ")
        == "misinterpretation of tool output"
    )


@pytest.mark.shared
def test_the_shared_runs_import_whole() -> None:
    if not FBD.is_dir():
        pytest.skip(f"{FBD} is absent (the shared data lies beside the clone in CI)")
    who = WhoAndWhenImporter().load(FBD / "who_and_when_algorithm_generated")
    assert (len(who.cases), len(who.errors), len(who.critical)) == (126, 0, 126)
    rx = AgentRxTauImporter().load(FBD / "agentrx_tau_retail" / "tau_dataset_failed.json")
    assert (len(rx.cases), len(rx.errors), len(rx.critical)) == (29, 0, 29)
    owners = [c.slices["critical_owner"] for c in rx.cases]
    assert owners.count("user") == 8  # the shared README: 8 of 29 root causes are the user's
