"""tau-bench results: one case per (task, trial); the reward never reaches the judged text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.traces import import_traces
from tests.conftest import DATA as TEST_DATA
from tests.conftest import shared_path

DATA = TEST_DATA / "traces" / "tau-bench"
SAMPLE = DATA / "tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1115143012.json"
STEM = SAMPLE.stem


def test_results_become_cases_with_gold_outside_the_judged_text() -> None:
    result = import_traces(SAMPLE, "tau-bench")
    ok, bad = result.cases
    assert [c.id for c in result.cases] == [f"{STEM}/task0/trial0", f"{STEM}/task0/trial1"]
    assert ok.agent_model == "gpt-4o" and ok.meta["agent_model_source"] == "file name"
    assert ok.task.startswith("Customer-service agent conversation in the tau-bench airline")
    assert "You want to cancel your reservation MZDDS4" in ok.task
    assert ok.slices["reward"] == 1.0 and bad.slices["reward"] == 0.0
    assert result.gold == {ok.id: "pass", bad.id: "fail"}
    for case in (ok, bad):
        judged = case.task + "".join(t.content for t in case.trace)
        assert "reward" not in judged and 'cancel_reservation", "kwargs' not in judged
    assert [t.role for t in ok.trace[:2]] == ["system", "user(simulated)"]
    assert ok.trace[2].source == "[0].traj[2].tool_calls[0]"
    assert ok.trace[12].kind == "final_answer"  # the user's ###STOP### comes after it
    # The run that crashed before any turn has nothing to judge: an error naming it, not a
    # silent empty case.
    [crashed] = result.errors
    assert f"case '{STEM}/task1/trial0' has no trace turns" in str(crashed)
    assert "RateLimitError" in str(crashed) and crashed.file == str(SAMPLE)
    assert any("infrastructure error" in n for n in result.notes)


def test_bad_results_are_named_and_the_rest_kept() -> None:
    result = import_traces(DATA / "malformed.json", "tau-bench")
    assert [e.field for e in result.errors] == [
        "[0].task_id",
        "[1].reward",
        "[2].traj[2].tool_calls",
        "[3]",
        "[4]",
    ]
    [case] = result.cases
    assert case.id == "malformed/task3/trial0" and len(case.trace) == 4


def test_trials_are_counted_when_absent(tmp_path: Path) -> None:
    records = [{"task_id": 5, "reward": 0.0, "traj": [{"role": "user", "content": "hi"}]}] * 2
    path = tmp_path / "gpt-4o-retail.json"
    path.write_text(json.dumps(records))
    cases = import_traces(path, "tau-bench").cases
    assert [c.id for c in cases] == ["gpt-4o-retail/task5/trial0", "gpt-4o-retail/task5/trial1"]
    assert cases[0].agent_model == "gpt-4o" and cases[0].slices["domain"] == "retail"
    assert cases[0].task == "hi"


@pytest.mark.shared
def test_the_shared_tau_bench_gold_set_loads_through_the_gold_importer() -> None:
    result = import_traces(shared_path("gold/taubench_airline_dev.jsonl"), "gold")
    assert not result.errors and len(result.cases) == 100
    assert sorted(set(result.gold.values())) == ["fail", "pass"]
    assert sum(v == "pass" for v in result.gold.values()) == 31  # README: pass 31 / fail 69
