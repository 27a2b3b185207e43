"""The MLflow connector without a server: target URLs, credentials, the span JSON of MLflow's REST
API (a trace recorded with MLflow's own SDK, read back both ways) turned into cases by the
OTLP reader, and the assessment of a verdict."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from judge.connectors import TargetError, resolve
from judge.connectors.mlflow import (
    MlflowConnector,
    assessment_id,
    otlp_span,
    trace_document,
    trace_id_of,
)
from judge.exchange import pool
from judge.traces.otel import read_otlp
from judge.types import Case, RoutingDecision
from tests.conftest import DATA
from tests.judge.connectors.test_platform import WHEN, judgment

SAMPLE = DATA / "mlflow"
TRACE = "tr-e6f592c5a6ab71b66072ec74ee11ad8a"


def test_the_path_names_the_experiment_by_its_id() -> None:
    connector, target = resolve("mlflow+http://127.0.0.1:5000/experiments/7")
    assert isinstance(connector, MlflowConnector)
    assert (target.base, target.resource) == ("http://127.0.0.1:5000", "7")
    assert target.canonical == "mlflow+http://127.0.0.1:5000/experiments/7"
    _, behind = resolve("mlflow+https://u:pw@ml.example.com/mlflow/experiments/12?concurrency=4")
    assert behind.base == "https://ml.example.com/mlflow"
    assert behind.canonical == "mlflow+https://ml.example.com/mlflow/experiments/12"
    assert behind.options == {"concurrency": "4"}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mlflow+http://h:1/experiments/agents", "names an experiment by its id"),
        ("mlflow+http://h:1/projects/3", "names an experiment by its id"),
        ("mlflow+http://h:1/experiments/3?sync=true", "unknown option 'sync'"),
    ],
)
def test_bad_targets_are_refused_with_what_to_give(url: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        resolve(url)


def test_credentials_are_read_as_mlflow_s_client_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    connector, target = resolve("mlflow+http://127.0.0.1:5000/experiments/1")

    def authorization() -> str | None:
        with connector.client(target) as client:  # type: ignore[attr-defined]
            return client._client.headers.get("Authorization")

    assert authorization() is None
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    assert authorization() == "Bearer tok"
    # Basic wins when both are set, as in MLflow's own client.
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "ann")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "s3cret")
    assert authorization() == "Basic " + base64.b64encode(b"ann:s3cret").decode()
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME")
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD")
    _, target = resolve("mlflow+http://bob:pw@127.0.0.1:5000/experiments/1")
    assert authorization() == "Basic " + base64.b64encode(b"bob:pw").decode()


def test_trace_ids_and_assessment_ids() -> None:
    assert trace_id_of("C8422133048555746D592C10BC8F9207") == "tr-c8422133048555746d592c10bc8f9207"
    assert trace_id_of("tr-abc") == "tr-abc"
    first = assessment_id(TRACE, "agent-run-success", "openai/judge")
    assert first == assessment_id(TRACE, "agent-run-success", "openai/judge")
    assert first.startswith("a-") and len(first) == 34  # MLflow's SQL stores take 50
    assert first != assessment_id(TRACE, "agent-run-success", "openai/other")


def _sample(form: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = json.loads((SAMPLE / f"sdk_trace.{form}.json").read_text())
    if form == "get":
        info = data["trace"]["trace_info"]
        return info, [otlp_span(s, TRACE) for s in data["trace"]["spans"]]
    info = json.loads((SAMPLE / "sdk_trace.get.json").read_text())["trace"]["trace_info"]
    return info, [otlp_span(s, TRACE, artifact=True) for s in data["spans"]]


@pytest.mark.parametrize("form", ["get", "artifact"])
def test_a_trace_of_mlflow_s_sdk_reads_as_one_case(form: str) -> None:
    info, spans = _sample(form)
    document, root = trace_document(info, spans)
    result = read_otlp([document], "mlflow+http://h:1/experiments/2")
    assert not result.errors and not result.notes
    [case] = result.cases
    assert case.id == TRACE and case.meta["root_span_id"] == root == "f13c79ea9fcf22f0"
    assert case.task == "Will it rain in Lisbon tomorrow? Should I expect my delivery to be late?"
    assert case.meta["conventions"] == ["mlflow"]
    assert case.meta["conversation_id"] == "sess-002"  # the trace's session
    assert case.meta["usage"] == {"input_tokens": 260, "output_tokens": 60}
    assert case.agent_model == "gpt-4o-mini"
    assert [t.kind for t in case.trace] == [
        "system",
        "message",
        "tool_call",
        "error",  # the tool span's status is ERROR
        "final_answer",
    ]
    assert case.trace[2].content == '[get_weather] {"city": "Lisbon"}'
    assert case.trace[3].content == "ERROR: weather API did not answer within 5s"


def test_a_trace_without_an_agent_span_reads_its_root_as_the_run() -> None:
    info, spans = _sample("get")
    for span in spans:  # what @mlflow.trace on a plain function records
        for pair in span["attributes"]:
            if pair["value"] == {"stringValue": "AGENT"}:
                pair["value"] = {"stringValue": "CHAIN"}
    document, root = trace_document(info, spans)
    [case] = read_otlp([document], "x").cases
    assert case.meta["root_span_id"] == root
    assert case.task.startswith("Will it rain in Lisbon")
    assert case.trace[-1].kind == "final_answer"


def test_the_assessment_of_a_verdict() -> None:
    connector = MlflowConnector()
    case = Case(
        id=TRACE,
        kind="agent_run",
        task="Rain?",
        meta={"trace_id": TRACE, "root_span_id": "f13c79ea9fcf22f0", "target": "t"},
    )
    decision = RoutingDecision(
        id="r1",
        card_digest="sha256:" + "c" * 64,
        case_id=TRACE,
        model="openai/judge",
        rubric_id="agent-run-success",
        rubric_version=2,
        kind="binary",
        decision="auto_reject",
        reason="band",
        detail="below the fail band",
        score=0.1,
        judgment_ids=["j"],
        routed_at=WHEN,
    )
    verdict = pool([judgment(TRACE, "fail", 0.2)], case, decision)
    assert verdict is not None
    body = connector.assessment(verdict)
    assert body["assessment_name"] == "agent-run-success"
    assert body["source"] == {"source_type": "LLM_JUDGE", "source_id": "openai/judge"}
    assert body["feedback"] == {"value": False}
    assert body["metadata"]["judge.route"] == "auto_reject"
    assert body["metadata"]["judge.band"] == "" and body["metadata"]["judge.routed_score"] == "0.1"
    assert all(isinstance(v, str) for v in body["metadata"].values())
    abstained = pool([judgment(TRACE, None, status="abstain")], case, None)
    assert abstained is not None
    body = connector.assessment(abstained)
    assert body["feedback"]["error"]["error_code"] == "ABSTAIN" and "value" not in body["feedback"]
    assert "judge.route" not in body["metadata"]
