"""OTel spans from OpenLLMetry and OpenInference (recorded with the real instrumentations), the
SDK's console output, the pre-1.37 role/content messages, and OTLP logs refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.traces import detect_format, import_traces
from tests.conftest import DATA as TEST_DATA

DATA = TEST_DATA / "traces" / "otel-genai"
TASK = "slugify() keeps leading and trailing hyphens"


def _kinds(path: Path) -> list[str]:
    [case] = import_traces(path, "otel-genai").cases
    return [t.kind for t in case.trace]


def test_openllmetry_indexed_attributes_give_the_conversation() -> None:
    # Before: 1 case with 0 turns and exit 0.
    result = import_traces(DATA / "openllmetry.json", "otel-genai")
    assert not result.errors and not result.warnings
    [case] = result.cases
    assert case.task.startswith(TASK) and case.agent_model == "gpt-4o-mini-2024-07-18"
    assert [t.kind for t in case.trace] == [
        "system",
        "message",
        "tool_call",
        "test_run",
        "final_answer",
    ]
    assert case.trace[2].content == "[run_shell] $ pytest -q"
    assert case.trace[3].source.endswith("gen_ai.input.messages[3].parts[0]")
    assert "1 failed, 1 passed" in case.trace[3].content
    assert case.meta["conventions"] == ["openllmetry"]
    assert case.meta["usage"] == {"input_tokens": 424, "output_tokens": 62}  # 212 + 212, 31 + 31


def test_openinference_attributes_and_the_tool_span_without_a_call_id() -> None:
    result = import_traces(DATA / "openinference.json", "otel-genai")
    assert not result.errors and not result.notes  # the AGENT span is the root
    [case] = result.cases
    assert case.task.startswith(TASK) and case.meta["conventions"] == ["openinference"]
    # The TOOL span has no call id: matched to the message's call by name and arguments, so
    # the call and its result appear once.
    assert [t.kind for t in case.trace] == [
        "system",
        "message",
        "tool_call",
        "test_run",
        "message",
        "final_answer",
    ]
    assert case.trace[-1].content == "Fixed: slugify strips the separators at both ends."
    assert case.meta["usage"] == {"input_tokens": 424, "output_tokens": 62}


def test_the_sdk_console_output_reads_like_otlp() -> None:
    for name in ("openllmetry", "openinference"):
        console = DATA / f"{name}.console.json"
        assert detect_format(console) == "otel-genai"
        assert _kinds(console) == _kinds(DATA / f"{name}.json")
    [case] = import_traces(DATA / "openllmetry.console.json", "otel-genai").cases
    assert case.meta["service"] == "slugify-agent"
    assert case.trace[0].source.startswith("span ")


def test_a_cut_console_output_names_the_line(tmp_path: Path) -> None:
    text = (DATA / "openllmetry.console.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.index('"name": "openai.chat"', 100) + 10])
    result = import_traces(cut, "otel-genai")
    assert len(result.cases) == 1  # the first span was whole
    [error] = result.errors
    assert "not valid JSON" in str(error) and error.line is not None and error.line > 1


def _otlp(
    attributes: dict[str, str],
    events: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    span = {
        "traceId": "5b8aa5a2d2c872e8321cf37308d69df2",
        "spanId": "051581bf3cb55c13",
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
        "events": events or [],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_pre_137_role_content_messages(tmp_path: Path) -> None:
    # v1.26-1.27: gen_ai.prompt / gen_ai.completion JSON, here on the content events.
    messages = [{"role": "user", "content": "What is 2+2?"}]
    events = [
        {
            "name": "gen_ai.content.prompt",
            "attributes": [
                {"key": "gen_ai.prompt", "value": {"stringValue": json.dumps(messages)}}
            ],
        },
        {
            "name": "gen_ai.content.completion",
            "attributes": [
                {
                    "key": "gen_ai.completion",
                    "value": {"stringValue": json.dumps([{"role": "assistant", "content": "4"}])},
                }
            ],
        },
    ]
    path = tmp_path / "v126.json"
    path.write_text(json.dumps(_otlp({"gen_ai.system": "openai"}, events)))
    [case] = import_traces(path, "otel-genai").cases
    assert case.task == "What is 2+2?" and case.trace[-1].content == "4"
    assert case.meta["conventions"] == ["gen_ai role/content (semconv < 1.37)"]
    # role/content items inside gen_ai.input.messages, with OpenAI-style tool calls.
    inputs = [
        {"role": "user", "content": "List the files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "README.md"},
    ]
    path = tmp_path / "role_content.json"
    path.write_text(
        json.dumps(
            _otlp(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps(inputs),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "content": "README.md"}]
                    ),
                }
            )
        )
    )
    [case] = import_traces(path, "otel-genai").cases
    assert [t.kind for t in case.trace] == ["message", "tool_call", "tool_result", "final_answer"]
    assert case.trace[1].content == "[shell] $ ls"


_LS = {"command": "ls"}
#: One model call (a tool call and its result in the input, the answer out) in the shapes
#: MLflow's autologging records in mlflow.spanInputs / mlflow.spanOutputs.
MLFLOW_SHAPES = {
    "openai chat": (
        {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "List the files"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "shell", "arguments": json.dumps(_LS)},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "README.md"},
            ],
        },
        {
            "model": "gpt-4o-mini",
            "choices": [{"message": {"role": "assistant", "content": "There is README.md."}}],
        },
    ),
    "anthropic": (
        {
            "model": "claude-sonnet",
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "List the files"}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "c1", "name": "shell", "input": _LS}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "c1", "content": "README.md"}
                    ],
                },
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet",
            "content": [{"type": "text", "text": "There is README.md."}],
        },
    ),
    "langchain": (
        [
            [
                {"type": "system", "content": "Be brief."},
                {"type": "human", "content": "List the files"},
                {
                    "type": "ai",
                    "content": "",
                    "tool_calls": [{"name": "shell", "args": _LS, "id": "c1"}],
                },
                {"type": "tool", "content": "README.md", "tool_call_id": "c1"},
            ]
        ],
        {
            "generations": [
                [
                    {
                        "text": "There is README.md.",
                        "message": {"type": "ai", "content": "There is README.md."},
                    }
                ]
            ]
        },
    ),
    "openai responses": (
        {
            "model": "gpt-4.1",
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": "List the files"},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "shell",
                    "arguments": json.dumps(_LS),
                },
                {"type": "function_call_output", "call_id": "c1", "output": "README.md"},
            ],
        },
        {
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "There is README.md."}],
                }
            ]
        },
    ),
}


@pytest.mark.parametrize("shape", sorted(MLFLOW_SHAPES))
def test_mlflow_span_types_and_the_messages_of_its_autologging(tmp_path: Path, shape: str) -> None:
    inputs, outputs = MLFLOW_SHAPES[shape]
    attributes = {
        "mlflow.spanType": json.dumps("CHAT_MODEL"),  # traces.json writes every value as JSON
        "mlflow.spanInputs": json.dumps(inputs),
        "mlflow.spanOutputs": json.dumps(outputs),
    }
    path = tmp_path / "mlflow.json"
    path.write_text(json.dumps(_otlp(attributes)))
    [case] = import_traces(path, "otel-genai").cases
    assert case.meta["conventions"] == ["mlflow"]
    assert case.task == "List the files"
    assert [t.kind for t in case.trace] == [
        "system",
        "message",
        "tool_call",
        "tool_result",
        "final_answer",
    ]
    assert case.trace[2].content == "[shell] $ ls"
    assert case.trace[3].content == "README.md"
    assert case.trace[-1].content == "There is README.md."


def test_mlflow_2_chat_messages_and_tool_spans(tmp_path: Path) -> None:
    # MLflow 2.x kept the whole conversation in mlflow.chat.messages, the reply last.
    history = [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
    ]
    attributes = {
        "mlflow.spanType": "LLM",
        "mlflow.spanInputs": json.dumps({"question": "What is 2+2?"}),
        "mlflow.chat.messages": json.dumps(history),
    }
    path = tmp_path / "mlflow2.json"
    path.write_text(json.dumps(_otlp(attributes)))
    [case] = import_traces(path, "otel-genai").cases
    assert case.task == "What is 2+2?" and case.trace[-1].content == "4"
    # A RETRIEVER span is a tool run: its name, its inputs as arguments, its outputs as result.
    attributes = {
        "mlflow.spanType": "RETRIEVER",
        "mlflow.spanInputs": json.dumps({"query": "returns"}),
        "mlflow.spanOutputs": json.dumps([{"page_content": "30 days", "metadata": {}}]),
    }
    path.write_text(json.dumps(_otlp(attributes)))
    [case] = import_traces(path, "otel-genai").cases
    assert [t.kind for t in case.trace] == ["tool_call", "tool_result"]
    assert case.trace[0].content.startswith("[chat gpt-4o]")  # the span's name
    assert "30 days" in case.trace[1].content


def test_an_otlp_logs_document_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "logs.json"
    path.write_text(json.dumps({"resourceLogs": [{"scopeLogs": []}]}))
    assert detect_format(path) == "otel-genai"
    result = import_traces(path)
    [error] = result.errors
    assert "OTLP logs document" in str(error) and "traces" in str(error)
