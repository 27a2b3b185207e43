"""OTLP/JSON values written from Python values: the one encoder the console reader, the platform
connectors and the OpenTelemetry export share."""

from __future__ import annotations

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
        return {
            "kvlistValue": {
                "values": [{"key": str(k), "value": otlp_value(v)} for k, v in value.items()]
            }
        }
    if value is None:
        return {}
    return {"stringValue": str(value)}
