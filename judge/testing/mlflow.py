"""A throwaway MLflow tracking server on 127.0.0.1 for tests and benchmarks, and agent traces in
MLflow's conventions to seed it with.

MLflow runs from its own virtualenv (``make test`` builds ``.venv-mlflow`` with the pinned
``mlflow``; its ~200 dependencies never enter judge's): ``mlflow server`` on a free loopback
port, SQLite and the artifact store in a temporary folder, telemetry and the job runner off.
Start-up takes about 40 s on a busy 2-core machine (mostly imports, in the parent and in each
uvicorn worker), so tests start one server per session::

    server = MlflowServer.start(MlflowServer.find(repo))
    experiment = server.experiment("agents")
    seed(server.url, experiment, [agent_trace("Where is my order?", ...)])
    ...
    server.stop()

Traces go in as OTLP/JSON (``POST /v1/traces`` with the header ``x-mlflow-experiment-id``),
with MLflow's own span attributes (``mlflow.spanType``, ``mlflow.spanInputs`` /
``mlflow.spanOutputs``: what its tracing SDK writes), so nothing but httpx is needed on judge's
side. People's assessments go in as MLflow's UI posts them (:func:`assess`).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from judge.testing.processes import LocalServer, free_port
from judge.testing.support_agent import TOOL_ERROR, ToolCall, support_run
from judge.traces import otlp_value

#: The MLflow release the tests and the benchmark run against (the Makefile installs it;
#: 3.18.0 is listed on PyPI but its mlflow-skinny is not served, so it cannot be installed).
MLFLOW_VERSION = "3.17.2"
#: The environment variable naming another virtualenv with ``bin/mlflow``.
MLFLOW_VENV_ENV = "JUDGE_MLFLOW_VENV"
#: The environment variable naming an MLflow already running (``http://127.0.0.1:PORT``) for
#: the tests to use instead of starting one (they make experiments of their own in it).
MLFLOW_URL_ENV = "JUDGE_MLFLOW_URL"
#: Seconds to wait for ``/health`` (about 40 s were measured on a loaded 2-core machine).
READY_TIMEOUT_S = 300.0
#: Uvicorn workers of a test server (the default of ``mlflow server`` is 4).
WORKERS = 2

TRACES = "/api/3.0/mlflow/traces"


class MlflowUnavailable(RuntimeError):
    """No MLflow to run here, or it did not start (the message says why)."""


@dataclass
class MlflowServer(LocalServer):
    """A running throwaway MLflow tracking server: its port, folder and process."""

    program: ClassVar[str] = "mlflow"
    serve: ClassVar[str] = "server"
    requirement: ClassVar[str] = f"mlflow=={MLFLOW_VERSION}"
    venv_env: ClassVar[str] = MLFLOW_VENV_ENV
    env_prefix: ClassVar[str] = "MLFLOW_"
    ready_path: ClassVar[str] = "/health"
    unavailable: ClassVar[type[RuntimeError]] = MlflowUnavailable
    targets: ClassVar[str] = "/experiments"

    def experiment(self, name: str) -> str:
        """The id of a new experiment named ``name``."""
        return create_experiment(self.url, name)

    @classmethod
    def start(
        cls,
        executable: Path,
        *,
        workers: int = WORKERS,
        timeout_s: float = READY_TIMEOUT_S,
    ) -> MlflowServer:
        """Start ``mlflow server`` and wait until ``/health`` answers 200."""
        root = cls.folder()
        (root / "artifacts").mkdir()
        port = free_port()
        return cls.launch(
            executable,
            [
                "--backend-store-uri",
                f"sqlite:///{root}/mlflow.db",
                "--artifacts-destination",
                str(root / "artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            root=root,
            port=port,
            settings={
                "MLFLOW_DISABLE_TELEMETRY": "true",
                "DO_NOT_TRACK": "true",
                # No huey job runner (it runs online scoring jobs, which tests never start).
                "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            },
            timeout_s=timeout_s,
            cwd=root,
        )


def create_experiment(base: str, name: str) -> str:
    """The id of a new experiment ``name`` on the MLflow at ``base``."""
    import httpx

    answer = httpx.post(
        f"{base}/api/2.0/mlflow/experiments/create", json={"name": name}, timeout=60
    )
    if answer.status_code != 200:
        raise RuntimeError(f"creating experiment {name}: {answer.status_code} {answer.text[:500]}")
    return str(answer.json()["experiment_id"])


# --- traces to seed it with ------------------------------------------------------------------


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    """OTLP/JSON attributes (dicts and lists stay structured: MLflow reads them back as the same
    JSON); None values are left out."""
    return [{"key": k, "value": otlp_value(v)} for k, v in values.items() if v is not None]


def _nanos(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1_000_000) * 1000)


@dataclass
class AgentTrace:
    """One agent run as OTLP/JSON spans in MLflow's conventions; ``trace_id`` is MLflow's id
    (``tr-`` + the OTel trace id), ``root_span_id`` the hex id of the AGENT span."""

    trace_id: str
    root_span_id: str
    spans: list[dict[str, Any]]


def agent_trace(
    question: str,
    answer: str,
    *,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    result: Any = None,
    error: str | None = None,
    model: str = "gpt-4o-mini",
    session: str = "sess-1",
    start: datetime | None = None,
) -> AgentTrace:
    """The support agent's run (:func:`~judge.testing.support_agent.support_run`) as MLflow's
    tracing SDK records it: AGENT (inputs ``{"messages"}``, outputs the assistant message) ->
    CHAT_MODEL (OpenAI chat inputs and outputs, a tool call) -> TOOL (inputs the arguments,
    outputs the result; or ``error``: status ERROR and an exception event) -> CHAT_MODEL (the
    answer); without ``tool``, AGENT -> CHAT_MODEL (the answer)."""
    run = support_run(
        question,
        answer,
        tool=tool,
        arguments=arguments,
        told=json.dumps(result),
        error=error,
        start=start,
    )
    otel_id, root = secrets.token_hex(16), secrets.token_hex(8)

    def span(
        name: str, kind: str, begin: datetime, end: datetime, attrs: dict[str, Any]
    ) -> dict[str, Any]:
        parent = None if kind == "AGENT" else root
        return {
            "traceId": otel_id,
            "spanId": root if parent is None else secrets.token_hex(8),
            **({"parentSpanId": parent} if parent else {}),
            "name": name,
            "kind": 1,
            "startTimeUnixNano": _nanos(begin),
            "endTimeUnixNano": _nanos(end),
            "attributes": _attributes({"mlflow.spanType": kind, **attrs}),
            "status": {"code": 1},
        }

    children = []
    for step in run.steps:
        if isinstance(step, ToolCall):
            attrs = {"mlflow.spanInputs": arguments or {}, "mlflow.spanOutputs": result}
            name = step.call["function"]["name"]
            children.append(_failed(span(name, "TOOL", step.begin, step.end, attrs), error))
        else:
            chat = _chat(model, step.messages, step.reply)
            children.append(span("ChatCompletion", "CHAT_MODEL", step.begin, step.end, chat))
    agent = {
        "mlflow.spanInputs": {"messages": [run.user]},
        "mlflow.spanOutputs": run.final,
        "session.id": session,
    }
    ended = run.end + timedelta(milliseconds=5)
    return AgentTrace(
        "tr-" + otel_id, root, [span("support_agent", "AGENT", run.begin, ended, agent), *children]
    )


def _chat(model: str, messages: list[dict[str, Any]], reply: dict[str, Any]) -> dict[str, Any]:
    """A model call's attributes: OpenAI chat inputs and outputs, and the token usage."""
    finish = "tool_calls" if reply.get("tool_calls") else "stop"
    return {
        "mlflow.spanInputs": {"model": model, "messages": messages},
        "mlflow.spanOutputs": {
            "id": "chatcmpl-" + secrets.token_hex(4),
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
        },
        "mlflow.chat.tokenUsage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
    }


