"""``mlflow``: an MLflow 3 tracking server through its REST API (tested on mlflow 3.17.2).

Target: ``mlflow+http://HOST:PORT[/PREFIX]/experiments/ID`` (or ``mlflow+https``), the numeric
id MLflow's UI shows in ``#/experiments/ID``. Credentials as MLflow's own client reads them:
``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD`` (HTTP basic; else the URL's
``user:password@``), else ``MLFLOW_TRACKING_TOKEN`` (``Authorization: Bearer``). Option in the
query string: ``concurrency=N`` (assessments written at once; 8 by default).

* **Traces in**: the experiment's trace infos (``POST /api/3.0/mlflow/traces/search``, 500 a
  page; ``batchGetInfos`` for ``--trace-id``: MLflow's ids, ``tr-`` + 32 hex, or the bare OTel
  trace id), then their spans (``GET .../traces/batchGet``, 50 traces a request; a trace whose
  spans live in the artifact store, or a batch that fails, is read from
  ``/ajax-api/3.0/mlflow/get-trace-artifact``). The spans are turned into OTLP/JSON (base64
  ids to hex, MLflow's span JSON to OTLP attributes, the MLflow trace id as the trace id, so
  that a case's id is MLflow's trace id) and read by :func:`judge.traces.otel.read_otlp`, whose
  MLflow convention reader (:mod:`judge.traces.otel_compat`) maps ``mlflow.spanType`` and the
  chat messages in ``mlflow.spanInputs`` / ``mlflow.spanOutputs``. A trace with no ``AGENT``
  span has its root span read as the agent run (MLflow shows the root's inputs and outputs as
  the trace's request and response); the trace's session (``mlflow.trace.session``) is the
  conversation id. Each case records ``platform``, ``target``, ``trace_id`` and
  ``root_span_id``, and the experiment id in its meta.
* **Verdicts out**: one feedback assessment on the trace per (case, rubric, judge model):
  ``assessment_name`` = rubric id, ``source`` ``LLM_JUDGE`` with ``source_id`` = the judge
  model, ``feedback.value`` = **true for pass, false for fail** (MLflow aggregates booleans and
  yes/no into pass rates, not other strings; a rubric whose labels are not pass/fail sends its
  label as text), ``rationale`` = the explanation; an abstention or a failed judgment is a
  ``feedback.error`` (``ABSTAIN``, ``INFRA_ERROR``, ...) with no value. ``metadata`` (strings)
  holds ``judge.rubric`` (id@version), ``judge.model``, ``judge.status``, ``judge.p_pass``,
  ``judge.judgment_ids``, ``judge.digest``, ``judge.key`` and, once routed with a card,
  ``judge.route``, ``judge.band``, ``judge.reason``, ``judge.route_detail``, ``judge.card``,
  ``judge.routed_score`` (each of them, ``""`` when unset: MLflow merges metadata on update and
  cannot drop a key). The assessment id is judge's own, ``a-`` + 32 hex of SHA-256(trace id |
  rubric | model): an export first reads the traces' assessments (``batchGetInfos``), PATCHes
  judge's where it exists (by its id, or, on a server that gives assessments ids of its own, the
  ``LLM_JUDGE`` one whose ``judge.key`` is the verdict's; ``update_mask`` feedback, rationale,
  metadata) and creates it otherwise (a 500 "constraint violation" means it was created
  meanwhile: PATCHed then). A person's assessment (source ``HUMAN``), even of the same name, is
  never written; when a person overrides judge's assessment in the UI, MLflow marks judge's
  invalid, and an update leaves it so. MLflow has no batch endpoint: ``concurrency`` requests
  are in flight at once, and every 100 stored (the answer of each request is the stored
  assessment) are reported as one batch.
* **Labels back**: every trace info of the experiment (``traces/search`` embeds the
  assessments), keeping the feedback named ``--annotation`` whose source is ``HUMAN`` and that
  is still valid (not overridden). Its value as text: a string as it is, a boolean ``true`` /
  ``false`` (never taken as pass / fail without ``--label-map``: "is_harmful: true" is a
  failure), a number as written; the annotator is the source id (``""`` in a server without
  auth, reported as anonymous).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from judge.connectors.errors import (
    ConnectorError,
    PlatformAuthError,
    PlatformNotFound,
    PlatformUnavailable,
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
    iso_time,
)
from judge.digests import sha256_hex
from judge.traces import ImportResult
from judge.traces._common import maybe_json
from judge.traces.otel import read_otlp
from judge.traces.otlp import build_otlp_event, build_otlp_span, otlp_attribute

#: The environment variables of the credentials (as MLflow's own client reads them).
USERNAME_ENV = "MLFLOW_TRACKING_USERNAME"
PASSWORD_ENV = "MLFLOW_TRACKING_PASSWORD"
TOKEN_ENV = "MLFLOW_TRACKING_TOKEN"
AUTH_ENV = f"{TOKEN_ENV} (or {USERNAME_ENV} and {PASSWORD_ENV})"
TRACES = "/api/3.0/mlflow/traces"
EXPERIMENTS = "/api/2.0/mlflow/experiments"
#: The UI's endpoint for spans kept in the artifact store (not under /api/).
TRACE_ARTIFACT = "/ajax-api/3.0/mlflow/get-trace-artifact"
#: Trace infos per search page (the API's maximum).
PAGE = 500
#: Traces per span read (batchGet) and per trace info read (batchGetInfos).
SPANS_PER_READ = 50
INFOS_PER_READ = 100
#: Assessment requests in flight at once (MLflow has no batch endpoint); a target's
#: ``concurrency=N`` changes it.
CONCURRENCY = 8
#: Stored assessments reported (and recorded in the export ledger) at a time.
CONFIRMED = 100
#: The prefix of judge's metadata keys on an assessment.
META = "judge."
#: Where MLflow keeps the spans of a trace it can serve from batchGet.
IN_STORE = "TRACKING_STORE"

_PATH = re.compile(r"^(?P<prefix>.*?)/experiments/(?P<id>[^/]+)/?$")
_HEX_ID = re.compile(r"[0-9a-f]{16}|[0-9a-f]{32}")
_STATUS = {"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2, "OK": 1, "ERROR": 2}
#: Span types that are not an agent run when a trace has no AGENT span.
_NOT_AGENT = {"CHAT_MODEL", "LLM", "TOOL", "RETRIEVER", "EMBEDDING", "RERANKER"}


def assessment_id(trace_id: str, rubric_id: str, model: str) -> str:
    """judge's id of the assessment of one verdict: ``a-`` + 32 hex digits (34 characters:
    MLflow's SQL stores take up to 50)."""
    return "a-" + sha256_hex(f"{trace_id}|{rubric_id}|{model}")[:32]


