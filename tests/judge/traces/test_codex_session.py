"""Codex session (rollout) files: real public sessions, both forms, detection, the task."""

from __future__ import annotations

import json
from pathlib import Path

from judge.traces import detect_format, import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "codex"
PLANGATE = DATA / "rollout-2026-04-30T20-32-35-plangate.jsonl"
AGENT_HISTORY = DATA / "rollout-2026-06-05T04-58-20-agent-history.jsonl"
FIX = DATA / "rollout-2025-11-03T10-00-00-fix-slugify.jsonl"


def test_real_exec_sessions_give_one_case_each_with_task_model_and_usage() -> None:
    # These imported as 0 cases, 0 errors and exit 0 before: now detected and read.
    for path in (PLANGATE, AGENT_HISTORY):
        assert detect_format(path) == "codex"
    result = import_traces(PLANGATE)
    assert not result.errors and not result.warnings
    [case] = result.cases
    assert case.id == "019de017-e301-71a1-8b82-32e183204794"
    assert case.task == "respond with only the literal string CODEX_OK if you can read this"
    assert case.agent_model == "gpt-5.3-codex"
    assert case.meta["usage"]["input_tokens"] == 24070 and case.meta["cli_version"] == "0.124.0"
    assert case.meta["exit_status"] == "completed" and case.meta["first_line"] == 1
    # The developer message and the AGENTS.md text Codex adds are context, not the user's.
    assert [(t.role, t.kind) for t in case.trace] == [
        ("system", "system"),
        ("system", "system"),
        ("user", "message"),
        ("assistant", "final_answer"),
    ]
    assert case.trace[-1].content == "CODEX_OK" and case.trace[-1].source == "line 10 message"
    [redacted] = import_traces(AGENT_HISTORY).cases
    assert redacted.task == "[REDACTED_PROMPT]" and redacted.agent_model == "gpt-5.5"
    assert redacted.trace[1].content.startswith("<environment_context>")


def test_tool_calls_outputs_exit_codes_and_the_printed_diff() -> None:
    result = import_traces(FIX, "codex")
    assert not result.errors
    [case] = result.cases
    kinds = [t.kind for t in case.trace]
    assert kinds == [
        "system",
        "message",
        "note",
        "tool_call",
        "test_run",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
        "final_answer",
    ]
    # ["bash", "-lc", CMD] is shown as CMD, and the old {"output", "metadata"} JSON is unwrapped.
    assert case.trace[3].content == "[shell] $ pytest -q"
    assert case.trace[4].content.endswith("1 failed, 6 passed in 0.05s\n")
    assert case.trace[5].content.startswith("[apply_patch]\n*** Begin Patch")
    assert case.diff is not None and '+    return text.strip("-")' in case.diff
    assert case.meta["diff_source"] == "turn-9"
    # One step per model response: the reasoning and its call share one.
    assert [case.trace[i].step for i in (2, 3, 4, 5, 9, 11)] == [1, 1, 1, 2, 4, 5]
    assert case.meta["usage"]["output_tokens"] == 655  # the last token_count
    assert any("'agent_message'" in n for n in result.notes)


def test_the_pre_044_form_and_an_aborted_turn(tmp_path: Path) -> None:
    lines = [
        {
            "id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e",
            "timestamp": "2025-08-01T10:00:00.000Z",
            "instructions": None,
            "git": {"commit_hash": "abc123", "branch": "main"},
        },
        {"record_type": "state"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Create a README"}],
        },
        {
            "type": "function_call",
            "name": "shell",
            "call_id": "call_1",
            "arguments": json.dumps({"command": ["bash", "-lc", "ls"]}),
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": json.dumps({"output": "src\n", "metadata": {"exit_code": 0}}),
        },
    ]
    path = tmp_path / "rollout-2025-08-01T10-00-00-5973b6c0.jsonl"
    path.write_text(
        "\n".join(json.dumps(line) for line in lines)
        + "\n"
        + '{"timestamp":"t","type":"event_msg","payload":{"type":"turn_aborted",'
        '"reason":"interrupted"}}\n'
    )
    assert detect_format(path) == "codex"
    [case] = import_traces(path).cases
    assert case.id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e" and case.task == "Create a README"
    assert [t.kind for t in case.trace] == ["message", "tool_call", "tool_result", "error"]
    assert case.trace[-1].content == "turn aborted: interrupted"
    assert case.meta["exit_status"] == "aborted"


def test_a_session_without_any_turn_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "rollout-empty.jsonl"
    path.write_text(PLANGATE.read_text().splitlines()[0] + "\n")  # only session_meta
    result = import_traces(path, "codex")
    assert result.cases == []
    [error] = result.errors
    assert "case '019de017-e301-71a1-8b82-32e183204794' has no trace turns" in str(error)
    assert (error.file, error.line) == (str(path), 1)
