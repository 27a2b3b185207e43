"""A throwaway Arize Phoenix server on 127.0.0.1 for tests and benchmarks, and OpenInference
traces to seed it with.

Phoenix runs from its own virtualenv (``make test`` builds ``.venv-phoenix`` with the pinned
``arize-phoenix``; its dependencies never enter judge's): ``phoenix serve`` on two free loopback
ports (HTTP and OTLP gRPC: Phoenix always binds the gRPC one, on every interface), SQLite in a
temporary folder, telemetry and external resources off. Start-up takes 35-80 s on a busy
2-core machine (mostly imports), so tests start one server per session::

    server = PhoenixServer.start(find_phoenix(repo))
    seed(server.url, "agents", [agent_trace("Where is my order?", ...)])
    ...
    server.stop()

Traces go in through Phoenix's JSON span endpoint (``POST /v1/projects/NAME/spans``), so
nothing but httpx is needed on judge's side.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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


def find_phoenix(repo: Path) -> Path:
    """The ``phoenix`` executable of ``$JUDGE_PHOENIX_VENV`` or of ``repo/.venv-phoenix``."""
    venv = Path(os.environ.get(PHOENIX_VENV_ENV) or repo / ".venv-phoenix")
    executable = venv / "bin" / "phoenix"
    if not executable.exists():
        raise PhoenixUnavailable(
            f"{executable} is missing: `make phoenix` builds {repo / '.venv-phoenix'} with "
            f"arize-phoenix=={PHOENIX_VERSION} (or set {PHOENIX_VENV_ENV} to a virtualenv "
            "that has it)"
        )
    return executable


def free_port() -> int:
    """A TCP port free on every interface now (Phoenix binds gRPC on all of them)."""
    with socket.socket(socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET) as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


@dataclass
class PhoenixServer:
    """A running throwaway Phoenix: its ports, folder and process."""

    process: subprocess.Popen[bytes] | None
    port: int
    grpc_port: int
    root: Path
    started_s: float = 0.0
    _log: Any = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """The HTTP root, ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def target(self, project: str) -> str:
        """The judge target URL of a project of this server."""
        return f"phoenix+http://127.0.0.1:{self.port}/projects/{project}"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.root / "server.log"

    @classmethod
    def attach(cls, url: str) -> PhoenixServer:
        """A Phoenix already running at ``http://127.0.0.1:PORT`` (not stopped by stop())."""
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        return cls(None, port, 0, Path(tempfile.mkdtemp(prefix="judge-phoenix-")))

    @classmethod
    def start(cls, executable: Path, *, timeout_s: float = READY_TIMEOUT_S) -> PhoenixServer:
        """Start ``phoenix serve`` and wait until ``/readyz`` answers 200."""
        import httpx

        root = Path(tempfile.mkdtemp(prefix="judge-phoenix-"))
        port, grpc_port = free_port(), free_port()
        while grpc_port == port:
            grpc_port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PHOENIX_")}
        env.update(
            {
                "PHOENIX_WORKING_DIR": str(root),
                "PHOENIX_SQL_DATABASE_URL": f"sqlite:///{root}/phoenix.db",
                "PHOENIX_HOST": "127.0.0.1",
                "PHOENIX_PORT": str(port),
                "PHOENIX_GRPC_PORT": str(grpc_port),
                "PHOENIX_TELEMETRY_ENABLED": "false",
                "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
                "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
            }
        )
        log = (root / "server.log").open("wb")
        began = time.monotonic()
        process = subprocess.Popen(
            [str(executable), "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        server = cls(process, port, grpc_port, root, _log=log)
        deadline = began + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = server.log.read_text(errors="replace")[-2000:]
                server.stop()
                raise PhoenixUnavailable(f"phoenix serve exited ({process.returncode}): {tail}")
            try:
                if httpx.get(server.url + "/readyz", timeout=2.0).status_code == 200:
                    server.started_s = time.monotonic() - began
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        server.stop()
        raise PhoenixUnavailable(
            f"phoenix serve did not answer /readyz within {timeout_s:.0f}s (log: {server.log})"
        )

    def stop(self, *, keep_files: bool = False) -> None:
        """Stop the server (its whole process group) and remove its folder."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
        if not keep_files:
            shutil.rmtree(self.root, ignore_errors=True)


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
            out[f"{q}.function.name"] = call["name"]
            out[f"{q}.function.arguments"] = json.dumps(call["arguments"])
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
    """An OpenInference agent run in the shape of Phoenix's JSON span endpoint: AGENT ->
    LLM (a tool call) -> TOOL (its result, or ``error``: status ERROR and an exception event) ->
    LLM (the answer); without ``tool``, AGENT -> LLM (the answer)."""
    trace_id = secrets.token_hex(16)
    root, first, run, last = (secrets.token_hex(8) for _ in range(4))
    clock = start or datetime.now(UTC) - timedelta(minutes=5)

    def span(
        span_id: str, parent: str | None, name: str, kind: str, ms: int, attrs: dict[str, Any]
    ) -> dict[str, Any]:
        nonlocal clock
        begin, clock = clock, clock + timedelta(milliseconds=ms)
        return {
            "name": name,
            "context": {"trace_id": trace_id, "span_id": span_id},
            "parent_id": parent,
            "span_kind": kind,
            "start_time": _iso(begin),
            "end_time": _iso(clock),
            "status_code": "OK",
            "status_message": "",
            "attributes": {"session.id": session, **attrs},
            "events": [],
        }

    system = {"role": "system", "content": "You are a helpful support agent. Use tools."}
    user = {"role": "user", "content": question}
    final = {"role": "assistant", "content": answer}
    spans: list[dict[str, Any]] = []
    if tool is None:
        llm = {"llm.model_name": model, "llm.provider": "openai"}
        llm.update(_messages("llm.input_messages", [system, user]))
        llm.update(_messages("llm.output_messages", [final]))
        spans.append(span(first, root, "ChatCompletion", "LLM", 800, llm))
    else:
        call = {"id": "call_" + secrets.token_hex(4), "name": tool, "arguments": arguments or {}}
        asked = {"role": "assistant", "content": None, "tool_calls": [call]}
        told = {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": result if error is None else f"ERROR: {error}",
        }
        llm1 = {"llm.model_name": model, "llm.provider": "openai"}
        llm1.update(_messages("llm.input_messages", [system, user]))
        llm1.update(_messages("llm.output_messages", [asked]))
        spans.append(span(first, root, "ChatCompletion", "LLM", 800, llm1))
        tool_attrs: dict[str, Any] = {
            "tool.name": tool,
            "tool_call.id": call["id"],
            "input.value": json.dumps(arguments or {}),
            "input.mime_type": "application/json",
        }
        if result is not None and error is None:
            tool_attrs["output.value"] = result
        tool_span = span(run, root, tool, "TOOL", 300, tool_attrs)
        if error is not None:
            tool_span["status_code"] = "ERROR"
            tool_span["status_message"] = error
            tool_span["events"] = [
                {
                    "name": "exception",
                    "timestamp": tool_span["end_time"],
                    "attributes": {"exception.type": "TimeoutError", "exception.message": error},
                }
            ]
        spans.append(tool_span)
        llm2 = {"llm.model_name": model, "llm.provider": "openai"}
        llm2.update(_messages("llm.input_messages", [system, user, asked, told]))
        llm2.update(_messages("llm.output_messages", [final]))
        spans.append(span(last, root, "ChatCompletion", "LLM", 900, llm2))
    end = clock
    clock = start or datetime.now(UTC) - timedelta(minutes=5)
    agent = span(
        root,
        None,
        "support-agent",
        "AGENT",
        0,
        {
            "agent.name": "support-agent",
            "input.value": question,
            "input.mime_type": "text/plain",
            "output.value": answer,
            "output.mime_type": "text/plain",
        },
    )
    agent["end_time"] = _iso(end)
    return [agent, *spans]


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