def trace_id_of(value: str) -> str:
    """MLflow's id of a trace given as its id (``tr-...``) or as the bare 32-hex OTel trace id
    (MLflow's id of a trace sent over OTLP is ``tr-`` + that)."""
    value = value.strip()
    return "tr-" + value.lower() if re.fullmatch(r"[0-9a-fA-F]{32}", value) else value


# --- MLflow's span JSON to OTLP/JSON ----------------------------------------------------------


def any_value(value: Any) -> Any:
    """An AnyValue as MLflow's REST API writes it (``{"string_value": ...}``, snake case; the
    camel case of OTLP/JSON is read too) as a Python value."""
    if not isinstance(value, dict):
        return None
    for key, inner in value.items():
        kind = key.replace("_", "").lower()
        if kind in ("stringvalue", "boolvalue", "bytesvalue"):
            return inner
        if kind == "intvalue":
            try:
                return int(inner)
            except (TypeError, ValueError):
                return None
        if kind == "doublevalue":
            try:
                return float(inner)
            except (TypeError, ValueError):
                return None
        if kind == "arrayvalue":
            values = inner.get("values") if isinstance(inner, dict) else None
            return [any_value(v) for v in values or []]
        if kind == "kvlistvalue":
            pairs = inner.get("values") if isinstance(inner, dict) else None
            return {
                p["key"]: any_value(p.get("value"))
                for p in pairs or []
                if isinstance(p, dict) and isinstance(p.get("key"), str)
            }
    return None


def _hex(value: Any) -> str | None:
    """A span or trace id as hex: MLflow writes them in base64."""
    if not isinstance(value, str) or not value:
        return None
    if _HEX_ID.fullmatch(value):
        return value
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value


