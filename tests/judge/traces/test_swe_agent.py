"""mini-swe-agent and SWE-agent trajectories: text actions, observations, submissions."""

from __future__ import annotations

from pathlib import Path

from judge.traces import import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "swe-agent"


def test_a_submitted_mini_swe_agent_run() -> None:
    result = import_traces(DATA / "textkit__textkit-12.traj.json", "swe-agent")
    assert not result.errors
    [case] = result.cases
    assert case.id == "textkit__textkit-12"
    assert case.agent_model == "anthropic/claude-sonnet-4-5-20250929"
    # The task is the issue inside <pr_description>, without the template around it.
    assert case.task.startswith("slugify() keeps leading and trailing hyphens")
    assert "Task Instructions" not in case.task
    assert case.diff is not None and case.diff.startswith("diff --git a/textkit/slug.py")
    kinds = [t.kind for t in case.trace]
    assert kinds == [
        "system",
        "message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
        "message",
        "error",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
        "final_answer",
        "tool_result",
    ]
    assert case.trace[9].content.startswith("Please always provide EXACTLY ONE action")
    assert case.trace[7].source == "messages[7]" and case.trace[7].step == 3
    assert case.meta["model_stats"] == {"instance_cost": 0.0437, "api_calls": 7}
    assert case.slices == {"agent": "mini-swe-agent", "exit_status": "Submitted"}


def test_a_mini_run_that_exceeded_its_limits() -> None:
    [case] = import_traces(DATA / "limits_exceeded.traj.json", "swe-agent").cases
    assert case.diff is None and case.meta["exit_status"] == "LimitsExceeded"
    assert case.agent_model == "openai/gpt-4o-mini-2024-07-18"
    assert "final_answer" not in [t.kind for t in case.trace]
    timed_out = case.trace[9]
    assert timed_out.kind == "test_run" and "timed out" in timed_out.content
    assert case.trace[-1].kind == "error" and "Limits exceeded" in case.trace[-1].content


def test_a_swe_agent_trajectory() -> None:
    [case] = import_traces(DATA / "textkit-12.traj", "swe-agent").cases
    assert case.id == "textkit-12"  # replay_config.problem_statement.id
    assert case.agent_model == "claude-3-7-sonnet-20250219"
    assert case.task.startswith("slugify() keeps leading and trailing hyphens")
    assert case.diff is not None and case.diff.startswith("diff --git a/textkit/slug.py")
    assert [t.kind for t in case.trace] == [
        "system",
        "message",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
        "final_answer",
        "tool_result",
    ]
    # The demonstration in the history is not part of the run.
    assert all("Demonstration task" not in t.content for t in case.trace)
    assert case.trace[5].source == "trajectory[1].observation" and case.trace[5].step == 2
    assert case.trace[10].content.endswith("submit")


def test_truncated_and_malformed_trajectories() -> None:
    truncated = import_traces(DATA / "truncated.traj.json", "swe-agent")
    assert truncated.cases == [] and truncated.errors[0].line is not None
    assert "truncated" in str(truncated.errors[0])
    bad = import_traces(DATA / "bad_fields.traj.json", "swe-agent")
    assert [e.field for e in bad.errors] == [
        "messages[2].role",
        "messages[3].content",
        "info.exit_status",
    ]
    [case] = bad.cases  # the valid messages still make a case
    assert [t.kind for t in case.trace] == ["system", "message", "tool_call", "test_run"]
    steps = import_traces(DATA / "bad_steps.traj", "swe-agent")
    assert [e.field for e in steps.errors] == ["replay_config", "trajectory[1].observation"]
    [case] = steps.cases
    assert case.agent_model is None and len(case.trace) == 6


def test_an_empty_trajectory_falls_back_to_the_history(tmp_path: Path) -> None:
    import json

    data = json.loads((DATA / "textkit-12.traj").read_text())
    data["trajectory"] = []
    path = tmp_path / "hist.traj"
    path.write_text(json.dumps(data))
    [case] = import_traces(path, "swe-agent").cases
    assert all("Demonstration task" not in t.content for t in case.trace)
    assert case.trace[0].source == "history[0]" and case.trace[1].source == "history[2]"
    kinds = [t.kind for t in case.trace]
    assert kinds.count("test_run") == 2 and kinds[-2:] == ["final_answer", "tool_result"]
    # tool_call_ids links each observation to its call: same step.
    assert case.trace[-1].step == case.trace[-2].step == 5