def _failed(span: dict[str, Any], error: str | None) -> dict[str, Any]:
    """The tool span with, when it failed, status ERROR and the exception event."""
    if error is not None:
        span["status"] = {"code": 2, "message": f"{TOOL_ERROR}: {error}"}
        span["events"] = [
            {
                "name": "exception",
                "timeUnixNano": span["endTimeUnixNano"],
                "attributes": _attributes(
                    {"exception.type": TOOL_ERROR, "exception.message": error}
                ),
            }
        ]
    return span


def seed(base: str, experiment_id: str, traces: list[AgentTrace], *, chunk: int = 50) -> None:
    """Send the traces to the experiment through MLflow's OTLP/HTTP endpoint (JSON), ``chunk``
    traces a request; stored when the request returns."""
    import httpx

    with httpx.Client(base_url=base, timeout=300.0) as client:
        for start in range(0, len(traces), chunk):
            spans = [s for t in traces[start : start + chunk] for s in t.spans]
            document = {
                "resourceSpans": [
                    {
                        "resource": {"attributes": _attributes({"service.name": "support-agent"})},
                        "scopeSpans": [{"scope": {"name": "judge.testing"}, "spans": spans}],
                    }
                ]
            }
            answer = client.post(
                "/v1/traces",
                json=document,
                headers={"x-mlflow-experiment-id": experiment_id},
            )
            if answer.status_code != 200:
                raise RuntimeError(
                    f"seeding experiment {experiment_id}: {answer.status_code} {answer.text[:500]}"
                )


def assess(
    base: str,
    trace_id: str,
    name: str,
    value: Any,
    *,
    source_type: str = "HUMAN",
    source_id: str = "",
    rationale: str | None = None,
    overrides: str | None = None,
) -> dict[str, Any]:
    """Post a feedback assessment as MLflow's UI does for a person (``source_id`` is the user,
    ``""`` without auth; ``overrides``: the id of the assessment it corrects); the stored
    assessment."""
    import httpx

    assessment: dict[str, Any] = {
        "trace_id": trace_id,
        "assessment_name": name,
        "source": {"source_type": source_type, "source_id": source_id},
        "feedback": {"value": value},
    }
    if rationale is not None:
        assessment["rationale"] = rationale
    if overrides is not None:
        assessment["overrides"] = overrides
    answer = httpx.post(
        f"{base}{TRACES}/{trace_id}/assessments", json={"assessment": assessment}, timeout=60
    )
    answer.raise_for_status()
    return dict(answer.json()["assessment"])


def assessments(base: str, trace_ids: list[str]) -> list[dict[str, Any]]:
    """Every assessment of these traces (all sources, valid or not), read back over REST."""
    import httpx

    found: list[dict[str, Any]] = []
    with httpx.Client(base_url=base, timeout=120.0) as client:
        for start in range(0, len(trace_ids), 100):
            answer = client.post(
                f"{TRACES}/batchGetInfos", json={"trace_ids": trace_ids[start : start + 100]}
            )
            answer.raise_for_status()
            for info in answer.json().get("trace_infos") or []:
                found += info.get("assessments") or []
    return found