def _attributes(raw: Any, *, artifact: bool) -> dict[str, Any]:
    if isinstance(raw, dict):  # traces.json: {"key": "<JSON>"}
        return {k: maybe_json(v) if artifact else v for k, v in raw.items()}
    out: dict[str, Any] = {}
    for pair in raw or []:
        if isinstance(pair, dict) and isinstance(pair.get("key"), str):
            out[pair["key"]] = any_value(pair.get("value"))
    return out


def otlp_span(span: dict[str, Any], trace_id: str, *, artifact: bool = False) -> dict[str, Any]:
    """One span of MLflow's REST API (``artifact``: of its ``traces.json``) as an OTLP/JSON
    span of the trace ``trace_id`` (MLflow's id)."""
    attributes = _attributes(span.get("attributes"), artifact=artifact)
    raw_status = span.get("status")
    status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    code = status.get("code")
    return build_otlp_span(
        trace_id=trace_id,
        span_id=_hex(span.get("span_id")) or "",
        parent_id=_hex(span.get("parent_span_id")),
        name=span.get("name") or "",
        start_nanos=int(span.get("start_time_unix_nano") or 0),
        end_nanos=int(span.get("end_time_unix_nano") or 0),
        attributes=attributes,
        events=[
            build_otlp_event(
                event.get("name") or "",
                int(event.get("time_unix_nano") or 0),
                _attributes(event.get("attributes"), artifact=False),
            )
            for event in span.get("events") or []
            if isinstance(event, dict)
        ],
        status=(
            code if isinstance(code, int) else _STATUS.get(str(code), 0),
            status.get("message") or "",
        ),
    )


def _attribute(span: dict[str, Any], key: str) -> Any:
    for pair in span["attributes"]:
        if pair["key"] == key:
            return pair["value"].get("stringValue")
    return None


def root_span(spans: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """A trace's root span (OTLP/JSON): the one without a parent, else the earliest whose
    parent is not in the trace."""
    ids = {s["spanId"] for s in spans}
    roots = [s for s in spans if not s.get("parentSpanId")] or [
        s for s in spans if s.get("parentSpanId") not in ids
    ]
    return min(roots, key=lambda s: s["startTimeUnixNano"]) if roots else None


def _promote_root(spans: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any] | None:
    """The root span, marked as the agent run when no span of the trace is one, with the
    trace's session as its ``session.id``."""
    root = root_span(spans)
    if root is None:
        return None
    agents = [
        s
        for s in spans
        if str(_attribute(s, "mlflow.spanType")).strip('"').upper() == "AGENT"
        or _attribute(s, "gen_ai.operation.name") == "invoke_agent"
        or str(_attribute(s, "openinference.span.kind")).upper() == "AGENT"
    ]
    kind = str(_attribute(root, "mlflow.spanType") or "").strip('"').upper()
    keys = {pair["key"] for pair in root["attributes"]}
    if not agents and kind not in _NOT_AGENT and "gen_ai.operation.name" not in keys:
        root["attributes"].append(otlp_attribute("gen_ai.operation.name", "invoke_agent"))
    session = (info.get("trace_metadata") or {}).get("mlflow.trace.session")
    if isinstance(session, str) and session and "session.id" not in keys:
        root["attributes"].append(otlp_attribute("session.id", session))
    return root


def trace_document(
    info: dict[str, Any], spans: list[dict[str, Any]]
) -> tuple[dict[str, Any], str | None]:
    """One trace (its info and its spans as :func:`otlp_span` made them) as an OTLP/JSON
    document for :func:`read_otlp`, and its root span id."""
    root = _promote_root(spans, info)
    service = (info.get("tags") or {}).get("service.name")
    resource = [otlp_attribute("service.name", service)] if service else []
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": resource},
                "scopeSpans": [{"scope": {"name": "mlflow"}, "spans": spans}],
            }
        ]
    }
    return document, root["spanId"] if root is not None else None


def _text(value: Any) -> str | None:
    """A feedback value as label text: a boolean as ``true`` / ``false``, a number as
    written, a structure as compact JSON."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format(value, "g")
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _human(assessment: dict[str, Any]) -> bool:
    """A person's feedback that still stands (not overridden by a later one)."""
    source = assessment.get("source") or {}
    return (
        source.get("source_type") == "HUMAN"
        and assessment.get("valid") is not False
        and isinstance(assessment.get("feedback"), dict)
    )


