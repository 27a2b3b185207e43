"""The OpenTelemetry Python SDK's console span output, read as OTLP/JSON spans.

``ConsoleSpanExporter`` prints each span as ``span.to_json()`` (opentelemetry-sdk,
``opentelemetry/sdk/trace/__init__.py``): a pretty-printed JSON object per span, one after the
other (not JSONL, not one document)::

    {"name", "context": {"trace_id": "0x<32 hex>", "span_id": "0x<16 hex>", "trace_state"},
     "kind": "SpanKind.CLIENT", "parent_id": "0x<16 hex>" | null,
     "start_time": "2026-01-01T00:00:00.000000Z", "end_time": ...,
     "status": {"status_code": "UNSET" | "OK" | "ERROR", "description"?},
     "attributes": {key: value}, "events": [{"name", "timestamp", "attributes"}],
     "links": [...], "resource": {"attributes": {...}, "schema_url"}}

:func:`read_console` turns each object into the OTLP/JSON span shape (hex ids without ``0x``,
nanosecond times, ``[{"key", "value": AnyValue}]`` attributes, status codes 0/1/2), so the
OTLP reader takes it as it is. Times have microsecond precision in this form.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from judge.errors import InputError
from judge.traces.otlp import otlp_attribute

_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def looks_like_console(head: str) -> bool:
    """True when ``head`` starts like ``span.to_json()`` output."""
    start = head.lstrip()
    return start.startswith("{") and '"context"' in head and '"trace_id": "0x' in head


def read_console(
    text: str, file: str
) -> tuple[list[tuple[int, dict[str, Any], str | None]], list[InputError]]:
    """``(line, OTLP span, service name)`` for every span object in ``text``, and an error for
    each object that is not valid JSON or not a span (reading stops at invalid JSON)."""
    decoder = json.JSONDecoder()
    spans: list[tuple[int, dict[str, Any], str | None]] = []
    errors: list[InputError] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            break
        line = text.count("\n", 0, at) + 1
        try:
            obj, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            errors.append(
                InputError(
                    f"not valid JSON ({exc.msg})",
                    file=file,
                    line=text.count("\n", 0, exc.pos) + 1,
                    hint="is the console output cut short?",
                )
            )
            break
        except RecursionError:
            errors.append(InputError("JSON nested too deeply", file=file, line=line))
            break
        span = _span(obj, file, line, errors)
        if span is not None:
            spans.append((line, span, _service(obj)))
    return spans, errors


def _hex(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value[2:] if value.lower().startswith("0x") else value


def _nanos(value: Any) -> int:
    if not isinstance(value, str):
        return 0
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _attributes(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, dict):
        return []
    return [otlp_attribute(str(k), v) for k, v in value.items()]


def _span(obj: Any, file: str, line: int, errors: list[InputError]) -> dict[str, Any] | None:
    context = obj.get("context") if isinstance(obj, dict) else None
    trace_id = _hex(context.get("trace_id")) if isinstance(context, dict) else None
    span_id = _hex(context.get("span_id")) if isinstance(context, dict) else None
    if trace_id is None or span_id is None:
        errors.append(
            InputError(
                "not a span of ConsoleSpanExporter output",
                file=file,
                line=line,
                field="context.trace_id / context.span_id",
            )
        )
        return None
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": _hex(obj.get("parent_id")),
        "name": obj.get("name") if isinstance(obj.get("name"), str) else "",
        "startTimeUnixNano": _nanos(obj.get("start_time")),
        "endTimeUnixNano": _nanos(obj.get("end_time")),
        "attributes": _attributes(obj.get("attributes")),
        "events": [
            {"name": e.get("name") or "", "attributes": _attributes(e.get("attributes"))}
            for e in obj.get("events") or []
            if isinstance(e, dict)
        ],
        "status": {
            "code": _STATUS.get(str(status.get("status_code")), 0),
            "message": status.get("description"),
        },
    }
    return span


def _service(obj: dict[str, Any]) -> str | None:
    resource = obj.get("resource")
    attrs = resource.get("attributes") if isinstance(resource, dict) else None
    name = attrs.get("service.name") if isinstance(attrs, dict) else None
    return name if isinstance(name, str) else None
