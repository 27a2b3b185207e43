"""Export judgments as OpenTelemetry GenAI evaluation events, as OTLP JSON.

Follows the GenAI semantic conventions **v1.38.0** (the first release with the event; status
"development"): event name ``gen_ai.evaluation.result`` with ``gen_ai.evaluation.name``
(required), ``gen_ai.evaluation.score.value`` and ``gen_ai.evaluation.score.label``
(conditionally required), ``gen_ai.evaluation.explanation`` (recommended) and ``error.type``
when the evaluation itself failed. The event "SHOULD be parented to the GenAI operation span
being evaluated": when the judged case came from an OTel trace (``Case.meta`` has ``trace_id``
and ``root_span_id`` or ``span_id``, as :mod:`judge.traces.otel` records them), the event carries
that trace id and span id.

Two encodings (``signal``):

- ``logs`` (default, what the semconv prescribes: events are log records): an OTLP/JSON
  ``ExportLogsServiceRequest`` (``resourceLogs``) with one log record per evaluation, its
  ``eventName`` set (OTLP >= 1.5) and severity INFO. An OTel collector's ``otlpjsonfile``
  receiver or an OTLP/HTTP ``/v1/logs`` endpoint ingests it.
- ``spans``: for trace-only backends (Langfuse, Phoenix, LangSmith ingest OTLP traces), an
  ``ExportTraceServiceRequest`` (``resourceSpans``) with one short ``evaluate <rubric>`` span per
  judgment, a child of the evaluated span when known, carrying the same events as span events.

One event for the overall verdict and one per criterion of a multi-criterion rubric
(``gen_ai.evaluation.name`` = ``<rubric id>`` or ``<rubric id>.<criterion id>``); score value 1.0
for pass, 0.0 for fail, none for other labels (pairwise A/B/tie, abstain, not_applicable).
Attributes of our own are under ``judge.*``. Trace and span ids are hex strings, times are
nanosecond strings, as OTLP/JSON requires.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judge.digests import sha256_hex
from judge.traces.otlp import otlp_attribute
from judge.types import Case, Judgment
from judge.version import __version__

SEMCONV_VERSION = "1.38.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
EVENT_NAME = "gen_ai.evaluation.result"
SEVERITY_INFO = 9
SPAN_KIND_INTERNAL = 1
STATUS_OK, STATUS_ERROR = 1, 2
#: Score values of labels that are scores; any other label has no value.
SCORE_VALUES: Mapping[str, float] = {"pass": 1.0, "fail": 0.0}
Signal = Literal["logs", "spans"]

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


def _valid(pattern: re.Pattern[str], value: Any) -> str | None:
    """A lower-case hex id if valid and not all zeros (an invalid id in OTLP), else None."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    return text if pattern.match(text) and set(text) != {"0"} else None


@dataclass(frozen=True)
class Link:
    """The evaluated operation's trace and span, when the case came from an OTel trace."""

    trace_id: str | None
    span_id: str | None


def link_of(case: Case | None) -> Link:
    """The trace id and span id recorded in the case's meta (None where absent or invalid)."""
    meta = case.meta if case is not None else {}
    trace_id = _valid(_TRACE_ID, meta.get("trace_id"))
    span_id = _valid(_SPAN_ID, meta.get("span_id") or meta.get("root_span_id"))
    return Link(trace_id, span_id if trace_id else None)


def _nanos(judgment: Judgment) -> str:
    return str(int(judgment.created_at.timestamp() * 1_000_000_000))


def evaluation_attributes(judgment: Judgment) -> list[list[dict[str, Any]]]:
    """The attribute lists of every event of one judgment: the overall verdict first, then
    one per criterion."""
    p = judgment.provenance
    common = [
        otlp_attribute("judge.judgment.id", judgment.id),
        otlp_attribute("judge.case.id", judgment.case_id),
        otlp_attribute("judge.model", p.model),
        otlp_attribute("judge.rubric.id", p.rubric_id),
        otlp_attribute("judge.rubric.version", p.rubric_version),
        otlp_attribute("judge.rubric.digest", p.rubric_digest),
        otlp_attribute("judge.status", judgment.status),
    ]
    if p.order is not None:
        common.append(otlp_attribute("judge.order", p.order))
    if p.sample:
        common.append(otlp_attribute("judge.sample", p.sample))
    v = judgment.verdict
    overall = [otlp_attribute("gen_ai.evaluation.name", p.rubric_id)]
    if judgment.status in ("parse_error", "infra_error") or v is None:
        overall.append(otlp_attribute("error.type", judgment.status))
        if judgment.error:
            overall.append(otlp_attribute("gen_ai.evaluation.explanation", judgment.error[:1000]))
        return [overall + common]
    overall += _score(v.label)
    if v.rationale:
        overall.append(otlp_attribute("gen_ai.evaluation.explanation", v.rationale))
    if v.confidence is not None:
        overall.append(otlp_attribute("judge.confidence", float(v.confidence)))
    if v.cited:
        overall.append(otlp_attribute("judge.evidence.cited", list(v.cited)))
    if v.failed_hard_gates:
        overall.append(otlp_attribute("judge.failed_hard_gates", list(v.failed_hard_gates)))
    events = [overall + common]
    for c in v.criteria:
        attrs = [
            otlp_attribute("gen_ai.evaluation.name", f"{p.rubric_id}.{c.id}"),
            *_score(c.label),
            otlp_attribute("judge.hard_gate", c.hard_gate),
        ]
        if c.rationale:
            attrs.append(otlp_attribute("gen_ai.evaluation.explanation", c.rationale))
        if c.cited:
            attrs.append(otlp_attribute("judge.evidence.cited", list(c.cited)))
        events.append(attrs + common)
    return events


