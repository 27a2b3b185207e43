"""A throwaway Arize Phoenix server on 127.0.0.1 for tests and benchmarks, and OpenInference
traces to seed it with.

Phoenix runs from its own virtualenv (``make test`` builds ``.venv-phoenix`` with the pinned
``arize-phoenix``; its dependencies never enter judge's): ``phoenix serve`` on two free loopback
ports (HTTP and OTLP gRPC: Phoenix always binds the gRPC one, on every interface), SQLite in a
temporary folder, telemetry and external resources off. Start-up takes 35-80 s on a busy
2-core machine (mostly imports), so tests start one server per session::

    server = PhoenixServer.start(PhoenixServer.find(repo))
    seed(server.url, "agents", [agent_trace("Where is my order?", ...)])
    ...
    server.stop()

Traces go in through Phoenix's JSON span endpoint (``POST /v1/projects/NAME/spans``), so
nothing but httpx is needed on judge's side.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from judge.testing.processes import LocalServer, free_port
from judge.testing.support_agent import TOOL_ERROR, ToolCall, support_run

#: The Phoenix release the tests and the benchmark run against (the Makefile installs it).
PHOENIX_VERSION = "20.26.1"
#: The environment variable naming another virtualenv with ``bin/phoenix``.
PHOENIX_VENV_ENV = "JUDGE_PHOENIX_VENV"
#: The environment variable naming a Phoenix already running (``http://127.0.0.1:PORT``) for
#: the tests to use instead of starting one (they make projects of their own in it).
PHOENIX_URL_ENV = "JUDGE_PHOENIX_URL"
#: Seconds to wait for ``/readyz`` (35-80 s were measured on a loaded 2-core machine).
READY_TIMEOUT_S = 300.0


class PhoenixUnavailable(RuntimeError):
    """No Phoenix to run here, or it did not start (the message says why)."""


@dataclass
class PhoenixServer(LocalServer):
    """A running throwaway Phoenix: its ports (HTTP, and OTLP gRPC: 0 when attached), folder and
    process."""

    grpc_port: int = 0

    program: ClassVar[str] = "phoenix"
    serve: ClassVar[str] = "serve"
    requirement: ClassVar[str] = f"arize-phoenix=={PHOENIX_VERSION}"
    venv_env: ClassVar[str] = PHOENIX_VENV_ENV
    env_prefix: ClassVar[str] = "PHOENIX_"
    ready_path: ClassVar[str] = "/readyz"
    unavailable: ClassVar[type[RuntimeError]] = PhoenixUnavailable
    targets: ClassVar[str] = "/projects"

    @classmethod
    def start(cls, executable: Path, *, timeout_s: float = READY_TIMEOUT_S) -> PhoenixServer:
        """Start ``phoenix serve`` and wait until ``/readyz`` answers 200."""
        root = cls.folder()
        port, grpc_port = free_port(every_interface=True), free_port(every_interface=True)
        while grpc_port == port:
            grpc_port = free_port(every_interface=True)
        return cls.launch(
            executable,
            [],
            root=root,
            port=port,
            settings={
                "PHOENIX_WORKING_DIR": str(root),
                "PHOENIX_SQL_DATABASE_URL": f"sqlite:///{root}/phoenix.db",
                "PHOENIX_HOST": "127.0.0.1",
                "PHOENIX_PORT": str(port),
                "PHOENIX_GRPC_PORT": str(grpc_port),
                "PHOENIX_TELEMETRY_ENABLED": "false",
                "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
                "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
            },
            timeout_s=timeout_s,
            grpc_port=grpc_port,
        )


# --- traces to seed it with ------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Chat messages as OpenInference's flat ``llm.input_messages.N.message.*`` attributes."""
    out: dict[str, Any] = {}
    for i, m in enumerate(messages):
        p = f"{prefix}.{i}.message"
        out[f"{p}.role"] = m["role"]
        if m.get("content") is not None:
            out[f"{p}.content"] = m["content"]
        if m.get("tool_call_id"):
            out[f"{p}.tool_call_id"] = m["tool_call_id"]
        for j, call in enumerate(m.get("tool_calls", [])):
            q = f"{p}.tool_calls.{j}.tool_call"
            out[f"{q}.id"] = call["id"]
            out[f"{q}.function.name"] = call["function"]["name"]
            out[f"{q}.function.arguments"] = call["function"]["arguments"]
    return out


