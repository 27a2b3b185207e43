"""OpenAI-style chat messages: the three file shapes, tool calls, legacy function calls."""

from __future__ import annotations

from judge.traces import import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "openai-chat"


def test_a_coding_conversation_object() -> None:
    result = import_traces(DATA / "fix_slugify.json", "openai-chat")
    assert not result.errors
    [case] = result.cases
    assert (case.id, case.agent_model) == ("chat-run-0007", "gpt-4o-2024-08-06")
    assert case.task.startswith("slugify() keeps leading and trailing hyphens")
    assert case.meta["repo"] == "textkit" and case.meta["diff_source"] == "turn-11"
    assert case.diff is not None and case.diff.startswith("diff --git a/textkit/slug.py")
    assert [t.kind for t in case.trace] == [
        "system",
        "message",
        "tool_call",
        "tool_result",
        "message",
        "tool_call",
        "test_run",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
        "final_answer",
    ]
    assert case.trace[5].source == "messages[4].tool_calls[0]"
    assert case.trace[6].source == "messages[5]" and case.trace[6].step == 2
    # Content given as a list of parts.
    assert case.trace[-1].content.startswith("Done: `slugify` strips hyphens")


def test_a_plain_message_list_that_gives_up() -> None:
    [case] = import_traces(DATA / "messages_list.json", "openai-chat").cases
    assert case.id == "messages_list" and case.agent_model is None and case.diff is None
    assert case.task.startswith("Add a `--version` flag")
    assert case.trace[3].source == "[3]"
    assert case.trace[-1].kind == "final_answer"


def test_jsonl_conversations_and_legacy_function_calls() -> None:
    first, second = import_traces(DATA / "runs.jsonl", "openai-chat").cases
    assert first.trace[2].kind == "test_run"  # a `run_tests` tool's output
    assert first.trace[2].source == "line 1 messages[2]"
    assert [t.kind for t in second.trace] == ["message", "tool_call", "tool_result", "final_answer"]
    assert second.trace[2].step == second.trace[1].step == 1
    assert second.agent_model == "gpt-3.5-turbo-0613"


def test_bad_records_and_messages_are_named_and_the_rest_kept() -> None:
    result = import_traces(DATA / "malformed.jsonl", "openai-chat")
    assert [(e.line, e.field) for e in result.errors] == [
        (2, None),
        (3, "messages"),
        (4, "messages[1].tool_calls[0].function.name"),
        (5, "messages[0].role"),
        (5, "messages[1].content"),
        (6, "id"),
        (7, None),
    ]
    assert [c.id for c in result.cases] == ["ok-1", "bad-call", "no-role"]
    assert result.cases[2].trace[0].kind == "note"
    assert any("'critic'" in n for n in result.notes)
