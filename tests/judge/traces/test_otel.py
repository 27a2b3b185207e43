"""OTel GenAI (semconv v1.38.0) OTLP JSON: one case per trace, messages added once, tool spans."""

from __future__ import annotations

import json
from pathlib import Path

from judge.connectors import otel as otel_export
from judge.traces import import_traces
from judge.traces.otel import SEMCONV_VERSION, any_value
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "otel-genai"


def test_the_pinned_version_is_stated_and_the_same_as_export() -> None:
    assert SEMCONV_VERSION == "1.38.0" == otel_export.SEMCONV_VERSION
    import judge.traces.otel as module

    assert "v1.38.0" in (module.__doc__ or "")
    assert "v1.38.0" in (otel_export.__doc__ or "")


def test_a_coding_run_with_full_message_content() -> None:
    result = import_traces(DATA / "fix_slugify.json", "otel-genai")
    assert not result.errors
    # The health-check trace has no gen_ai span: skipped with a note.
    assert result.notes == [
        f"{DATA / 'fix_slugify.json'}: trace 7c9e2f5a1b3d4e6f8a0b1c2d3e4f5a6b"
        " has no gen_ai span (1 spans); skipped"
    ]
    [case] = result.cases
    assert case.id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert case.agent_model == "gpt-4.1-2025-04-14"
    assert case.task.startswith("slugify() keeps leading and trailing hyphens")
    assert case.diff is not None and case.diff.startswith("diff --git a/textkit/slug.py")
    # Five model calls repeat the conversation; every message appears once, in time order.
    assert [t.kind for t in case.trace] == [
        "system",
        "message",
        "tool_call",
        "test_run",
        "message",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
        "tool_call",
        "tool_result",
        "final_answer",
    ]
    assert case.trace[3].source == "span a1b2c3d4e5f60003 gen_ai.input.messages[2].parts[0]"
    assert case.trace[3].step == case.trace[2].step == 1
    assert case.trace[2].content == "[run_shell] $ python -m pytest -q tests/test_slug.py"
    assert case.trace[-1].step == 5
    # usage summed over the five chat spans: 1210+1980+2080+2190+2400 and 31+96+29+22+24
    assert case.meta["usage"] == {"input_tokens": 9860, "output_tokens": 202}
    assert case.meta["duration_ms"] == 19500.0
    assert case.slices == {"agent": "fixer", "provider": "openai"}
    assert case.meta["conversation_id"] == "conv_7d41"


def test_collector_jsonl_tool_spans_without_content_and_an_agent_error() -> None:
    result = import_traces(DATA / "batch.jsonl", "otel-genai")
    assert not result.errors
    quiet, failed = result.cases
    # No message content recorded: the tool spans still show the run (v1.38 tool attributes).
    assert quiet.task == "" and quiet.meta["task_missing"] is True
    [warning] = result.warnings  # a trace without content has no task: said, not silent
    assert f"case '{quiet.id}' has no task" in str(warning) and warning.line == 1
    assert quiet.agent_model == "claude-sonnet-4-5-20250929"
    assert [t.kind for t in quiet.trace] == [
        "tool_call",
        "test_run",
        "tool_call",
        "tool_result",
        "tool_call",
        "test_run",
    ]
    assert quiet.trace[0].source == "span 3c4d5e6f7a8b9c0d"
    assert quiet.trace[3].content == "[no result recorded]"
    assert quiet.meta["usage"] == {"input_tokens": 10022, "output_tokens": 289}
    # The second run: the tool span's ERROR status and the agent span's error.
    assert failed.agent_model == "gemini-2.5-pro"
    assert "TimeoutError: command exceeded 60 s" in failed.trace[2].content
    assert failed.trace[-1].kind == "error" and "giving up" in failed.trace[-1].content
    assert failed.meta["exit_status"] == "error"


def test_bad_spans_and_attributes_are_named_and_the_rest_kept() -> None:
    result = import_traces(DATA / "malformed.json", "otel-genai")
    fields = [e.field for e in result.errors]
    assert fields == [
        "resourceSpans[0].scopeSpans[0].spans[2].spanId",
        "span d2d2d2d2d2d2d2d2 gen_ai.input.messages",
        "resourceSpans[0].scopeSpans[0].spans[5].startTimeUnixNano",
        "resourceSpans[0].scopeSpans[0].spans[6]",
        "resourceSpans[1].scopeSpans",
    ]
    assert "not valid JSON" in str(result.errors[1]) and "'soon'" in str(result.errors[2])
    [case] = result.cases
    # An output message in the role/content form (no "parts") is read as the pre-1.37 form.
    assert [t.kind for t in case.trace] == [
        "message",
        "tool_call",
        "test_run",
        "message",
        "final_answer",
    ]
    assert case.trace[3].content == "no parts here"
    assert case.meta["conventions"] == ["gen_ai role/content (semconv < 1.37)"]
    assert case.trace[2].source == "span f4f4f4f4f4f4f4f4"


def test_otlp_any_values() -> None:
    assert any_value({"intValue": "42"}) == 42
    assert any_value({"arrayValue": {"values": [{"stringValue": "a"}, {"boolValue": True}]}}) == [
        "a",
        True,
    ]
    assert any_value(
        {"kvlistValue": {"values": [{"key": "k", "value": {"doubleValue": 1.5}}]}}
    ) == {"k": 1.5}
    assert any_value({"intValue": "many"}) is None and any_value("x") is None


def test_messages_as_an_otlp_array_and_a_trace_without_agent_span(tmp_path: Path) -> None:
    message = {
        "kvlistValue": {
            "values": [
                {"key": "role", "value": {"stringValue": "user"}},
                {
                    "key": "parts",
                    "value": {
                        "arrayValue": {
                            "values": [
                                {
                                    "kvlistValue": {
                                        "values": [
                                            {"key": "type", "value": {"stringValue": "text"}},
                                            {
                                                "key": "content",
                                                "value": {"stringValue": "hi there"},
                                            },
                                        ]
                                    }
                                }
                            ]
                        }
                    },
                },
            ]
        }
    }
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "chat m",
        "startTimeUnixNano": 1,
        "endTimeUnixNano": 2,
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": {"arrayValue": {"values": [message]}}},
        ],
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    result = import_traces(path, "otel-genai")
    assert not result.errors
    assert result.cases[0].task == "hi there"
    assert any("no invoke_agent span" in n for n in result.notes)
