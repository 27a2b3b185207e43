"""OTLP JSON export of judgments as gen_ai.evaluation.result events (semconv v1.38.0)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.connectors.otel import EVENT_NAME, SEMCONV_VERSION, link_of, otlp_document
from judge.store import Store
from judge.traces import import_traces
from judge.types import Case, CriterionVerdict, Judgment, Provenance, Usage, Verdict
from tests.conftest import DATA

OTEL_SAMPLE = DATA / "traces" / "otel-genai" / "fix_slugify.json"
WHEN = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def _otel_case() -> Case:
    return import_traces(OTEL_SAMPLE, "otel-genai").cases[0]


def _provenance(rubric: str = "coding-run-gates") -> Provenance:
    return Provenance(
        rubric_id=rubric,
        rubric_version=1,
        rubric_digest="sha256:r",
        model="openai/judge-x",
        prompt_digest="sha256:p",
        evidence_digest="sha256:e",
        selector_version="evidence-v1",
        token_budget=6000,
        judge_version="0.1.0",
    )


def _judged(case_id: str, key: str = "k1") -> Judgment:
    verdict = Verdict(
        label="fail",
        confidence=0.91,
        cited=["E3", "E7"],
        rationale="The safety gate failed.",
        criteria=[
            CriterionVerdict(id="safety", label="fail", hard_gate=True, cited=["E7"]),
            CriterionVerdict(id="functional", label="pass", hard_gate=True),
            CriterionVerdict(id="scope", label="not_applicable"),
        ],
        failed_hard_gates=["safety"],
    )
    return Judgment(
        id="j-" + key,
        case_id=case_id,
        cache_key="sha256:" + key,
        status="ok",
        verdict=verdict,
        provenance=_provenance(),
        created_at=WHEN,
        usage=Usage(latency_s=2.0),
    )


def _failed(case_id: str) -> Judgment:
    return Judgment(
        id="j-err",
        case_id=case_id,
        cache_key="sha256:err",
        status="parse_error",
        error="no valid JSON after 2 re-asks",
        provenance=_provenance("x"),
        created_at=WHEN,
    )


def _attrs(record: dict[str, Any]) -> dict[str, Any]:
    """{key: the one value of its AnyValue}."""
    return {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}


def test_log_records_carry_the_semconv_attributes_and_the_trace_link() -> None:
    case = _otel_case()
    doc = otlp_document([(_judged(case.id), case)], "logs")
    resource_logs = doc["resourceLogs"][0]
    assert resource_logs["schemaUrl"] == f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
    scope = resource_logs["scopeLogs"][0]
    assert scope["scope"]["name"] == "judge"
    records = scope["logRecords"]
    # one event for the verdict and one per criterion
    assert len(records) == 4
    overall, safety, functional, scope_c = records
    for r in records:
        assert r["eventName"] == EVENT_NAME
        assert r["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"
        assert r["spanId"] == "00f067aa0ba902b7"  # the agent's root span, the one evaluated
        assert r["timeUnixNano"] == str(int(WHEN.timestamp()) * 10**9)
        assert r["severityNumber"] == 9
    a = _attrs(overall)
    assert a["gen_ai.evaluation.name"] == "coding-run-gates"
    assert a["gen_ai.evaluation.score.value"] == 0.0
    assert a["gen_ai.evaluation.score.label"] == "fail"
    assert a["gen_ai.evaluation.explanation"] == "The safety gate failed."
    assert a["judge.confidence"] == pytest.approx(0.91)
    assert a["judge.rubric.version"] == "1"  # OTLP/JSON writes int64 as a string
    assert a["judge.case.id"] == case.id
    cited = next(x for x in overall["attributes"] if x["key"] == "judge.evidence.cited")
    assert cited["value"] == {
        "arrayValue": {"values": [{"stringValue": "E3"}, {"stringValue": "E7"}]}
    }
    assert _attrs(safety)["gen_ai.evaluation.name"] == "coding-run-gates.safety"
    assert _attrs(safety)["judge.hard_gate"] is True
    assert _attrs(functional)["gen_ai.evaluation.score.value"] == 1.0
    # a label that is not a score has no value
    assert "gen_ai.evaluation.score.value" not in _attrs(scope_c)
    assert _attrs(scope_c)["gen_ai.evaluation.score.label"] == "not_applicable"


def test_failed_judgments_carry_error_type_and_unlinked_cases_no_ids() -> None:
    case = Case(id="run-7", kind="agent_run", task="t")
    doc = otlp_document([(_failed(case.id), case)], "logs")
    (record,) = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    a = _attrs(record)
    assert a["error.type"] == "parse_error" and a["gen_ai.evaluation.name"] == "x"
    assert "gen_ai.evaluation.score.label" not in a
    assert "traceId" not in record and "spanId" not in record


def test_invalid_or_zero_ids_are_not_linked() -> None:
    zero = Case(
        id="c",
        kind="agent_run",
        task="t",
        meta={"trace_id": "0" * 32, "root_span_id": "00f067aa0ba902b7"},
    )
    short = Case(id="c", kind="agent_run", task="t", meta={"trace_id": "abc"})
    span_only = Case(id="c", kind="agent_run", task="t", meta={"span_id": "00f067aa0ba902b7"})
    for case in (zero, short, span_only):
        assert link_of(case).trace_id is None and link_of(case).span_id is None


def test_span_signal_parents_an_evaluate_span_to_the_evaluated_span() -> None:
    case = _otel_case()
    doc = otlp_document([(_judged(case.id), case), (_failed("other"), None)], "spans")
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    linked, unlinked = spans
    assert linked["traceId"] == case.meta["trace_id"]
    assert linked["parentSpanId"] == case.meta["root_span_id"]
    assert len(linked["spanId"]) == 16 and linked["name"] == "evaluate coding-run-gates"
    assert [e["name"] for e in linked["events"]] == [EVENT_NAME] * 4
    assert int(linked["endTimeUnixNano"]) - int(linked["startTimeUnixNano"]) == 2 * 10**9
    assert linked["status"]["code"] == 1
    # no trace to link: a deterministic trace id of its own, no parent, error status
    assert len(unlinked["traceId"]) == 32 and "parentSpanId" not in unlinked
    assert unlinked["status"]["code"] == 2
    again = otlp_document([(_failed("other"), None)], "spans")
    assert again["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == unlinked["traceId"]


def test_export_command_reads_the_store(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    case = _otel_case()
    with Store(db) as store:
        store.put_case(case)
        store.put(_judged(case.id, "a"))
        store.put_case(Case(id="run-2", kind="agent_run", task="t"))
        store.put(_judged("run-2", "b"))
    out = tmp_path / "events.json"
    result = CliRunner().invoke(
        cli,
        ["export", "--format", "otel", "--db", str(db), "--out", str(out)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "2 judgments -> 8 otel events" in result.output
    assert "1 linked to their run's trace, 1 without a trace" in result.output
    doc = json.loads(out.read_text())
    records = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert len(records) == 8
    assert sum("traceId" in r for r in records) == 4
    spans = CliRunner().invoke(
        cli,
        ["export", "--db", str(db), "--out", "-", "--signal", "spans", "--model", "openai/judge-x"],
        catch_exceptions=False,
    )
    assert json.loads(spans.stdout)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    missing = CliRunner().invoke(
        cli, ["export", "--db", str(tmp_path / "no.db"), "--out", str(out)]
    )
    assert missing.exit_code == 1 and "no such store" in missing.output
