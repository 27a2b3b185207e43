"""Where verdicts go and traces come from, outside judge: OpenTelemetry GenAI evaluation events
(``otel``)."""

from judge.connectors.otel import SEMCONV_VERSION, export_otel

__all__ = ["SEMCONV_VERSION", "export_otel"]
