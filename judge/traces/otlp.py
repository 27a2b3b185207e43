"""OTLP/JSON written from Python values: the one encoder (values, attributes, events, spans) the
console reader, the platform connectors and the OpenTelemetry export share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def otlp_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON ``AnyValue`` (the inverse of
    :func:`judge.traces.otel.any_value`); None is the empty AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [otlp_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [otlp_attribute(str(k), v) for k, v in value.items()]}}
    if value is None:
        return {}
    return {"stringValue": str(value)}


def otlp_attribute(key: str, value: Any) -> dict[str, Any]:
    """One OTLP/JSON ``KeyValue``."""
    return {"key": key, "value": otlp_value(value)}


def otlp_attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Named values as OTLP/JSON attributes, in their order; a None value is left out."""
    return [otlp_attribute(key, value) for key, value in values.items() if value is not None]


def build_otlp_event(name: str, time_nanos: int, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """One OTLP/JSON span event."""
    return {"name": name, "timeUnixNano": time_nanos, "attributes": otlp_attributes(attributes)}


def build_otlp_span(
    *,
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    name: str,
    start_nanos: int,
    end_nanos: int,
    attributes: Mapping[str, Any],
    status: tuple[int, str],
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One OTLP/JSON span, as the platform connectors give their platform's spans to
    :func:`judge.traces.otel.read_otlp`: ``status`` is (code, message); ``events`` (made by
    :func:`build_otlp_event`) only when given; ``parentSpanId`` only for a span with a parent."""
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": start_nanos,
        "endTimeUnixNano": end_nanos,
        "attributes": otlp_attributes(attributes),
    }
    if events is not None:
        span["events"] = events
    span["status"] = {"code": status[0], "message": status[1]}
    if parent_id:
        span["parentSpanId"] = parent_id
    return span
