"""Codex exec --json: items in order, command outputs, failures, unknown events, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

from judge.traces import import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "codex"


def test_a_successful_coding_run() -> None:
    result = import_traces(DATA / "fix_slugify.jsonl", "codex")
    assert not result.errors and not result.notes
    [case] = result.cases
    assert case.id == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    assert case.task == "" and case.meta["task_missing"] is True and case.agent_model is None
    # The stream does not record the prompt: never silent, a warning names case, file, line.
    [warning] = result.warnings
    assert (warning.file, warning.line) == (str(DATA / "fix_slugify.jsonl"), 1)
    assert f"case '{case.id}' has no task" in str(warning)
    assert case.diff is not None and case.diff.startswith("diff --git a/textkit/slug.py")
    assert case.meta["usage"] == {
        "input_tokens": 48213,
        "cached_input_tokens": 40192,
        "output_tokens": 1877,
    }
    kinds = [t.kind for t in case.trace]
    assert kinds == [
        "note",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "note",
        "tool_call",
        "test_run",
        "tool_call",
        "tool_call",
        "test_run",
        "tool_call",
        "tool_result",
        "final_answer",
    ]
    # The item's last state is used (the completed todo list), where it first appeared.
    assert case.trace[5].content.startswith("todo list:\n[x]")
    assert case.trace[5].source == "line 14 item_3"
    failing = case.trace[7]
    assert "[exit code 1]" in failing.content and failing.source == "line 10 item_4"
    assert failing.step == case.trace[6].step == 3
    assert case.trace[8].content == "[apply_patch] update /repo/textkit/slug.py (completed)"


def test_a_failed_turn() -> None:
    [case] = import_traces(DATA / "turn_failed.jsonl", "codex").cases
    assert case.meta["exit_status"] == "failed" and case.slices["exit_status"] == "failed"
    kinds = [t.kind for t in case.trace]
    assert kinds == [
        "message",
        "tool_call",
        "test_run",
        "tool_call",
        "error",
        "tool_call",
        "error",
        "error",
        "error",
    ]
    assert case.trace[4].content == "[command declined]"
    assert case.trace[5].content == '[docs.search] {"query": "slugify strip hyphens"}'
    assert case.trace[-1].content.startswith("turn failed: stream disconnected")
    assert "final_answer" not in kinds


def test_bad_lines_are_named_unknown_events_noted_and_the_rest_kept() -> None:
    result = import_traces(DATA / "malformed.jsonl", "codex")
    assert [(e.line, e.field) for e in result.errors] == [
        (3, None),
        (4, "item.id"),
        (5, "item.exit_code"),
    ]
    assert "'zero'" in str(result.errors[2])
    notes = " | ".join(result.notes)
    assert "'session.configured'" in notes and "pre-0.44" in notes
    assert "'collab_tool_call'" in notes
    [case] = result.cases
    assert [t.kind for t in case.trace] == ["tool_call", "test_run", "final_answer"]


def test_an_unfinished_command_and_two_threads(tmp_path: Path) -> None:
    events = [
        {"type": "thread.started", "thread_id": "t1"},
        {
            "type": "item.started",
            "item": {
                "id": "item_0",
                "type": "command_execution",
                "command": "sleep 999",
                "aggregated_output": "",
                "exit_code": None,
                "status": "in_progress",
            },
        },
        {"type": "thread.started", "thread_id": "t2"},
        {
            "type": "item.completed",
            "item": {"id": "item_0", "type": "agent_message", "text": "hello"},
        },
    ]
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events))
    first, second = import_traces(path, "codex").cases
    assert (first.id, second.id) == ("t1", "t2")
    assert [t.kind for t in first.trace] == ["tool_call", "error"]
    assert "had not finished" in first.trace[1].content
    assert [t.kind for t in second.trace] == ["final_answer"]


def test_a_stream_cut_after_turn_started_is_an_error_not_an_empty_case(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text('{"type":"thread.started","thread_id":"t1"}\n{"type":"turn.started"}\n')
    result = import_traces(path, "codex")
    assert result.cases == []
    [error] = result.errors
    assert (error.file, error.line) == (str(path), 1)
    assert "case 't1' has no trace turns" in str(error)
