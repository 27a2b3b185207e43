"""``otel-genai``: OpenTelemetry GenAI spans in OTLP JSON (or the SDK's console output).

**Pinned version: OpenTelemetry semantic conventions for GenAI v1.38.0**, the version
:mod:`judge.connectors.otel` writes (v1.37.0 introduced the structured ``gen_ai.input.messages`` /
``gen_ai.output.messages`` / ``gen_ai.system_instructions`` attributes and
``gen_ai.provider.name``; v1.38.0 added ``gen_ai.tool.call.arguments`` / ``.result`` and the
evaluation event; v1.37 spans read the same). Older and other conventions are read too, through
:mod:`judge.traces.otel_compat`: OpenLLMetry's indexed ``gen_ai.prompt.<i>.*`` attributes,
the pre-1.37 role/content messages, and OpenInference (Arize Phoenix) attributes; the ones found
are listed in ``meta.conventions``. Read:

* the OTLP/JSON encoding: ``{"resourceSpans": [{"resource": {"attributes"}, "scopeSpans":
  [{"scope", "spans": [{"traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano",
  "endTimeUnixNano", "attributes": [{"key", "value": AnyValue}], "events", "status"}]}]}]}``,
  as one JSON document or as JSONL with one such document per line (the collector's file
  exporter); ids are hex strings, 64-bit integers may be strings. The OpenTelemetry Python
  SDK's ``ConsoleSpanExporter`` output (``span.to_json()`` objects one after the other) is read
  too (:mod:`judge.traces.otel_console`); an OTLP *logs* document (``resourceLogs``) is refused
  with a message saying so;
* ``gen_ai.operation.name``: ``invoke_agent`` (the agent run: the root of a case),
  ``chat`` / ``text_completion`` / ``generate_content`` (model calls), ``execute_tool``
  (tool runs); other operations (``create_agent``, ``embeddings``, ...) carry no turns;
* messages in the *parts* form, as a JSON string attribute (or an OTLP array / kvlist value):
  ``[{"role": "system"|"user"|"assistant"|"tool", "parts": [{"type": "text", "content"},
  {"type": "tool_call", "id", "name", "arguments"}, {"type": "tool_call_response", "id",
  "response" (or "result", as the spec's own example has it)}, ...]}]``; output messages
  also have ``finish_reason``. Other part types (blob, file_data, uri, reasoning, ...) are
  shown as ``[type]`` placeholders (reasoning as a note).
  The same attributes on a ``gen_ai.client.inference.operation.details`` span event are read
  when the span itself lacks them;
* ``gen_ai.request.model`` / ``gen_ai.response.model`` (the agent model: the response model of
  the last model call), ``gen_ai.provider.name`` (or the older ``gen_ai.system``),
  ``gen_ai.agent.name``, ``gen_ai.conversation.id``, ``gen_ai.usage.input_tokens`` /
  ``output_tokens`` (summed over model calls into ``meta.usage``);
* ``execute_tool`` spans: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, and, when present,
  ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result`` (added in v1.38.0; read if
  there, never required); a span status of ERROR marks the tool's result as an error.

Mapping: one Case per trace id (id = the trace id). Model calls repeat the whole conversation
in their input, so a message is added once: an input message is new when it occurs more times
in this call's input than it has been added so far (which also handles context resets and
sub-agents); every output message is new. Tool calls and results come from the messages; an
``execute_tool`` span adds its call or result only when no message carries that call id (a
trace recorded without message content still shows its tool runs). Turns are ordered by time
(inputs at the span's start, outputs at its end). ``source`` is ``span <span id>
<attribute>[i].parts[j]``. The task is the first user message; ``step`` counts model calls.
Traces with no gen_ai span are skipped with a note; a trace without an ``invoke_agent`` span is
still imported (from its model calls) with a note. No diff is carried by these conventions:
``diff`` is the output of the last ``git diff`` / ``git show`` a tool printed, if any.

Unsure: real instrumentations differ in where they put messages (span attributes or events),
and in whether ``invoke_agent`` spans carry the conversation; both places are read.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.cases import iter_jsonl
from judge.errors import InputError
from judge.traces import BaseImporter, ImportResult
from judge.traces._common import (
    Loose,
    TraceBuilder,
    agent_run,
    looks_like_jsonl,
    missing_field,
    read_head,
    read_json,
    to_text,
    validate,
)
from judge.traces.otel_compat import normalise, parts_message
from judge.traces.otel_console import looks_like_console, read_console
from judge.types import Case

#: The GenAI semconv version read (and written by judge.connectors.otel: keep the two equal).
SEMCONV_VERSION = "1.38.0"

_MODEL_CALLS = ("chat", "text_completion", "generate_content")
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"


class _KeyValue(Loose):
    key: str
    value: Any = None


class _Status(Loose):
    code: int | str | None = None
    message: str | None = None


class _Event(Loose):
    name: str = ""
    attributes: list[_KeyValue] = []


class _Span(Loose):
    traceId: str
    spanId: str
    parentSpanId: str | None = None
    name: str = ""
    startTimeUnixNano: int = 0
    endTimeUnixNano: int = 0
    attributes: list[_KeyValue] = []
    events: list[_Event] = []
    status: _Status | None = None


class _Message(Loose):
    role: str
    parts: list[dict[str, Any]]
    finish_reason: str | None = None


def any_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a Python value (None when it is not one)."""
    if not isinstance(value, dict):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in value:
        return value["doubleValue"]
    if "arrayValue" in value:
        values = (
            value["arrayValue"].get("values") if isinstance(value["arrayValue"], dict) else None
        )
        return [any_value(v) for v in values] if isinstance(values, list) else []
    if "kvlistValue" in value:
        pairs = (
            value["kvlistValue"].get("values") if isinstance(value["kvlistValue"], dict) else None
        )
        return {
            p["key"]: any_value(p.get("value"))
            for p in pairs or []
            if isinstance(p, dict) and isinstance(p.get("key"), str)
        }
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def read_otlp(documents: list[dict[str, Any]], source: str) -> ImportResult:
    """OTLP/JSON trace documents already in memory (``{"resourceSpans": [...]}``), read as a
    file of them is: one case per trace, errors named by ``source`` and the span."""
    reader = _Reader(source)
    for document in documents:
        reader.document(document, None)
    reader.build()
    return reader.out