class MlflowConnector:
    """MLflow 3: traces from an experiment, verdicts as LLM_JUDGE feedback assessments on each
    trace, people's (HUMAN) feedback back."""

    name = "mlflow"
    description = (
        "MLflow 3 tracking server REST API (tested on 3.17.2): "
        f"mlflow+http(s)://HOST:PORT/experiments/ID; credentials from {AUTH_ENV}"
    )

    # -- the target ---------------------------------------------------------------------------

    def target(self, split: SplitTarget) -> Target:
        """``[/PREFIX]/experiments/ID`` -> the experiment ID on ``scheme://netloc[/PREFIX]``."""
        found = _PATH.match(split.path)
        if found is None or not found["id"].isdigit():
            raise TargetError(
                f"{mask_url(split.url)}: an MLflow target names an experiment by its id",
                hint="mlflow+http://HOST:PORT/experiments/ID (the number in the address of "
                "the experiment in MLflow's UI, #/experiments/ID)",
            )
        for option in split.options:
            if option != "concurrency":
                raise TargetError(
                    f"{mask_url(split.url)}: unknown option {option!r}",
                    hint="MLflow targets take concurrency=N",
                )
        return split.target(found["prefix"], found["id"], "experiments/" + found["id"])

    def client(self, target: Target, *, connections: int = CONCURRENCY) -> HttpClient:
        """An HTTP client for ``target`` with MLflow's credentials: basic from
        ``MLFLOW_TRACKING_USERNAME`` / ``_PASSWORD`` (else the URL's), else the bearer token
        of ``MLFLOW_TRACKING_TOKEN`` (the order of MLflow's own client)."""
        user = os.environ.get(USERNAME_ENV) or target.username
        password = os.environ.get(PASSWORD_ENV) or target.password
        token = os.environ.get(TOKEN_ENV)
        headers: dict[str, str] = {}
        if user and password:
            pair = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {pair}"
        elif token:
            headers["Authorization"] = f"Bearer {token}"
        return HttpClient(
            target.base,
            platform="MLflow",
            headers=headers,
            auth_env=AUTH_ENV,
            connections=connections,
        )

    def _concurrency(self, target: Target) -> int:
        raw = target.options.get("concurrency")
        if raw is None:
            return CONCURRENCY
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if not 1 <= value <= 64:
            raise TargetError(
                f"concurrency={raw!r}: give a whole number of requests at once (1 to 64)"
            )
        return value

    def check_experiment(self, client: HttpClient, target: Target) -> dict[str, Any]:
        """The experiment; PlatformNotFound naming the experiments there when it is not (a
        search on an unknown experiment answers 200 with nothing, so this comes first)."""
        try:
            answer = client.request(
                "GET", EXPERIMENTS + "/get", params={"experiment_id": target.resource}, ok=(400,)
            )
        except PlatformAuthError as err:
            if "Invalid Host header" in str(err):
                host = target.base.split("://", 1)[1].split("/", 1)[0]
                raise PlatformAuthError(
                    f"MLflow at {mask_url(target.base)} refuses the Host header {host!r} (its "
                    "protection against DNS rebinding lets only localhost and private addresses "
                    f"through): start it with --allowed-hosts {host} (or set "
                    "MLFLOW_SERVER_ALLOWED_HOSTS)"
                ) from err
            raise
        except PlatformNotFound:
            answer = None
        experiment = (
            (answer.json() or {}).get("experiment")
            if answer is not None and answer.status_code == 200
            else None
        )
        if not isinstance(experiment, dict):
            raise PlatformNotFound(
                f"MLflow at {mask_url(target.base)} has no experiment {target.resource} (its "
                f"experiments: {self._experiment_list(client)}); give one of those ids in "
                f"{target.platform}+{target.scheme}://HOST:PORT/experiments/ID"
            )
        if experiment.get("lifecycle_stage") == "deleted":
            raise PlatformNotFound(
                f"MLflow at {mask_url(target.base)}: experiment {target.resource} "
                f"({experiment.get('name')!r}) is deleted; restore it in MLflow or give another"
            )
        return experiment

    def _experiment_list(self, client: HttpClient) -> str:
        """``ID name, ...`` of the server's first experiments (for a message)."""
        try:
            page = client.post_json(EXPERIMENTS + "/search", {"max_results": 21}) or {}
        except ConnectorError:
            return "could not be listed"
        shown = [
            f"{e.get('experiment_id')} {e.get('name')!r}"
            for e in page.get("experiments") or []
            if isinstance(e, dict)
        ]
        return ", ".join(shown[:20]) + (", ..." if len(shown) > 20 else "") or "none"

    def _location(self, target: Target) -> dict[str, Any]:
        return {
            "type": "MLFLOW_EXPERIMENT",
            "mlflow_experiment": {"experiment_id": target.resource},
        }

    def search(self, client: HttpClient, target: Target) -> Iterator[dict[str, Any]]:
        """Every trace info of the experiment (with its assessments), oldest first."""
        token: str | None = None
        while True:
            body: dict[str, Any] = {
                "locations": [self._location(target)],
                "max_results": PAGE,
                "order_by": ["timestamp_ms ASC"],
            }
            if token:
                body["page_token"] = token
            page = client.post_json(TRACES + "/search", body) or {}
            traces = page.get("traces") or []
            yield from traces
            token = page.get("next_page_token")
            if not token or not traces:
                return

    def infos(
        self, client: HttpClient, target: Target, trace_ids: Iterable[str]
    ) -> dict[str, dict[str, Any]]:
        """trace id -> trace info (with its assessments) of those of ``trace_ids`` that are
        in the experiment."""
        found: dict[str, dict[str, Any]] = {}
        for part in chunks(list(dict.fromkeys(trace_ids)), INFOS_PER_READ):
            page = client.post_json(TRACES + "/batchGetInfos", {"trace_ids": list(part)}) or {}
            for info in page.get("trace_infos") or []:
                location = (info.get("trace_location") or {}).get("mlflow_experiment") or {}
                if str(location.get("experiment_id")) == target.resource:
                    found[str(info.get("trace_id"))] = info
        return found

    # -- traces in ----------------------------------------------------------------------------

    def spans(
        self, client: HttpClient, infos: Sequence[dict[str, Any]]
    ) -> dict[str, list[dict[str, Any]]]:
        """trace id -> its spans as OTLP/JSON."""
        out: dict[str, list[dict[str, Any]]] = {}
        in_store = [
            str(i["trace_id"])
            for i in infos
            if (i.get("tags") or {}).get("mlflow.trace.spansLocation") == IN_STORE
        ]
        stored = set(in_store)
        elsewhere = [str(i["trace_id"]) for i in infos if str(i["trace_id"]) not in stored]
        for part in chunks(in_store, SPANS_PER_READ):
            # One trace whose spans are not in the store fails the whole batch (500): those
            # are read one by one from the artifact endpoint, as the others.
            answer = client.request(
                "GET", TRACES + "/batchGet", params=[("trace_ids", t) for t in part], ok=(500,)
            )
            if answer.status_code == 500:
                elsewhere += part
                continue
            for trace in (answer.json() or {}).get("traces") or []:
                trace_id = str((trace.get("trace_info") or {}).get("trace_id"))
                out[trace_id] = [otlp_span(s, trace_id) for s in trace.get("spans") or []]
            elsewhere += [t for t in part if t not in out]
        for trace_id in elsewhere:
            try:
                data = client.get_json(TRACE_ARTIFACT, params={"request_id": trace_id}) or {}
            except PlatformNotFound:
                continue
            out[trace_id] = [
                otlp_span(s, trace_id, artifact=True)
                for s in data.get("spans") or []
                if isinstance(s, dict)
            ]
        return out

    def cases(self, target: Target, *, trace_ids: Sequence[str] = ()) -> ImportResult:
        """The experiment's traces as cases (one per trace with LLM or agent spans)."""
        wanted = [trace_id_of(t) for t in trace_ids]
        with self.client(target) as client:
            self.check_experiment(client, target)
            if wanted:
                by_id = self.infos(client, target, wanted)
                missing = [t for t in dict.fromkeys(wanted) if t not in by_id]
                if missing:
                    raise PlatformNotFound(
                        f"MLflow experiment {target.resource} at {mask_url(target.base)} has no "
                        f"trace {', '.join(missing)} ({len(by_id)} of the {len(set(wanted))} "
                        "trace ids given were found); give the trace ids MLflow shows (tr-...)"
                    )
                infos = [by_id[t] for t in dict.fromkeys(wanted)]
            else:
                infos = list(self.search(client, target))
            spans = self.spans(client, infos)
        documents: list[dict[str, Any]] = []
        roots: dict[str, str] = {}
        notes: list[str] = []
        for info in infos:
            trace_id = str(info["trace_id"])
            if not spans.get(trace_id):
                notes.append(f"{target.canonical}: trace {trace_id} has no spans to read; skipped")
                continue
            document, root = trace_document(info, spans[trace_id])
            documents.append(document)
            if root is not None:
                roots[trace_id] = root
        result = read_otlp(documents, target.canonical)
        result.notes[:0] = notes
        by_info = {str(i["trace_id"]): i for i in infos}
        for case in result.cases:
            info = by_info.get(case.id) or {}
            case.meta.update(
                {
                    "platform": target.platform,
                    "target": target.canonical,
                    "trace_id": case.id,
                    "root_span_id": roots.get(case.id) or case.meta.get("root_span_id"),
                    "experiment_id": target.resource,
                }
            )
            if info.get("client_request_id"):
                case.meta["client_request_id"] = info["client_request_id"]
        return result

    # -- verdicts out -------------------------------------------------------------------------

    def metadata(self, verdict: VerdictOut) -> dict[str, str]:
        """The verdict's provenance as MLflow's string metadata; once the verdict is routed,
        every key of the route, ``""`` when unset (an update merges keys and cannot remove
        one)."""
        raw = verdict.metadata()
        out = {
            "rubric": raw["rubric"],
            "model": raw["model"],
            "status": raw["status"],
            "p_pass": "" if verdict.p_pass is None else format(verdict.p_pass, "g"),
            "judgment_ids": ",".join(raw["judgment_ids"]),
            "digest": raw["digest"],
            "key": verdict.key,
        }
        route = verdict.route
        if route is not None:
            out.update(
                {
                    "route": route.decision,
                    "band": route.band or "",
                    "reason": route.reason,
                    "route_detail": route.detail,
                    "card": route.card_digest,
                    "routed_score": "" if route.score is None else format(route.score, "g"),
                }
            )
        return {META + k: v for k, v in out.items()}

    def assessment(self, verdict: VerdictOut) -> dict[str, Any]:
        """The feedback assessment of one verdict (without its id)."""
        feedback: dict[str, Any]
        if verdict.label is None:
            feedback = {
                "error": {
                    "error_code": verdict.status.upper(),
                    "error_message": verdict.explanation,
                }
            }
        elif verdict.label in ("pass", "fail"):
            feedback = {"value": verdict.label == "pass"}
        else:
            feedback = {"value": verdict.label}
        return {
            "trace_id": verdict.trace_id,
            "assessment_name": verdict.rubric_id,
            "source": {"source_type": "LLM_JUDGE", "source_id": verdict.model},
            "feedback": feedback,
            "rationale": verdict.explanation,
            "metadata": self.metadata(verdict),
        }

    def existing(
        self, client: HttpClient, target: Target, verdicts: Sequence[VerdictOut]
    ) -> tuple[dict[str, str], set[str]]:
        """verdict key -> the id of judge's assessment of it on MLflow (judge's own id, or one
        the server gave: an LLM_JUDGE assessment whose metadata has the verdict's key), and
        the trace ids found in the experiment."""
        infos = self.infos(client, target, [v.trace_id for v in verdicts])
        by_trace: dict[str, list[VerdictOut]] = defaultdict(list)
        for v in verdicts:
            by_trace[v.trace_id].append(v)
        found: dict[str, str] = {}
        for trace_id, info in infos.items():
            ours = {assessment_id(trace_id, v.rubric_id, v.model): v for v in by_trace[trace_id]}
            keys = {v.key: v for v in by_trace[trace_id]}
            for a in info.get("assessments") or []:
                if (a.get("source") or {}).get("source_type") != "LLM_JUDGE":
                    continue
                aid = str(a.get("assessment_id") or "")
                key = str((a.get("metadata") or {}).get(META + "key") or "")
                verdict = ours.get(aid) or keys.get(key)
                if verdict is not None:
                    found.setdefault(verdict.key, aid)
        return found, set(infos)

    def _write(
        self, client: HttpClient, target: Target, verdict: VerdictOut, known: str | None
    ) -> None:
        """Create or update judge's assessment of one verdict; returns once MLflow stored it."""
        body = self.assessment(verdict)
        path = f"{TRACES}/{verdict.trace_id}/assessments"
        gone = (
            f"MLflow experiment {target.resource} at {mask_url(target.base)} has no trace "
            f"{verdict.trace_id} (case {verdict.case_id}): was it deleted?"
        )
        if known is None:
            wanted = assessment_id(verdict.trace_id, verdict.rubric_id, verdict.model)
            # MLflow answers a duplicate id with a 500 ("constraint violation"): the request
            # is read here, and another 500 is tried again as every request is.
            for attempt in range(1, client.attempts + 1):
                answer = client.request(
                    "POST",
                    path,
                    json_body={"assessment": {**body, "assessment_id": wanted}},
                    not_found=gone,
                    ok=(500,),
                )
                if answer.status_code != 500:
                    return
                if "constraint" in answer.text.lower():
                    break  # created meanwhile (another export): updated below
                if attempt == client.attempts:
                    text = " ".join(answer.text.split())[:300]
                    raise PlatformUnavailable(
                        f"POST {client.url(path, None)}: MLflow answered 500 ({text}) after "
                        f"{attempt} attempts; what was sent before stays sent: run the same "
                        "command again once the server is back"
                    )
                time.sleep(min(client.backoff_s * 2 ** (attempt - 1), 8.0))
            known = wanted
        client.request(
            "PATCH",
            f"{path}/{known}",
            json_body={"assessment": body, "update_mask": "feedback,rationale,metadata"},
            not_found=gone,
        )

    def export(self, target: Target, verdicts: Sequence[VerdictOut]) -> Iterator[list[VerdictOut]]:
        """Write each verdict's assessment, ``concurrency`` requests at a time; yield every
        ``CONFIRMED`` stored ones. A failure stops the sending: what was stored before it is
        yielded, then the error is raised."""
        concurrency = self._concurrency(target)
        with self.client(target, connections=concurrency) as client:
            self.check_experiment(client, target)
            known, traces = self.existing(client, target, verdicts)
            missing = sorted({v.trace_id for v in verdicts} - traces)
            todo = iter([v for v in verdicts if v.trace_id in traces])
            stored: list[VerdictOut] = []
            failure: ConnectorError | None = None
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                running: dict[Future[None], VerdictOut] = {}

                def fill() -> None:
                    while failure is None and len(running) < concurrency:
                        verdict = next(todo, None)
                        if verdict is None:
                            return
                        future = pool.submit(
                            self._write, client, target, verdict, known.get(verdict.key)
                        )
                        running[future] = verdict

                fill()
                while running:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        verdict = running.pop(future)
                        try:
                            future.result()
                        except ConnectorError as err:
                            failure = failure or err
                        else:
                            stored.append(verdict)
                    fill()
                    if len(stored) >= CONFIRMED or (stored and not running):
                        yield stored
                        stored = []
            if failure is not None:
                raise failure
        if missing:
            shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise PlatformNotFound(
                f"MLflow experiment {target.resource} at {mask_url(target.base)} has no trace "
                f"{shown} ({len(missing)} traces of the verdicts; the others' verdicts were "
                "sent): were they deleted? Import the experiment again"
            )

    # -- labels back --------------------------------------------------------------------------

    def labels(self, target: Target, *, name: str) -> LabelsRead:
        """People's (HUMAN, still valid) feedback named ``name`` on the experiment's traces."""
        out = LabelsRead()
        seen: set[str] = set()
        with self.client(target) as client:
            self.check_experiment(client, target)
            for info in self.search(client, target):
                for a in info.get("assessments") or []:
                    if not _human(a):
                        continue
                    if a.get("assessment_name") != name:
                        seen.add(str(a.get("assessment_name")))
                        continue
                    value = (a.get("feedback") or {}).get("value")
                    score = (
                        float(value)
                        if isinstance(value, int | float) and not isinstance(value, bool)
                        else None
                    )
                    out.labels.append(
                        PlatformLabel(
                            trace_id=str(a.get("trace_id") or info.get("trace_id") or ""),
                            span_id=a.get("span_id") or None,
                            name=name,
                            value=_text(value),
                            score=score,
                            annotation_id=str(a.get("assessment_id") or ""),
                            annotator=(a.get("source") or {}).get("source_id") or None,
                            created_at=iso_time(a.get("last_update_time") or a.get("create_time")),
                            explanation=a.get("rationale"),
                        )
                    )
        if not out.labels:
            out.other_names = sorted(seen)
        return out
