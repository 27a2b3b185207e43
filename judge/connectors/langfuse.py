"""``langfuse``: Langfuse through its public API (``/api/public``; written against the API of
server v4.16.0 and the v3 line, and tested against a recorded contract, not a live server:
``tests/data/connectors/langfuse/SOURCE.md``).

Target: ``langfuse+https://HOST[:PORT]`` (or ``langfuse+http``; Langfuse Cloud is
``langfuse+https://cloud.langfuse.com``, or ``us.cloud.langfuse.com``...). The path carries
nothing more: the API keys select the project. The keys come from ``LANGFUSE_PUBLIC_KEY`` and
``LANGFUSE_SECRET_KEY``, the variables Langfuse's own SDKs read (else the URL's
``pk:sk@`` userinfo), sent as HTTP Basic; the host is the URL's (``LANGFUSE_BASE_URL`` /
``LANGFUSE_HOST`` are not read: the URL names the host, and a 401 mentions them when they name
another). The target first asks ``GET /api/public/projects`` which project the keys are of: the
cases record ``langfuse+https://HOST/project/ID`` as their target (the project's address in
Langfuse's UI), which may be given back as the URL (it must then be the keys' project).

Options, in the query string (one value each; lists comma-separated):

* ``from=ISO``, ``to=ISO``: a time window (traces and observations by start time; people's
  scores by the time they were given); Langfuse reads by time, and a window keeps a big project's
  reads short (a 422 "narrow your request" says to give one);
* ``environment=a,b``: only those environments; ``name=NAME``: only traces of that name;
  ``tags=a,b``: only traces with every one of those tags;
* ``limit=N``: rows per page (default 1000 observations; 50 traces or scores, at most 100);
* ``batch=N``: verdicts recorded in the export ledger at a time (default 50).

``judge import --from URL --trace-id ID`` reads those traces only (the window still bounds the
observations read on a v4 server).

Two server generations answer differently, so each read tries the current API first and falls
back on its 404:

* **Traces in**: ``GET /v2/observations`` (v4 servers and Cloud; cursor pages; ``traceId`` for
  ``--trace-id``; input/output as raw JSON text; the trace's name, tags and session on its root
  observation), else ``GET /traces`` (page/limit) and ``GET /traces/{id}`` (v3 servers). The
  observations of a trace become OTLP GenAI spans read by :func:`judge.traces.otel.read_otlp`
  (no second span -> case mapping): the root observation is the agent run (``invoke_agent``),
  AGENT ones sub-agents, GENERATION a model call (``chat``; the messages from its input and
  output, the model, the token usage), TOOL and RETRIEVER tool runs (``execute_tool``; the call
  id from the metadata's ``tool_call_id`` when there), level ERROR an error status with its
  status message. Other observation types (SPAN, EVENT, CHAIN, EMBEDDING, GUARDRAIL,
  EVALUATOR) carry no turn. One case per trace, with ``platform``, ``target``, ``trace_id`` and
  ``root_span_id`` (the root observation's id; the trace id when the trace has no single root)
  in its meta.
* **Verdicts out**: one score per (trace, rubric, judge model), ``POST /scores`` (one object
  each; not blocked on v4 servers, unlike the deprecated batch ingestion): ``name`` = rubric id,
  ``dataType`` CATEGORICAL, ``value`` = the label (the status, e.g. ``abstain``, when the judge
  gave none), ``comment`` = the explanation with the cited evidence ids, ``metadata`` =
  :meth:`VerdictOut.metadata` plus P(pass) (rubric@version, model, judgment ids, route, band,
  reason, card digest), ``source`` API, ``environment`` when the target names one. The score's
  ``id`` is :func:`score_id`, fixed by (trace, rubric, model): Langfuse upserts on it, so an
  export sent again updates the score and never adds one. A 200 means Langfuse queued the score
  (its writes are asynchronous: it shows in the UI seconds later, up to minutes on Cloud); that
  answer is the confirmation the export ledger records.
* **Labels back**: people's scores (``source`` ANNOTATION: the UI and annotation queues) named
  ``--annotation``: ``GET /v3/scores`` (cursor; v4 and v3.179+), else ``GET /v2/scores``. The
  label is the score's value as text: a category's label, ``True`` / ``False``, a number
  (``4``); map them with ``--label-map``. Scores on a session or an experiment (no trace) are
  not labels of a run.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

from judge.connectors.errors import (
    ConnectorError,
    PlatformAuthError,
    PlatformNotFound,
    TargetError,
)
from judge.connectors.http import HttpClient, mask_url
from judge.connectors.platform import (
    LabelsRead,
    PlatformLabel,
    SplitTarget,
    Target,
    VerdictOut,
    chunks,
    iso_nanos,
    iso_time,
)
from judge.digests import content_uuid
from judge.traces import ImportResult
from judge.traces._common import maybe_json
from judge.traces.otel import read_otlp
from judge.traces.otel_compat import parts_message
from judge.traces.otlp import build_otlp_span
from judge.version import __version__

#: The environment variables of the API keys (as Langfuse's SDKs read them).
PUBLIC_KEY_ENV = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY_ENV = "LANGFUSE_SECRET_KEY"
#: Where Langfuse's SDKs read the host (not judge: the URL names it; a 401 mentions them).
HOST_ENVS = ("LANGFUSE_BASE_URL", "LANGFUSE_HOST")
#: The public API's root under the host.
API = "/api/public"
#: Rows per page: observations (the API's maximum), and traces or scores (the API's default;
#: at most 100).
OBSERVATIONS_PAGE = 1000
PAGE = 50
MAX_PAGE = 100
#: Verdicts per batch the export ledger records (each is one request).
BATCH = 50
#: The observation field groups read (v2 observations).
OBSERVATION_FIELDS = "core,basic,io,metadata,model,usage,trace_context"
#: The score field groups read (v3 scores).
SCORE_FIELDS = "details,subject,annotation"
#: The options a target takes.
OPTIONS = ("from", "to", "environment", "name", "tags", "limit", "batch")

_PATH = re.compile(r"^/*(?:project/(?P<project>[^/]+)/*)?$")
#: Observation types that are a tool run, and those that carry no turn.
_TOOLS = ("TOOL", "RETRIEVER")
_AGENTS = ("AGENT",)
_CALLS = ("GENERATION",)


def score_id(verdict: VerdictOut) -> str:
    """The id of the score of one verdict: fixed by (trace, rubric, judge model), so that a
    second export updates the score Langfuse keeps under it."""
    return content_uuid("judge/langfuse/score", verdict.trace_id, verdict.rubric_id, verdict.model)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _role_content(value: Any, role: str) -> list[dict[str, Any]]:
    """An observation's input or output as chat messages (``{"role", "content", ...}``): a
    message list, ``{"messages": [...]}`` (OpenAI-style input with its tools), one message, a
    string, a decorated function's ``{"args", "kwargs"}`` with one string among them; anything
    else as its JSON text from ``role``."""
    value = maybe_json(value)
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, list) and value and all(_is_message(m) for m in value):
        return list(value)
    if isinstance(value, dict):
        messages = value.get("messages")
        if isinstance(messages, list) and messages and all(_is_message(m) for m in messages):
            return list(messages)
        if _is_message(value):
            return [value]
        if set(value) <= {"args", "kwargs"}:
            given = [*_list(value.get("args")), *_dict(value.get("kwargs")).values()]
            strings = [v for v in given if isinstance(v, str) and v.strip()]
            if len(strings) == 1:
                return [{"role": role, "content": strings[0]}]
        if set(value) == {"content"} and isinstance(value["content"], str):
            return [{"role": role, "content": value["content"]}]
    return [{"role": role, "content": _text(value)}]


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("role"), str)


def _messages(value: Any, role: str) -> str | None:
    """The GenAI ``gen_ai.*.messages`` attribute (parts form, JSON text) of an input/output."""
    messages = [parts_message(m) for m in _role_content(value, role)]
    return json.dumps(messages, ensure_ascii=False, default=str) if messages else None


def _tokens(row: Mapping[str, Any]) -> dict[str, int]:
    """A model call's token usage: ``usageDetails`` input/output (v3: ``promptTokens`` /
    ``completionTokens`` too)."""
    usage = _dict(row.get("usageDetails"))
    out: dict[str, int] = {}
    for key, detail, legacy in (
        ("input_tokens", "input", "promptTokens"),
        ("output_tokens", "output", "completionTokens"),
    ):
        for value in (usage.get(detail), row.get(legacy)):
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                out[key] = int(value)
                break
    return out


def otlp_span(row: Mapping[str, Any], *, root: bool) -> dict[str, Any]:
    """One observation (a v2 observation row, or a v3 one with the trace's fields added) as an
    OTLP/JSON span with the GenAI attributes :func:`read_otlp` reads."""
    kind = str(row.get("type") or "SPAN").upper()
    attrs: dict[str, Any] = {"langfuse.observation.type": kind}
    name = str(row.get("name") or "")
    metadata = _dict(row.get("metadata"))
    if kind in _CALLS:
        attrs["gen_ai.operation.name"] = "chat"
        model = row.get("model") or row.get("providedModelName")
        if isinstance(model, str) and model:
            attrs["gen_ai.request.model"] = attrs["gen_ai.response.model"] = model
        attrs.update({f"gen_ai.usage.{k}": v for k, v in _tokens(row).items()})
        attrs["gen_ai.input.messages"] = _messages(row.get("input"), "user")
        attrs["gen_ai.output.messages"] = _messages(row.get("output"), "assistant")
    elif root or kind in _AGENTS:
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.agent.name"] = (row.get("traceName") if root else None) or name or None
        attrs["gen_ai.conversation.id"] = row.get("sessionId") if root else None
        attrs["gen_ai.input.messages"] = _messages(row.get("input"), "user")
        attrs["gen_ai.output.messages"] = _messages(row.get("output"), "assistant")
    elif kind in _TOOLS:
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.name"] = name or kind.lower()
        call_id = metadata.get("tool_call_id") or metadata.get("toolCallId")
        attrs["gen_ai.tool.call.id"] = call_id if isinstance(call_id, str) and call_id else None
        for key, field in (("arguments", "input"), ("result", "output")):
            value = maybe_json(row.get(field))
            attrs[f"gen_ai.tool.call.{key}"] = None if value is None else _text(value)
    error = str(row.get("level") or "").upper() == "ERROR"
    parent = row.get("parentObservationId")
    return build_otlp_span(
        trace_id=str(row.get("traceId") or ""),
        span_id=str(row.get("id") or ""),
        parent_id=str(parent) if parent and not root else None,
        name=name,
        start_nanos=iso_nanos(row.get("startTime")),
        end_nanos=iso_nanos(row.get("endTime") or row.get("startTime")),
        attributes=attrs,
        status=(2 if error else 0, str(row.get("statusMessage") or "") if error else ""),
    )


def _is_root(row: Mapping[str, Any]) -> bool:
    flag = row.get("isRootObservation")
    return bool(flag) if isinstance(flag, bool) else not row.get("parentObservationId")


def trace_rows(
    trace_id: str, rows: Sequence[Mapping[str, Any]], trace: Mapping[str, Any] | None = None
) -> tuple[list[dict[str, Any]], str]:
    """The observations of one trace with their root marked (``isRootObservation``), and the
    root's id. ``trace`` (the v3 trace object) lends the root the trace's name, tags, session
    and, when the root has none, input and output. With no single root (a time window that cut
    it off, or several top-level observations) a root made of the trace itself stands over the
    top-level ones, with the trace id as its id."""
    out = [dict(r) for r in rows]
    roots = [r for r in out if _is_root(r)]
    for r in out:
        r["isRootObservation"] = False
    context: dict[str, Any] = {}
    if trace is not None:
        context = {
            "traceName": trace.get("name"),
            "tags": trace.get("tags"),
            "sessionId": trace.get("sessionId"),
            "userId": trace.get("userId"),
            "environment": trace.get("environment"),
        }
    else:
        for key in ("traceName", "tags", "sessionId", "userId", "environment"):
            context[key] = next((r[key] for r in out if r.get(key) is not None), None)
    if len(roots) == 1:
        root = roots[0]
        for key, value in context.items():
            if root.get(key) is None:
                root[key] = value
    else:
        starts = [r["startTime"] for r in out if isinstance(r.get("startTime"), str)]
        ends = [r["endTime"] for r in out if isinstance(r.get("endTime"), str)]
        root = {
            "id": trace_id,
            "traceId": trace_id,
            "type": "SPAN",
            "name": (trace or {}).get("name") or context.get("traceName") or "trace",
            "startTime": (trace or {}).get("timestamp") or (min(starts) if starts else None),
            "endTime": max(ends) if ends else None,
            **context,
        }
        for r in roots:
            r["parentObservationId"] = trace_id
        out.append(root)
    if trace is not None:
        for key in ("input", "output"):
            if root.get(key) is None:
                root[key] = trace.get(key)
    root["isRootObservation"] = True
    return out, str(root["id"])


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _csv(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


class LangfuseConnector:
    """Langfuse: traces from a project's observations, verdicts as scores, people's scores
    back."""

    name = "langfuse"
    description = (
        "Langfuse public API (v4 and v3 servers; tested against a recorded contract): "
        f"langfuse+http(s)://HOST; keys from {PUBLIC_KEY_ENV} and {SECRET_KEY_ENV}"
    )

    def __init__(self) -> None:
        #: The back-off of the HTTP client's retries (the tests shorten it).
        self.backoff_s: float | None = None
        #: canonical target -> the project's name (read with the project's id).
        self.project_names: dict[str, str] = {}

    # -- the target ---------------------------------------------------------------------------

    def target(self, split: SplitTarget) -> Target:
        """``langfuse+https://HOST[/project/ID]`` with the options above -> the project the
        keys are of (one request, ``GET /api/public/projects``)."""
        shown = mask_url(split.url)
        found = _PATH.match(split.path)
        if found is None:
            raise TargetError(
                f"{shown}: a Langfuse target is the host alone (the API keys select the project)",
                hint="langfuse+https://cloud.langfuse.com (or langfuse+http://HOST:PORT for a "
                f"self-hosted one), with {PUBLIC_KEY_ENV} and {SECRET_KEY_ENV} set",
            )
        for option in split.options:
            if option not in OPTIONS:
                raise TargetError(
                    f"{shown}: unknown option {option!r}",
                    hint="Langfuse targets take " + ", ".join(f"{o}=" for o in OPTIONS),
                )
        for option in ("from", "to"):
            value = split.options.get(option)
            if value is not None and iso_time(value) is None:
                raise TargetError(
                    f"{shown}: {option}={value!r} is not an ISO 8601 time",
                    hint=f"e.g. {option}=2026-08-20T00:00:00Z",
                )
        for option, top in (("limit", OBSERVATIONS_PAGE), ("batch", None)):
            if option in split.options:
                _whole(split.options[option], option, top, shown)
        target = split.target("", "", "")
        with self.client(target) as client:
            answer = client.get_json(API + "/projects") or {}
        projects = [p for p in answer.get("data") or [] if isinstance(p, dict) and p.get("id")]
        if len(projects) != 1:
            raise TargetError(
                f"Langfuse at {mask_url(target.base)} names {len(projects)} projects for these "
                "keys, not one",
                hint=f"{PUBLIC_KEY_ENV} and {SECRET_KEY_ENV} must be a project's API keys "
                "(Project settings > API keys), not an organization's",
            )
        project = str(projects[0]["id"])
        asked = unquote(found["project"]) if found["project"] else None
        if asked is not None and asked != project:
            raise TargetError(
                f"{shown}: the API keys are of project {project} "
                f"({projects[0].get('name')!r}), not {asked}",
                hint=f"set {PUBLIC_KEY_ENV} and {SECRET_KEY_ENV} to the keys of project "
                f"{asked}, or give langfuse+{split.scheme}://{split.netloc}",
            )
        out = split.target("", project, "project/" + quote(project, safe=""))
        self.project_names[out.canonical] = str(projects[0].get("name") or project)
        return out

    def keys(self, target: Target) -> tuple[str, str]:
        """The public and secret keys: the environment's, else the URL's userinfo."""
        public = os.environ.get(PUBLIC_KEY_ENV) or target.username
        secret = os.environ.get(SECRET_KEY_ENV) or target.password
        if not public or not secret:
            missing = [
                name
                for name, value in ((PUBLIC_KEY_ENV, public), (SECRET_KEY_ENV, secret))
                if not value
            ]
            raise PlatformAuthError(
                f"no Langfuse API key for {mask_url(target.base)}: set "
                + " and ".join(missing)
                + " (a project's keys: Project settings > API keys in Langfuse)"
            )
        return public, secret

    def client(self, target: Target) -> HttpClient:
        """An HTTP client for ``target`` with the keys as HTTP Basic."""
        public, secret = self.keys(target)
        token = base64.b64encode(f"{public}:{secret}".encode()).decode("ascii")
        fix = (
            f"set {PUBLIC_KEY_ENV} and {SECRET_KEY_ENV} to the API keys of a project on "
            f"{mask_url(target.base)} (Project settings > API keys; keys belong to one host)"
        )
        elsewhere = [
            f"{name} is {mask_url(value)}"
            for name in HOST_ENVS
            if (value := os.environ.get(name)) and value.rstrip("/") != target.base.rstrip("/")
        ]
        if elsewhere:
            fix += f"; {', '.join(elsewhere)}: are the keys for that host?"
        extra: dict[str, Any] = {} if self.backoff_s is None else {"backoff_s": self.backoff_s}
        return HttpClient(
            target.base,
            platform="Langfuse",
            headers={"Authorization": f"Basic {token}", "Accept": "application/json"},
            auth_env=f"{PUBLIC_KEY_ENV} and {SECRET_KEY_ENV}",
            auth_fix=fix,
            **extra,
        )

    def _where(self, target: Target) -> str:
        name = self.project_names.get(target.canonical)
        return f"Langfuse project {name or target.resource!r} at {mask_url(target.base)}"

    def _limit(self, target: Target, default: int, top: int) -> int:
        raw = target.options.get("limit")
        return min(int(raw), top) if raw is not None else default

    def _window(self, target: Target, start: str, end: str) -> list[tuple[str, str]]:
        return [
            (key, target.options[option])
            for option, key in (("from", start), ("to", end))
            if target.options.get(option)
        ]

    # -- paging -------------------------------------------------------------------------------

    def _cursor_pages(
        self, client: HttpClient, path: str, params: list[tuple[str, Any]]
    ) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        while True:
            query = [*params, ("cursor", cursor)] if cursor else params
            page = client.get_json(API + path, params=query) or {}
            yield from (r for r in page.get("data") or [] if isinstance(r, dict))
            cursor = (page.get("meta") or {}).get("cursor")
            if not cursor:
                return

    def _numbered_pages(
        self, client: HttpClient, path: str, params: list[tuple[str, Any]], limit: int
    ) -> Iterator[dict[str, Any]]:
        page = 1
        while True:
            answer = client.get_json(API + path, params=[("page", page), ("limit", limit)] + params)
            rows = [r for r in (answer or {}).get("data") or [] if isinstance(r, dict)]
            yield from rows
            total = ((answer or {}).get("meta") or {}).get("totalPages")
            if not rows or not isinstance(total, int) or page >= total:
                return
            page += 1

    # -- traces in ----------------------------------------------------------------------------

    def observations(
        self, client: HttpClient, target: Target, trace_ids: Sequence[str] = ()
    ) -> dict[str, list[dict[str, Any]]]:
        """trace id -> its observations, from ``GET /v2/observations`` (v4 servers);
        PlatformNotFound where that API is missing."""
        params: list[tuple[str, Any]] = [
            ("fields", OBSERVATION_FIELDS),
            ("limit", self._limit(target, OBSERVATIONS_PAGE, OBSERVATIONS_PAGE)),
            *self._window(target, "fromStartTime", "toStartTime"),
            *(("environment", e) for e in _csv(target.options.get("environment"))),
        ]
        rows: list[dict[str, Any]] = []
        if trace_ids:
            for trace_id in dict.fromkeys(trace_ids):
                rows += self._cursor_pages(
                    client, "/v2/observations", [("traceId", trace_id), *params]
                )
        else:
            rows += self._cursor_pages(client, "/v2/observations", params)
        by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if isinstance(row.get("traceId"), str) and row["traceId"]:
                by_trace[row["traceId"]].append(row)
        return dict(by_trace)

    def legacy_traces(
        self, client: HttpClient, target: Target, trace_ids: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """The traces with their observations, from ``GET /traces`` and ``GET /traces/{id}``
        (v3 servers)."""
        if trace_ids:
            ids = list(dict.fromkeys(trace_ids))
        else:
            params: list[tuple[str, Any]] = [
                *self._window(target, "fromTimestamp", "toTimestamp"),
                ("orderBy", "timestamp.desc"),
                *(("environment", e) for e in _csv(target.options.get("environment"))),
                *(("tags", t) for t in _csv(target.options.get("tags"))),
            ]
            if target.options.get("name"):
                params.append(("name", target.options["name"]))
            limit = self._limit(target, PAGE, MAX_PAGE)
            ids = [
                str(t["id"])
                for t in self._numbered_pages(client, "/traces", params, limit)
                if t.get("id")
            ]
        return [
            client.get_json(
                f"{API}/traces/{quote(trace_id, safe='')}",
                not_found=f"{self._where(target)} has no trace {trace_id}; give the trace ids "
                "Langfuse shows",
            )
            or {}
            for trace_id in ids
        ]

    def _keep(self, target: Target, root: Mapping[str, Any]) -> bool:
        """Whether a trace passes the name and tags options (v2 observations have no such
        filter: read on the root)."""
        name = target.options.get("name")
        if name and (root.get("traceName") or root.get("name")) != name:
            return False
        return set(_csv(target.options.get("tags"))) <= set(_list(root.get("tags")))

    def cases(self, target: Target, *, trace_ids: Sequence[str] = ()) -> ImportResult:
        """The project's traces (in the window and filters of the options; only ``trace_ids``
        when given) as cases."""
        traces: dict[str, tuple[list[dict[str, Any]], str]] = {}
        with self.client(target) as client:
            try:
                api = "v2/observations"
                for trace_id, rows in self.observations(client, target, trace_ids).items():
                    traces[trace_id] = trace_rows(trace_id, rows)
            except PlatformNotFound:
                api = "traces"
                for trace in self.legacy_traces(client, target, trace_ids):
                    trace_id = str(trace.get("id") or "")
                    rows = [o for o in trace.get("observations") or [] if isinstance(o, dict)]
                    if trace_id:
                        traces[trace_id] = trace_rows(trace_id, rows, trace)
        missing = [t for t in dict.fromkeys(trace_ids) if t not in traces]
        if missing:
            raise PlatformNotFound(
                f"{self._where(target)} has no trace {', '.join(missing)} "
                f"({len(traces)} of the {len(set(trace_ids))} trace ids given were found"
                + (f" from {target.options['from']}" if target.options.get("from") else "")
                + "); give the trace ids Langfuse shows"
            )
        spans: list[dict[str, Any]] = []
        roots: dict[str, dict[str, Any]] = {}
        for trace_id, (rows, root_id) in traces.items():
            root = next(r for r in rows if r["id"] == root_id)
            if not trace_ids and not self._keep(target, root):
                continue
            roots[trace_id] = root
            spans += [otlp_span(r, root=r["id"] == root_id) for r in rows]
        document = {
            "resourceSpans": [
                {
                    "resource": {"attributes": []},
                    "scopeSpans": [{"scope": {"name": "langfuse"}, "spans": spans}],
                }
            ]
        }
        result = read_otlp([document], target.canonical)
        for case in result.cases:
            root = roots.get(case.id, {})
            case.meta.update(
                {
                    "platform": target.platform,
                    "target": target.canonical,
                    "trace_id": case.id,
                    "root_span_id": str(root.get("id") or case.meta.get("root_span_id")),
                    "project": target.resource,
                    "project_name": self.project_names.get(target.canonical),
                    "environment": root.get("environment"),
                    "trace_name": root.get("traceName"),
                    "tags": root.get("tags") or None,
                    "langfuse_api": api,
                }
            )
            for key in [k for k, v in case.meta.items() if v is None]:
                del case.meta[key]
        return result

    # -- verdicts out -------------------------------------------------------------------------

    def score(self, target: Target, verdict: VerdictOut) -> dict[str, Any]:
        """The score (``POST /api/public/scores`` body) of one verdict."""
        body: dict[str, Any] = {
            "id": score_id(verdict),
            "traceId": verdict.trace_id,
            "name": verdict.rubric_id,
            "value": verdict.label if verdict.label is not None else verdict.status,
            "dataType": "CATEGORICAL",
            "source": "API",
            "comment": verdict.explanation,
            "metadata": {
                **verdict.metadata(),
                "p_pass": verdict.p_pass,
                "judge_version": __version__,
            },
        }
        environments = _csv(target.options.get("environment"))
        if len(environments) == 1:
            body["environment"] = environments[0]
        return body

    def export(self, target: Target, verdicts: Sequence[VerdictOut]) -> Iterator[list[VerdictOut]]:
        """Send one score per verdict; yield them in batches of ``batch`` (default 50) as
        Langfuse accepts them (and those accepted before a failure, before it is raised)."""
        size = int(target.options.get("batch") or BATCH)
        with self.client(target) as client:
            for batch in chunks(list(verdicts), size):
                done: list[VerdictOut] = []
                try:
                    for verdict in batch:
                        body = self.score(target, verdict)
                        answer = client.post_json(
                            API + "/scores",
                            body,
                            not_found=f"{self._where(target)} has no trace {verdict.trace_id} "
                            "to score: was it deleted?",
                        )
                        stored = answer.get("id") if isinstance(answer, dict) else None
                        if isinstance(stored, str) and stored != body["id"]:
                            raise ConnectorError(
                                f"{self._where(target)} took the score of trace "
                                f"{verdict.trace_id} as id {stored!r}, not {body['id']!r}: "
                                "an export sent again would add a score rather than update it"
                            )
                        done.append(verdict)
                except ConnectorError:
                    if done:
                        yield done
                    raise
                yield done

    # -- labels back --------------------------------------------------------------------------

    def annotation_scores(self, client: HttpClient, target: Target) -> Iterator[dict[str, Any]]:
        """People's scores (source ANNOTATION) in the window, as v3 rows: ``GET /v3/scores``,
        else ``GET /v2/scores`` (v3 servers before 3.179) made to look like them."""
        environments = _csv(target.options.get("environment"))
        limit = self._limit(target, PAGE, MAX_PAGE)
        params: list[tuple[str, Any]] = [
            ("source", "ANNOTATION"),
            ("fields", SCORE_FIELDS),
            ("limit", limit),
            *self._window(target, "fromTimestamp", "toTimestamp"),
        ]
        if environments:
            params.append(("environment", ",".join(environments)))
        read = 0
        try:
            for row in self._cursor_pages(client, "/v3/scores", params):
                read += 1
                yield row
            return
        except PlatformNotFound:
            if read:  # the API was there: a page that went missing is an error
                raise
        legacy: list[tuple[str, Any]] = [
            ("source", "ANNOTATION"),
            *self._window(target, "fromTimestamp", "toTimestamp"),
            *(("environment", e) for e in environments),
        ]
        for row in self._numbered_pages(client, "/v2/scores", legacy, limit):
            yield _v3_score(row)

    def labels(self, target: Target, *, name: str) -> LabelsRead:
        """People's scores named ``name`` on the project's traces and observations."""
        out = LabelsRead()
        seen: set[str] = set()
        with self.client(target) as client:
            for row in self.annotation_scores(client, target):
                if row.get("source") != "ANNOTATION":
                    continue
                subject = _dict(row.get("subject"))
                kind = subject.get("kind")
                if kind == "trace":
                    trace_id, span_id = subject.get("id"), None
                elif kind == "observation":
                    trace_id, span_id = subject.get("traceId"), subject.get("id")
                else:
                    continue  # a session's or an experiment's score labels no run
                if row.get("name") != name:
                    seen.add(str(row.get("name")))
                    continue
                value = row.get("value")
                out.labels.append(
                    PlatformLabel(
                        trace_id=str(trace_id or ""),
                        span_id=str(span_id) if span_id else None,
                        name=name,
                        value=_label(value),
                        score=float(value)
                        if isinstance(value, int | float) and row.get("dataType") != "CATEGORICAL"
                        else None,
                        annotation_id=str(row.get("id") or ""),
                        annotator=row.get("authorUserId") or None,
                        created_at=iso_time(row.get("updatedAt") or row.get("timestamp")),
                        explanation=row.get("comment") or None,
                    )
                )
        if not out.labels:
            out.other_names = sorted(seen)
        return out


def _whole(raw: str, option: str, top: int | None, shown: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1 or (top is not None and value > top):
        limit = f" up to {top}" if top is not None else ""
        raise TargetError(f"{shown}: {option}={raw!r}: give a whole number from 1{limit}")
    return value


def _label(value: Any) -> str | None:
    """A score's value as a label: the text, ``True`` / ``False``, a number as ``4`` or
    ``0.5``."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int | float):
        return format(float(value), "g")
    return str(value)


def _v3_score(row: Mapping[str, Any]) -> dict[str, Any]:
    """A v2 score row in the v3 form: ``subject`` from traceId/observationId, ``value`` typed
    by ``dataType`` (the label of a category, a bool for BOOLEAN)."""
    out = dict(row)
    kind = row.get("dataType")
    if kind == "BOOLEAN":
        out["value"] = bool(row.get("value"))  # 0 or 1 (stringValue "False" / "True")
    elif kind in ("CATEGORICAL", "TEXT", "CORRECTION"):
        out["value"] = row.get("stringValue")
    if row.get("observationId"):
        out["subject"] = {
            "kind": "observation",
            "id": row["observationId"],
            "traceId": row.get("traceId"),
        }
    elif row.get("traceId"):
        out["subject"] = {"kind": "trace", "id": row["traceId"]}
    else:
        out["subject"] = {"kind": "session" if row.get("sessionId") else "other"}
    return out