def agent_trace(
    question: str,
    answer: str,
    *,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    result: str | None = None,
    error: str | None = None,
    model: str = "gpt-4o-mini",
    session: str = "sess-1",
    start: datetime | None = None,
) -> list[dict[str, Any]]:
    """The support agent's run (:func:`~judge.testing.support_agent.support_run`) as
    OpenInference spans in the shape of Phoenix's JSON span endpoint: AGENT -> LLM (a tool call)
    -> TOOL (its result, or ``error``: status ERROR and an exception event) -> LLM (the answer);
    without ``tool``, AGENT -> LLM (the answer)."""
    run = support_run(
        question, answer, tool=tool, arguments=arguments, told=result, error=error, start=start
    )
    trace_id, root = secrets.token_hex(16), secrets.token_hex(8)

    def span(
        name: str, kind: str, begin: datetime, end: datetime, attrs: dict[str, Any]
    ) -> dict[str, Any]:
        parent = None if kind == "AGENT" else root
        return {
            "name": name,
            "context": {
                "trace_id": trace_id,
                "span_id": root if parent is None else secrets.token_hex(8),
            },
            "parent_id": parent,
            "span_kind": kind,
            "start_time": _iso(begin),
            "end_time": _iso(end),
            "status_code": "OK",
            "status_message": "",
            "attributes": {"session.id": session, **attrs},
            "events": [],
        }

    spans: list[dict[str, Any]] = []
    for step in run.steps:
        if isinstance(step, ToolCall):
            name = step.call["function"]["name"]
            attrs = {
                "tool.name": name,
                "tool_call.id": step.call["id"],
                "input.value": step.call["function"]["arguments"],
                "input.mime_type": "application/json",
            }
            if result is not None and error is None:
                attrs["output.value"] = result
            spans.append(_failed(span(name, "TOOL", step.begin, step.end, attrs), error))
        else:
            llm = {"llm.model_name": model, "llm.provider": "openai"}
            llm.update(_messages("llm.input_messages", step.messages))
            llm.update(_messages("llm.output_messages", [step.reply]))
            spans.append(span("ChatCompletion", "LLM", step.begin, step.end, llm))
    agent = {
        "agent.name": "support-agent",
        "input.value": question,
        "input.mime_type": "text/plain",
        "output.value": answer,
        "output.mime_type": "text/plain",
    }
    return [span("support-agent", "AGENT", run.begin, run.end, agent), *spans]


def _failed(span: dict[str, Any], error: str | None) -> dict[str, Any]:
    """The tool span with, when it failed, status ERROR and the exception event."""
    if error is not None:
        span["status_code"] = "ERROR"
        span["status_message"] = error
        span["events"] = [
            {
                "name": "exception",
                "timestamp": span["end_time"],
                "attributes": {"exception.type": TOOL_ERROR, "exception.message": error},
            }
        ]
    return span


def seed(base: str, project: str, traces: list[list[dict[str, Any]]], *, chunk: int = 500) -> None:
    """Send the traces' spans to ``project`` (created if new) through Phoenix's JSON span
    endpoint, then wait until the last one can be read (ingestion is asynchronous, in order)."""
    import httpx

    spans = [s for t in traces for s in t]
    if not spans:
        return
    with httpx.Client(base_url=base, timeout=120.0) as client:
        for start in range(0, len(spans), chunk):
            answer = client.post(
                f"/v1/projects/{project}/spans", json={"data": spans[start : start + chunk]}
            )
            if answer.status_code != 202:
                raise RuntimeError(f"seeding {project}: {answer.status_code} {answer.text[:500]}")
        last = spans[-1]["context"]["span_id"]
        deadline = time.monotonic() + max(120.0, len(spans) / 5)
        while time.monotonic() < deadline:
            found = client.get(f"/v1/projects/{project}/spans", params={"span_id": last})
            if found.status_code == 200 and found.json().get("data"):
                return
            time.sleep(0.3)
    raise RuntimeError(f"seeding {project}: span {last} not readable after the wait")


def annotate(
    base: str,
    annotations: list[dict[str, Any]],
    *,
    kind: str = "span",
) -> list[str]:
    """Post annotations as Phoenix's UI does for a person (``annotator_kind`` HUMAN unless
    given), synchronously; their ids. ``kind``: span or trace."""
    import httpx

    data = [{"annotator_kind": "HUMAN", **a} for a in annotations]
    answer = httpx.post(
        f"{base}/v1/{kind}_annotations", params={"sync": "true"}, json={"data": data}, timeout=60
    )
    answer.raise_for_status()
    return [row["id"] for row in answer.json()["data"]]


def span_annotations(
    base: str, project: str, span_ids: list[str], *, names: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every annotation of these spans (all annotators), read back over REST."""
    import httpx

    rows: list[dict[str, Any]] = []
    params: list[tuple[str, Any]] = [("limit", 10000), *(("span_ids", s) for s in span_ids)]
    params += [("include_annotation_names", n) for n in names or []]
    cursor = None
    while True:
        query = [*params, ("cursor", cursor)] if cursor else params
        answer = httpx.get(f"{base}/v1/projects/{project}/span_annotations", params=query)
        answer.raise_for_status()
        body = answer.json()
        rows += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return rows