def _attributes(pairs: list[_KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


def _is_error(status: _Status | None) -> bool:
    return status is not None and status.code in (2, "2", "STATUS_CODE_ERROR", "ERROR")


@dataclass
class _GenAISpan:
    """A span with gen_ai attributes, its messages parsed and checked."""

    span: _Span
    attrs: dict[str, Any]
    seq: int
    inputs: list[tuple[str, _Message]] = field(default_factory=list)
    outputs: list[tuple[str, _Message]] = field(default_factory=list)
    system: list[dict[str, Any]] = field(default_factory=list)

    @property
    def op(self) -> str | None:
        op = self.attrs.get("gen_ai.operation.name")
        return op if isinstance(op, str) else None

    @property
    def sid(self) -> str:
        return self.span.spanId


class OtelGenAIImporter(BaseImporter):
    """OTLP JSON with GenAI spans: one case per trace."""

    description = (
        f"OpenTelemetry GenAI spans in OTLP JSON or SDK console JSON (semconv "
        f"v{SEMCONV_VERSION}; also OpenLLMetry, OpenInference, pre-1.37 messages)"
    )

    def sniff(self, path: Path) -> bool:
        """OTLP JSON (a ``resourceSpans`` key) or the SDK's console span output."""
        head = read_head(path)
        # An OTLP logs document is taken too, to be refused with a message saying what it is.
        return '"resourceSpans"' in head or '"resourceLogs"' in head or looks_like_console(head)

    def load(self, path: Path) -> ImportResult:
        """Every trace with gen_ai spans as a case; an error for each bad span or attribute."""
        reader = _Reader(str(path))
        if looks_like_console(read_head(path)):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reader.out.errors.append(
                    InputError(f"cannot read the file ({exc})", file=str(path))
                )
                return reader.out
            spans, errors = read_console(text, str(path))
            reader.out.errors.extend(errors)
            for number, raw, service in spans:
                reader.span(raw, number, "span", service)
            reader.build()
            return reader.out
        if looks_like_jsonl(path):
            for number, obj in iter_jsonl(path):
                if isinstance(obj, InputError):
                    reader.out.errors.append(obj)
                else:
                    reader.document(obj, number)
        else:
            data = read_json(path)
            if isinstance(data, InputError):
                reader.out.errors.append(data)
            elif isinstance(data, dict):
                reader.document(data, None)
            else:
                reader.out.errors.append(
                    InputError(
                        "an OTLP JSON document is an object with 'resourceSpans'", file=str(path)
                    )
                )
        reader.build()
        return reader.out


class _Reader:
    """Collects spans by trace, then builds one case per trace."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.out = ImportResult()
        self.traces: dict[str, list[_GenAISpan]] = {}
        self.other_traces: dict[str, int] = {}
        self.services: dict[str, str] = {}
        self.conventions: dict[str, set[str]] = {}
        self.first_lines: dict[str, int] = {}  # trace id -> line of its first gen_ai span
        self.seq = 0

    def error(self, message: str, line: int | None, where: str) -> None:
        self.out.errors.append(InputError(message, file=self.file, line=line, field=where))

    def document(self, data: dict[str, Any], line: int | None) -> None:
        """One ExportTraceServiceRequest: resourceSpans / scopeSpans / spans."""
        resource_spans = data.get("resourceSpans")
        if resource_spans is None and "resourceLogs" in data:
            self.out.errors.append(
                InputError(
                    "this is an OTLP logs document (resourceLogs), not spans",
                    file=self.file,
                    line=line,
                    field="resourceLogs",
                    hint="export the traces (the collector's file exporter on the traces pipeline, "
                    "or an OTLP/HTTP /v1/traces body)",
                )
            )
            return
        if not isinstance(resource_spans, list):
            self.out.errors.append(missing_field(self.file, line, "resourceSpans", "a list"))
            return
        for i, rs in enumerate(resource_spans):
            where = f"resourceSpans[{i}]"
            if not isinstance(rs, dict):
                self.error("must be an object", line, where)
                continue
            resource = rs.get("resource")
            attrs = resource.get("attributes") if isinstance(resource, dict) else None
            service = next(
                (
                    any_value(a.get("value"))
                    for a in attrs or []
                    if isinstance(a, dict) and a.get("key") == "service.name"
                ),
                None,
            )
            scopes = rs.get("scopeSpans")
            if scopes is None and "instrumentationLibrarySpans" in rs:
                self.out.notes.append(
                    f"{self.file}: {where} uses the pre-1.0 OTLP key "
                    "'instrumentationLibrarySpans'; skipped"
                )
                continue
            if not isinstance(scopes, list):
                self.out.errors.append(
                    missing_field(self.file, line, f"{where}.scopeSpans", "a list")
                )
                continue
            for j, scope in enumerate(scopes):
                spans = scope.get("spans") if isinstance(scope, dict) else None
                if not isinstance(spans, list):
                    self.out.errors.append(
                        missing_field(self.file, line, f"{where}.scopeSpans[{j}].spans", "a list")
                    )
                    continue
                for k, raw in enumerate(spans):
                    self.span(
                        raw,
                        line,
                        f"{where}.scopeSpans[{j}].spans[{k}]",
                        service if isinstance(service, str) else None,
                    )

    def span(self, raw: Any, line: int | None, where: str, service: str | None) -> None:
        span = validate(_Span, raw, self.out.errors, self.file, line=line, where=where)
        if span is None:
            return
        if not span.traceId.strip():
            self.error("must be a non-empty trace id", line, f"{where}.traceId")
            return
        attrs = _attributes(span.attributes)
        events = [(event.name, _attributes(event.attributes)) for event in span.events]
        for name, event_attrs in events:
            if name == _DETAILS_EVENT:
                for key, value in event_attrs.items():
                    attrs.setdefault(key, value)
        attrs, convention = normalise(attrs, events)
        if convention is not None:
            self.conventions.setdefault(span.traceId, set()).add(convention)
        if not any(key.startswith("gen_ai.") for key in attrs):
            self.other_traces[span.traceId] = self.other_traces.get(span.traceId, 0) + 1
            return
        self.seq += 1
        parsed = _GenAISpan(span, attrs, self.seq)
        parsed.inputs = self.messages(parsed, "gen_ai.input.messages", line)
        parsed.outputs = self.messages(parsed, "gen_ai.output.messages", line)
        parsed.system = self.parts(parsed, line)
        self.traces.setdefault(span.traceId, []).append(parsed)
        if line is not None:
            self.first_lines.setdefault(span.traceId, line)
        if service:
            self.services.setdefault(span.traceId, service)

    def decoded(self, parsed: _GenAISpan, key: str, line: int | None) -> list[Any] | None:
        """An attribute holding JSON (a string, or an OTLP array), as a list."""
        value = parsed.attrs.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except (json.JSONDecodeError, RecursionError):
                self.error("not valid JSON", line, f"span {parsed.sid} {key}")
                return None
        if not isinstance(value, list):
            self.error(
                f"must be a JSON list (got {type(value).__name__})",
                line,
                f"span {parsed.sid} {key}",
            )
            return None
        return value

    def messages(
        self, parsed: _GenAISpan, key: str, line: int | None
    ) -> list[tuple[str, _Message]]:
        out = []
        for index, raw in enumerate(self.decoded(parsed, key, line) or []):
            where = f"span {parsed.sid} {key}[{index}]"
            if isinstance(raw, dict) and "parts" not in raw and "role" in raw:
                # The role/content form of the conventions before 1.37.
                raw = parts_message(raw)
                self.conventions.setdefault(parsed.span.traceId, set()).add(
                    "gen_ai role/content (semconv < 1.37)"
                )
            message = validate(_Message, raw, self.out.errors, self.file, line=line, where=where)
            if message is not None:
                out.append((where, message))
        return out

    def parts(self, parsed: _GenAISpan, line: int | None) -> list[dict[str, Any]]:
        key = "gen_ai.system_instructions"
        parts = self.decoded(parsed, key, line) or []
        for index, part in enumerate(parts):
            if not isinstance(part, dict):
                self.error("a part must be an object", line, f"span {parsed.sid} {key}[{index}]")
        return [p for p in parts if isinstance(p, dict)]

    def build(self) -> None:
        for trace_id, count in self.other_traces.items():
            if trace_id not in self.traces:
                self.out.notes.append(
                    f"{self.file}: trace {trace_id} has no gen_ai span ({count} spans); skipped"
                )
        for trace_id, spans in self.traces.items():
            self.out.cases.append(_TraceCase(self, trace_id, spans).case())


class _TraceCase:
    """Builds the case of one trace."""

    def __init__(self, reader: _Reader, trace_id: str, spans: list[_GenAISpan]) -> None:
        self.reader, self.trace_id = reader, trace_id
        self.spans = sorted(spans, key=lambda s: (s.span.startTimeUnixNano, s.seq))
        self.builder = TraceBuilder()
        self.added: Counter[str] = Counter()
        self.task: str | None = None
        self.step = 0
        self.tool_errors: dict[str, bool] = {}
        self.message_calls: set[str] = set()
        self.message_results: set[str] = set()
        # (tool name, arguments) -> call id, for tool spans that do not record the call id
        self.calls_by_content: dict[tuple[str, str], str] = {}
        self.calls_have_messages = any(
            s.inputs for s in self.spans if s.op in _MODEL_CALLS or s.op is None
        )
        for s in self.spans:
            for _, message in s.inputs + s.outputs:
                for part in message.parts:
                    if isinstance(part.get("id"), str):
                        if part.get("type") == "tool_call":
                            self.message_calls.add(part["id"])
                            self.calls_by_content.setdefault(
                                _call_key(part.get("name"), part.get("arguments")), part["id"]
                            )
                        elif part.get("type") == "tool_call_response":
                            self.message_results.add(part["id"])
        for s in self.spans:
            if s.op == "execute_tool":
                # A tool span without the call id (MLflow, OpenInference) marks the call with
                # its name and arguments.
                call_id = s.attrs.get("gen_ai.tool.call.id")
                if not isinstance(call_id, str):
                    call_id = self.calls_by_content.get(
                        _call_key(
                            to_text(s.attrs.get("gen_ai.tool.name")) or s.span.name or "tool",
                            s.attrs.get("gen_ai.tool.call.arguments"),
                        )
                    )
                if isinstance(call_id, str):
                    self.tool_errors[call_id] = _is_error(s.span.status)

    def case(self) -> Case:
        events: list[tuple[int, int, int, _GenAISpan, str]] = []
        for s in self.spans:
            events.append((s.span.startTimeUnixNano, s.seq, 0, s, "start"))
            events.append(
                (max(s.span.endTimeUnixNano, s.span.startTimeUnixNano), s.seq, 1, s, "end")
            )
        for _, _, _, s, phase in sorted(events, key=lambda e: e[:3]):
            if s.op == "execute_tool":
                self.tool(s, phase)
            elif s.op in _MODEL_CALLS or (s.op is None and (s.inputs or s.outputs)):
                self.model_call(s, phase)
            elif s.op == "invoke_agent":
                self.agent(s, phase)
        agents = [s for s in self.spans if s.op == "invoke_agent"]
        root = agents[0] if agents else self.spans[0]
        if not agents:
            self.reader.out.notes.append(
                f"{self.reader.file}: trace {self.trace_id} has no "
                "invoke_agent span; imported from its model calls"
            )
        if agents and _is_error(root.span.status):
            message = (root.span.status.message if root.span.status else None) or "error"
            self.builder.add(
                "system",
                f"agent span ended with an error: {message}",
                "error",
                f"span {root.sid} status",
            )
        self.builder.finish()
        return self.assemble(root, bool(agents))

    def assemble(self, root: _GenAISpan, has_agent: bool) -> Case:
        calls = [s for s in self.spans if s.op in _MODEL_CALLS] or [root]
        model = None
        for s in calls:
            found = s.attrs.get("gen_ai.response.model") or s.attrs.get("gen_ai.request.model")
            model = found if isinstance(found, str) else model
        usage: Counter[str] = Counter()
        for s in calls:
            for key in ("input_tokens", "output_tokens"):
                value = s.attrs.get(f"gen_ai.usage.{key}")
                if isinstance(value, int) and not isinstance(value, bool):
                    usage[key] += value
        provider = (
            root.attrs.get("gen_ai.provider.name")
            or root.attrs.get("gen_ai.system")
            or (calls[0].attrs.get("gen_ai.provider.name") or calls[0].attrs.get("gen_ai.system"))
        )
        agent_name = root.attrs.get("gen_ai.agent.name")
        span = root.span
        meta: dict[str, Any] = {
            "trace_id": self.trace_id,
            "root_span_id": span.spanId,
            "semconv_version": SEMCONV_VERSION,
            "conventions": sorted(self.reader.conventions.get(self.trace_id, set())) or None,
            "first_line": self.reader.first_lines.get(self.trace_id),
            "duration_ms": (span.endTimeUnixNano - span.startTimeUnixNano) / 1e6,
            "conversation_id": root.attrs.get("gen_ai.conversation.id"),
            "agent_name": agent_name,
            "provider": provider,
            "usage": dict(usage) or None,
            "service": self.reader.services.get(self.trace_id),
            "exit_status": "error" if has_agent and _is_error(span.status) else None,
        }
        meta = {k: v for k, v in meta.items() if v is not None}
        diff = self.builder.noted_diff(meta)
        return agent_run(
            self.trace_id,
            self.builder.turns,
            task=self.task,
            diff=diff,
            agent_model=model,
            meta=meta,
            slices={
                "agent": to_text(agent_name) or meta.get("service") or "otel-genai",
                "provider": to_text(provider) or None,
            },
        )

    # -- turns ------------------------------------------------------------------------------

    def model_call(self, s: _GenAISpan, phase: str) -> None:
        if phase == "start":
            self.system_instructions(s)
            self.add_messages(s.inputs, only_new=True)
        else:
            self.step += 1
            self.add_messages(s.outputs, only_new=False)

    def agent(self, s: _GenAISpan, phase: str) -> None:
        # The agent's input is usually repeated by its first model call, after the system
        # instructions: read it there, and from the agent span only when no model call
        # carries messages (at its start) or for what no model call had (at its end).
        if phase == "start" and not self.calls_have_messages:
            self.system_instructions(s)
            self.add_messages(s.inputs, only_new=True)
        elif phase == "end":
            self.system_instructions(s)
            self.add_messages(s.inputs, only_new=True)
            self.add_messages(s.outputs, only_new=True)

    def system_instructions(self, s: _GenAISpan) -> None:
        if not s.system:
            return
        key = "system:" + json.dumps(s.system, sort_keys=True, default=str)
        if self.added[key]:
            return
        self.added[key] += 1
        text = "\n".join(_part_text(p) for p in s.system)
        self.builder.add("system", text, "system", f"span {s.sid} gen_ai.system_instructions")

    def add_messages(self, messages: list[tuple[str, _Message]], *, only_new: bool) -> None:
        seen: Counter[str] = Counter()
        for where, message in messages:
            key = message.role + ":" + json.dumps(message.parts, sort_keys=True, default=str)
            seen[key] += 1
            if only_new and seen[key] <= self.added[key]:
                continue
            self.added[key] += 1
            self.add_message(where, message)

    def add_message(self, where: str, message: _Message) -> None:
        role = message.role
        text: list[str] = []
        first = 0

        def flush(upto: int) -> None:
            if not text:
                return
            content = "\n".join(text)
            source = (
                f"{where}.parts[{first}]"
                if upto - first <= 1
                else (f"{where}.parts[{first}:{upto}]")
            )
            if role == "user" and self.task is None:
                self.task = content
            if role == "system":
                self.builder.add("system", content, "system", source)
            elif role == "tool":
                self.builder.result(None, content, source)
            else:
                step = self.step if role == "assistant" else None
                self.builder.add(role, content, "message", source, step)
            text.clear()

        for index, part in enumerate(message.parts):
            kind = part.get("type")
            source = f"{where}.parts[{index}]"
            if kind == "tool_call":
                flush(index)
                call_id = part.get("id") if isinstance(part.get("id"), str) else None
                self.builder.call(
                    call_id,
                    to_text(part.get("name")) or "tool",
                    part.get("arguments"),
                    source,
                    self.step,
                )
            elif kind == "tool_call_response":
                flush(index)
                call_id = part.get("id") if isinstance(part.get("id"), str) else None
                response = part.get("response", part.get("result"))
                self.builder.result(
                    call_id,
                    to_text(response),
                    source,
                    is_error=self.tool_errors.get(call_id or "", False),
                )
            elif kind == "reasoning":
                flush(index)
                self.builder.add(
                    role,
                    _part_text(part),
                    "note",
                    source,
                    self.step if role == "assistant" else None,
                )
            else:
                if not text:
                    first = index
                text.append(_part_text(part))
        flush(len(message.parts))

    def tool(self, s: _GenAISpan, phase: str) -> None:
        call_id = s.attrs.get("gen_ai.tool.call.id")
        call_id = call_id if isinstance(call_id, str) else None
        name = to_text(s.attrs.get("gen_ai.tool.name")) or s.span.name or "tool"
        if call_id is None:
            # A tool span without the call id (OpenInference, traceloop) is the run of the
            # message's call with the same name and arguments, when there is one.
            call_id = self.calls_by_content.get(
                _call_key(name, s.attrs.get("gen_ai.tool.call.arguments"))
            )
        source = f"span {s.sid}"
        if phase == "start" and (call_id is None or call_id not in self.message_calls):
            arguments = s.attrs.get("gen_ai.tool.call.arguments")
            if isinstance(arguments, str):
                with contextlib.suppress(json.JSONDecodeError, RecursionError):
                    arguments = json.loads(arguments)
            self.builder.call(call_id or f"span-{s.sid}", name, arguments, source, self.step)
        elif phase == "end" and (call_id is None or call_id not in self.message_results):
            result = s.attrs.get("gen_ai.tool.call.result")
            error = _is_error(s.span.status)
            text = to_text(result) if result is not None else "[no result recorded]"
            if error and s.span.status is not None and s.span.status.message:
                text += f"\n[error: {s.span.status.message}]"
            self.builder.result(call_id or f"span-{s.sid}", text, source, is_error=error)


def _call_key(name: Any, arguments: Any) -> tuple[str, str]:
    """A tool call's name and arguments, compared as canonical JSON."""
    if isinstance(arguments, str):
        with contextlib.suppress(json.JSONDecodeError, RecursionError):
            arguments = json.loads(arguments)
    return to_text(name), json.dumps(arguments, sort_keys=True, default=str)


def _part_text(part: dict[str, Any]) -> str:
    """The text of a message part, or a ``[type]`` placeholder for non-text parts."""
    if part.get("type") in ("text", "reasoning") and isinstance(part.get("content"), str):
        return str(part["content"])
    return f"[{to_text(part.get('type')) or 'part'}]"