def _score(label: str) -> list[dict[str, Any]]:
    out = [otlp_attribute("gen_ai.evaluation.score.label", label)]
    if label in SCORE_VALUES:
        out.insert(0, otlp_attribute("gen_ai.evaluation.score.value", SCORE_VALUES[label]))
    return out


def _resource() -> dict[str, Any]:
    return {
        "attributes": [
            otlp_attribute("service.name", "judge"),
            otlp_attribute("service.version", __version__),
        ]
    }


def _scope() -> dict[str, Any]:
    return {"name": "judge", "version": __version__}


def _document(signal: str, key: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The OTLP/JSON request body of one signal (``Logs``, ``Spans``): judge's resource and
    scope around ``records`` under ``key``."""
    return {
        f"resource{signal}": [
            {
                "resource": _resource(),
                "schemaUrl": SCHEMA_URL,
                f"scope{signal}": [{"scope": _scope(), "schemaUrl": SCHEMA_URL, key: records}],
            }
        ]
    }


def _hex_id(text: str, nbytes: int) -> str:
    """A deterministic id from text (the same judgment always gets the same span)."""
    return sha256_hex(text)[: 2 * nbytes]


def log_records(items: Iterable[tuple[Judgment, Case | None]]) -> list[dict[str, Any]]:
    """One OTLP log record per evaluation event."""
    records = []
    for judgment, case in items:
        link = link_of(case)
        when = _nanos(judgment)
        for attrs in evaluation_attributes(judgment):
            record: dict[str, Any] = {
                "timeUnixNano": when,
                "observedTimeUnixNano": when,
                "severityNumber": SEVERITY_INFO,
                "severityText": "INFO",
                "eventName": EVENT_NAME,
                "attributes": attrs,
            }
            if link.trace_id:
                record["traceId"] = link.trace_id
            if link.span_id:
                record["spanId"] = link.span_id
            records.append(record)
    return records


def spans(items: Iterable[tuple[Judgment, Case | None]]) -> list[dict[str, Any]]:
    """One ``evaluate <rubric>`` span per judgment, its evaluations as span events."""
    out = []
    for judgment, case in items:
        link = link_of(case)
        start = int(judgment.created_at.timestamp() * 1_000_000_000)
        took = int(max(judgment.usage.latency_s, 0.0) * 1_000_000_000)
        span: dict[str, Any] = {
            "traceId": link.trace_id or _hex_id("trace:" + judgment.case_id, 16),
            "spanId": _hex_id("span:" + judgment.id, 8),
            "name": f"evaluate {judgment.provenance.rubric_id}",
            "kind": SPAN_KIND_INTERNAL,
            "startTimeUnixNano": str(start - took),
            "endTimeUnixNano": str(start),
            "attributes": [
                otlp_attribute("judge.case.id", judgment.case_id),
                otlp_attribute("judge.model", judgment.provenance.model),
            ],
            "events": [
                {"timeUnixNano": str(start), "name": EVENT_NAME, "attributes": attrs}
                for attrs in evaluation_attributes(judgment)
            ],
            "status": {
                "code": STATUS_ERROR
                if judgment.status in ("parse_error", "infra_error")
                else STATUS_OK
            },
        }
        if link.span_id:
            span["parentSpanId"] = link.span_id
        out.append(span)
    return out


def otlp_document(
    items: Sequence[tuple[Judgment, Case | None]], signal: Signal = "logs"
) -> dict[str, Any]:
    """The OTLP/JSON request body for ``signal`` ("logs" or "spans")."""
    if signal == "logs":
        return _document("Logs", "logRecords", log_records(items))
    if signal == "spans":
        return _document("Spans", "spans", spans(items))
    raise ValueError(f"signal must be 'logs' or 'spans', not {signal!r}")


def export_otel(
    store: Any,
    *,
    signal: Signal = "logs",
    rubric_id: str | None = None,
    model: str | None = None,
    batch_id: str | None = None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """The OTLP document for the stored judgments (filtered), and counts: judgments, events,
    linked to a trace, unlinked. Masked checks (judge.judging.masking) are not verdicts on the
    run and are left out."""
    cases: dict[str, Case | None] = {}
    items: list[tuple[Judgment, Case | None]] = []
    for j in store.judgments(rubric_id=rubric_id, model=model, batch_id=batch_id):
        if j.provenance.masked_from is not None:
            continue
        if j.case_id not in cases:
            cases[j.case_id] = store.get_case(j.case_id)
        items.append((j, cases[j.case_id]))
    doc = otlp_document(items, signal)
    linked = sum(link_of(c).trace_id is not None for _, c in items)
    events = sum(len(evaluation_attributes(j)) for j, _ in items)
    return doc, {
        "judgments": len(items),
        "events": events,
        "linked": linked,
        "unlinked": len(items) - linked,
    }
