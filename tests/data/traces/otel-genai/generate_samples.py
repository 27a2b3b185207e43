"""Record the OpenLLMetry / OpenInference samples of this folder with the real instrumentations.

Not run by the tests (the instrumentations are not dependencies of judge). To re-record::

    python -m venv /tmp/samplegen
    /tmp/samplegen/bin/pip install "opentelemetry-instrumentation-openai==0.52.6" \
        openinference-instrumentation-openai==0.1.66 opentelemetry-sdk==1.45.2 \
        opentelemetry-exporter-otlp-proto-common==1.45.2 "openai>=1.60,<2"
    PYTHONPATH=. /tmp/samplegen/bin/python tests/data/traces/otel-genai/generate_samples.py \
        openllmetry|openinference

A three-call agent loop (a tool call, its result, a final answer) runs the real OpenAI client
against judge's loopback server (judge/testing/loopback.py), with the chosen instrumentation;
its spans are written twice: by the SDK's ``ConsoleSpanExporter`` (``span.to_json()`` objects,
as printed to a terminal) and as OTLP/JSON (``encode_spans`` -> protobuf -> JSON with hex ids,
as an OTel collector's file exporter writes it).
"""

from __future__ import annotations

import base64
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

try:
    from openinference.instrumentation import OITracer, TraceConfig
except ImportError:  # only needed for the OpenInference sample
    OITracer = TraceConfig = None

from judge.testing.loopback import LoopbackServer, Reply

HERE = Path(__file__).parent
TASK = (
    "slugify() keeps leading and trailing hyphens: slugify('  Hello, World!  ') returns "
    "'-hello-world-'. Fix it and make sure the tests pass."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_shell",
            "description": "Run a shell command in the repository",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]
TEST_OUTPUT = (
    "F.\nFAILED tests/test_slug.py::test_strip - AssertionError: '-hello-world-'\n"
    "1 failed, 1 passed in 0.03s"
)


def _completion(message: dict[str, Any], finish: str) -> Reply:
    body = {
        "id": "chatcmpl-sample",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 212, "completion_tokens": 31, "total_tokens": 243},
    }
    return Reply(raw_body=json.dumps(body).encode())


def _hex(b64: str) -> str:
    return base64.b64decode(b64).hex()


def _otlp_json(spans: list[Any]) -> dict[str, Any]:
    """OTLP/JSON as the spec wants it: hex ids, integer enums, lowerCamelCase keys."""
    doc = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _hex(span[key])
    return doc


@contextmanager
def _root(tracer: Any, which: str) -> Iterator[None]:
    """The agent's root span: plain for OpenLLMetry, an OpenInference AGENT span otherwise."""
    if which != "openinference":
        with tracer.start_as_current_span("agent run"):
            yield
        return
    oi = OITracer(tracer, config=TraceConfig())
    with oi.start_as_current_span("slugify-agent", openinference_span_kind="agent") as span:
        span.set_input(TASK)
        yield
        span.set_output("Fixed: slugify strips the separators at both ends.")


def main(which: str) -> None:
    """Record one agent run with the ``which`` instrumentation."""
    memory, console = InMemorySpanExporter(), io.StringIO()
    provider = TracerProvider(resource=Resource.create({"service.name": "slugify-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("sample-agent")
    if which == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument()
    else:
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument()
    call = {
        "id": "call_pytest_1",
        "type": "function",
        "function": {"name": "run_shell", "arguments": json.dumps({"command": "pytest -q"})},
    }
    with LoopbackServer() as server:
        server.enqueue(
            _completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
            _completion(
                {
                    "role": "assistant",
                    "content": "The test fails: the separators at the ends are kept. I "
                    "strip them with .strip('-') after joining.",
                },
                "stop",
            ),
        )
        client = OpenAI(base_url=server.api_base, api_key="sk-loopback")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent. Use run_shell."},
            {"role": "user", "content": TASK},
        ]
        with _root(tracer, which):
            first = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=TOOLS
            )  # type: ignore[arg-type]
            tool_call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
            messages.append(first.choices[0].message.model_dump(exclude_none=True))
            if which == "openinference":
                # The TOOL span through OpenInference's own tracer API (OITracer).
                oi = OITracer(tracer, config=TraceConfig())
                with oi.start_as_current_span("run_shell", openinference_span_kind="tool") as sp:
                    sp.set_tool(
                        name="run_shell",
                        description="Run a shell command",
                        parameters=TOOLS[0]["function"]["parameters"],
                    )
                    sp.set_input(tool_call.function.arguments)
                    sp.set_output(TEST_OUTPUT)
            else:
                with tracer.start_as_current_span("run_shell"):
                    pass
            messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": TEST_OUTPUT})
            client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    provider.shutdown()
    (HERE / f"{which}.json").write_text(
        json.dumps(_otlp_json(memory.get_finished_spans()), indent=1) + "\n"
    )
    (HERE / f"{which}.console.json").write_text(console.getvalue())


if __name__ == "__main__":
    main(sys.argv[1])
