"""Claude Code stream-json: sessions, kinds, sources, the final answer, failures, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

from judge.traces import import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "claude-code"


def test_a_successful_coding_run() -> None:
    result = import_traces(DATA / "fix_slugify.jsonl", "claude-code")
    assert not result.errors and not result.notes
    [case] = result.cases
    assert case.id == "9f4c2e71-3b8a-4d6e-a1f0-5c7d2b9e8a13"
    assert case.agent_model == "claude-sonnet-4-5-20250929"
    assert case.task.startswith("slugify() keeps leading and trailing hyphens")
    assert case.diff is not None and case.diff.startswith("diff --git a/textkit/slug.py")
    assert '+    return text.strip("-")' in case.diff
    kinds = [t.kind for t in case.trace]
    assert kinds.count("test_run") == 2 and kinds.count("tool_call") == 6
    assert kinds[-1] == "final_answer" and "note" in kinds  # the thinking block
    assert [t.id for t in case.trace] == [f"turn-{i}" for i in range(1, len(case.trace) + 1)]
    failing = case.trace[9]
    assert failing.kind == "test_run" and "1 failed, 5 passed" in failing.content
    assert failing.source == "line 11 content[0]"
    # A tool result shares the step of its call; three blocks of one message share a step.
    assert case.trace[8].step == failing.step == 3
    assert {t.step for t in case.trace[1:4]} == {1}
    assert case.meta["cost_usd"] == 0.0812457 and case.meta["num_turns"] == 8
    assert case.meta["diff_source"] == "turn-16" and case.slices["exit_status"] == "success"
    assert "task_missing" not in case.meta


def test_a_run_that_hit_max_turns_without_its_prompt() -> None:
    result = import_traces(DATA / "max_turns.jsonl", "claude-code")
    [case] = result.cases
    assert case.task == "" and case.meta["task_missing"] is True
    [warning] = result.warnings  # `claude -p` does not echo the prompt: said, not silent
    assert warning.line == 1 and f"case '{case.id}' has no task" in str(warning)
    assert case.agent_model == "claude-haiku-4-5-20251001"
    assert case.diff is None
    assert case.trace[-1].kind == "error" and "error_max_turns" in case.trace[-1].content
    assert "final_answer" not in [t.kind for t in case.trace]
    assert case.meta["exit_status"] == "error_max_turns"


def test_bad_lines_are_named_and_the_others_kept() -> None:
    path = DATA / "malformed.jsonl"
    result = import_traces(path, "claude-code")
    where = [(e.line, e.field) for e in result.errors]
    assert where == [
        (3, "message"),
        (4, "message.content"),
        (7, "message.content[0].tool_use_id"),
        (10, None),
    ]
    assert all(e.file == str(path) for e in result.errors)
    assert "valid string or a valid list (got 5)" in str(result.errors[1])
    assert "not valid JSON" in str(result.errors[3])
    assert any("'telemetry'" in n and "line 5" in n for n in result.notes)
    assert any("stream_event" in n for n in result.notes)
    [case] = result.cases
    assert [t.kind for t in case.trace] == ["tool_call", "test_run", "final_answer"]


def test_a_new_session_starts_a_new_case(tmp_path: Path) -> None:
    lines = (DATA / "fix_slugify.jsonl").read_text().splitlines()
    other = [json.loads(line) for line in (DATA / "max_turns.jsonl").read_text().splitlines()]
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(lines + [json.dumps(o) for o in other]) + "\n")
    cases = import_traces(path, "claude-code").cases
    assert [c.agent_model for c in cases] == [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5-20251001",
    ]
    assert cases[1].trace[0].source == f"line {len(lines) + 2} content[0]"


def test_subagent_turns_are_marked_and_never_the_final_answer(tmp_path: Path) -> None:
    base = {"session_id": "s1"}
    events = [
        {"type": "system", "subtype": "init", "model": "m", **base},
        {
            "type": "assistant",
            "message": {
                "id": "a",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "look"}}
                ],
            },
            **base,
        },
        {
            "type": "assistant",
            "parent_tool_use_id": "t1",
            "message": {"id": "b", "content": [{"type": "text", "text": "sub-agent says hi"}]},
            **base,
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [
                            {"type": "text", "text": "done"},
                            {"type": "image", "source": {}},
                        ],
                    }
                ]
            },
            **base,
        },
        {
            "type": "assistant",
            "message": {"id": "c", "content": [{"type": "text", "text": "ok"}]},
            **base,
        },
    ]
    path = tmp_path / "sub.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events))
    [case] = import_traces(path, "claude-code").cases
    assert [(t.role, t.kind) for t in case.trace] == [
        ("assistant", "tool_call"),
        ("subagent", "message"),
        ("tool", "tool_result"),
        ("assistant", "final_answer"),
    ]
    assert case.trace[2].content == "done\n[image]"
