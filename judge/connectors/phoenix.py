"""``phoenix``: Arize Phoenix through its REST API (``/v1``; tested on arize-phoenix 20.26.1).

Target: ``phoenix+http://HOST:PORT[/PREFIX]/projects/NAME`` (or ``phoenix+https``); the project
name is URL-decoded (``my%20agents``). The API key comes from ``PHOENIX_API_KEY`` (the
variable Phoenix's own clients read; else the URL's password), sent as ``Authorization:
Bearer``. Options in the query string: ``sync=true`` (write annotations synchronously; see
below) and ``batch=N`` (annotations per request).

* **Traces in**: the project's spans, paged (``GET /v1/projects/NAME/spans``, 1000 a page,
  ``trace_id`` filters for ``--trace-id``), turned back into OTLP/JSON (``span_kind`` becomes
  ``openinference.span.kind`` again; the ``metadata.*`` / ``tool.parameters.*`` attributes that
  Phoenix flattens on OTLP ingest are put back together) and read by the OpenInference/GenAI
  span reader of :mod:`judge.traces.otel`. Each case records ``platform``, ``target``,
  ``trace_id`` and ``root_span_id`` (the span without a parent) in its meta.
* **Verdicts out**: one span annotation on the trace's root span per (case, rubric, judge
  model): ``name`` = rubric id, ``annotator_kind`` LLM, ``result`` {label, score = P(pass),
  explanation}, ``metadata`` = :meth:`VerdictOut.metadata` (rubric@version, model, judgment
  ids, route, band, reason, card digest), ``identifier`` = ``judge:<model>``. Phoenix upserts on
  (name, span, identifier), so exporting again updates the row; a person's annotation of the
  same name has another identifier (``""`` from the UI without auth, ``px-app:<user>`` with it)
  and is never touched. Batches go with ``sync=false`` (Phoenix's bulk inserter: about 1,000
  rows/s against 100-190 with ``sync=true`` on this machine, BENCHMARKS.md) and are confirmed
  by reading them back (``GET .../span_annotations`` by span ids and identifier, the content
  digest in the metadata compared): Phoenix accepts an asynchronous annotation of an unknown
  span and drops it ten minutes later without a word, so "accepted" is not "stored". What is
  not read back in time is sent again with ``sync=true``, which stores it or names the missing
  spans (404).
* **Labels back**: the project's traces with their span ids (``GET .../traces?include_spans``),
  then the annotations named ``--annotation`` on those spans and traces, in chunks of 500 ids;
  kept: ``annotator_kind`` HUMAN, not a note, not one of judge's own identifiers.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import quote, unquote

from judge.connectors.errors import ConnectorError, PlatformNotFound, TargetError
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
from judge.traces import ImportResult
from judge.traces.otel import read_otlp
from judge.traces.otlp import build_otlp_event, build_otlp_span

#: The environment variable of the API key (as Phoenix's own clients read it).
API_KEY_ENV = "PHOENIX_API_KEY"
#: Spans and traces per page (the API's maximum).
PAGE = 1000
#: Span or trace ids per annotation read (the API takes up to 1000; the URL stays short).
IDS_PER_READ = 500
#: Trace ids per span query of ``--trace-id``.
TRACE_IDS_PER_QUERY = 50
#: Annotations per request: asynchronous (the default) and synchronous.
ASYNC_BATCH = 1000
SYNC_BATCH = 200
#: Asynchronous batches posted ahead of the one being read back.
AHEAD = 2
#: Seconds to wait for an asynchronous batch to read back before it is sent synchronously.
CONFIRM_S = 30.0
#: Seconds to read back what was posted before a failure, before giving up on it.
SALVAGE_S = 10.0
#: Identifiers of judge's annotations start with this (a person's never do).
IDENTIFIER_PREFIX = "judge:"
#: Attributes Phoenix parses from JSON and flattens on OTLP ingest (``metadata.env``), but
#: keeps as given over its JSON span endpoint: put back as one JSON string.
JSON_STRING_ATTRIBUTES = ("metadata", "tool.parameters", "llm.prompt_template.variables")

_STATUS = {"OK": 1, "ERROR": 2, "UNSET": 0}
_PATH = re.compile(r"^(?P<prefix>.*?)/projects/(?P<name>[^/]+)/?$")


def identifier(model: str) -> str:
    """The identifier of judge's annotations by judge ``model`` (with the rubric as the name
    and the root span, Phoenix's upsert key of one verdict)."""
    return IDENTIFIER_PREFIX + model


def _unflatten(attributes: dict[str, Any]) -> dict[str, Any]:
    """Phoenix's flattened JSON-string attributes (``metadata.env``) back as one JSON string."""
    out = dict(attributes)
    for name in JSON_STRING_ATTRIBUTES:
        if name in out:
            continue
        prefix = name + "."
        parts = {k[len(prefix) :]: v for k, v in attributes.items() if k.startswith(prefix)}
        if not parts:
            continue
        tree: dict[str, Any] = {}
        for dotted, value in parts.items():
            node = tree
            *path, leaf = dotted.split(".")
            for part in path:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            node[leaf] = value
        for key in parts:
            out.pop(prefix + key, None)
        out[name] = json.dumps(tree, ensure_ascii=False)
    return out


def otlp_span(span: dict[str, Any]) -> dict[str, Any]:
    """One span of Phoenix's REST API as an OTLP/JSON span."""
    context = span.get("context") or {}
    attributes = span.get("attributes") or {}
    attributes = _unflatten(attributes if isinstance(attributes, dict) else {})
    kind = span.get("span_kind")
    if isinstance(kind, str) and kind and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = kind
    return build_otlp_span(
        trace_id=context.get("trace_id") or "",
        span_id=context.get("span_id") or "",
        parent_id=span.get("parent_id"),
        name=span.get("name") or "",
        start_nanos=iso_nanos(span.get("start_time")),
        end_nanos=iso_nanos(span.get("end_time")),
        attributes=attributes,
        events=[
            build_otlp_event(
                event.get("name") or "",
                iso_nanos(event.get("timestamp")),
                event.get("attributes") or {},
            )
            for event in span.get("events") or []
            if isinstance(event, dict)
        ],
        status=(
            _STATUS.get(str(span.get("status_code") or "UNSET").upper(), 0),
            span.get("status_message") or "",
        ),
    )


def root_span(spans: Sequence[dict[str, Any]]) -> str | None:
    """The id of a trace's root span: the one without a parent (else the earliest span whose
    parent is not in the trace)."""
    ids = {(s.get("context") or {}).get("span_id") for s in spans}
    roots = [s for s in spans if not s.get("parent_id")] or [
        s for s in spans if s.get("parent_id") not in ids
    ]
    if not roots:
        return None
    first = min(roots, key=lambda s: iso_nanos(s.get("start_time")))
    found = (first.get("context") or {}).get("span_id")
    return found if isinstance(found, str) else None


class PhoenixConnector:
    """Arize Phoenix: traces from a project's spans, verdicts as span annotations on each
    trace's root span, people's annotations back."""

    name = "phoenix"
    description = (
        "Arize Phoenix REST API (tested on 20.26.1): phoenix+http(s)://HOST:PORT/projects/NAME; "
        f"key from {API_KEY_ENV}"
    )

    def __init__(self, *, confirm_s: float = CONFIRM_S) -> None:
        self.confirm_s = confirm_s

    # -- the target ---------------------------------------------------------------------------

    def target(self, split: SplitTarget) -> Target:
        """``[/PREFIX]/projects/NAME`` -> the project NAME on ``scheme://netloc[/PREFIX]``."""
        found = _PATH.match(split.path)
        if found is None or not unquote(found["name"]).strip():
            raise TargetError(
                f"{mask_url(split.url)}: a Phoenix target names a project",
                hint="phoenix+http://HOST:PORT/projects/NAME (the NAME of the project in "
                "Phoenix's sidebar, e.g. default)",
            )
        name = unquote(found["name"])
        for option in split.options:
            if option not in ("sync", "batch"):
                raise TargetError(
                    f"{mask_url(split.url)}: unknown option {option!r}",
                    hint="Phoenix targets take sync=true|false and batch=N",
                )
        return split.target(found["prefix"], name, "projects/" + quote(name, safe=""))

    def client(self, target: Target) -> HttpClient:
        """An HTTP client for ``target`` with the API key of ``PHOENIX_API_KEY`` (else the
        URL's password, ``phoenix+https://:KEY@HOST/...``), if any."""
        key = os.environ.get(API_KEY_ENV) or target.password
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return HttpClient(target.base, platform="Phoenix", headers=headers, auth_env=API_KEY_ENV)

    def _project(self, target: Target) -> str:
        return "/v1/projects/" + quote(target.resource, safe="")

    def check_project(self, client: HttpClient, target: Target) -> None:
        """PlatformNotFound naming the projects there when the target's project is not."""
        try:
            client.get_json(self._project(target))
        except PlatformNotFound as err:
            names = self.project_names(client)
            shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
            raise PlatformNotFound(
                f"Phoenix at {mask_url(target.base)} has no project {target.resource!r} "
                f"(its projects: {shown or 'none'}); give one of them in "
                f"{target.platform}+{target.scheme}://HOST:PORT/projects/NAME"
            ) from err

    def project_names(self, client: HttpClient) -> list[str]:
        """The names of the projects of a Phoenix server."""
        names: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if cursor:
                params["cursor"] = cursor
            page = client.get_json("/v1/projects", params=params) or {}
            names += [p.get("name", "") for p in page.get("data") or []]
            cursor = page.get("next_cursor")
            if not cursor:
                return names

    def _pages(
        self, client: HttpClient, path: str, params: list[tuple[str, Any]]
    ) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        while True:
            query = [*params, ("cursor", cursor)] if cursor else params
            page = client.get_json(path, params=query) or {}
            yield from page.get("data") or []
            cursor = page.get("next_cursor")
            if not cursor:
                return

    # -- traces in ----------------------------------------------------------------------------

    def spans(
        self, client: HttpClient, target: Target, trace_ids: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """Every span of the project (of ``trace_ids`` only, when given)."""
        path = self._project(target) + "/spans"
        base = [("limit", PAGE), ("sort", "start_time"), ("order", "asc")]
        if not trace_ids:
            return list(self._pages(client, path, base))
        found: list[dict[str, Any]] = []
        for part in chunks(list(dict.fromkeys(trace_ids)), TRACE_IDS_PER_QUERY):
            found += self._pages(client, path, base + [("trace_id", t) for t in part])
        return found

    def cases(self, target: Target, *, trace_ids: Sequence[str] = ()) -> ImportResult:
        """The project's traces as cases (one per trace with LLM/agent spans)."""
        with self.client(target) as client:
            self.check_project(client, target)
            spans = self.spans(client, target, trace_ids)
        by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for span in spans:
            trace_id = (span.get("context") or {}).get("trace_id")
            if isinstance(trace_id, str) and trace_id:
                by_trace[trace_id].append(span)
        missing = [t for t in dict.fromkeys(trace_ids) if t not in by_trace]
        if missing:
            raise PlatformNotFound(
                f"Phoenix project {target.resource!r} at {mask_url(target.base)} has no trace "
                f"{', '.join(missing)} ({len(by_trace)} of the {len(set(trace_ids))} trace ids "
                "given were found); give the 32-hex trace ids Phoenix shows"
            )
        document = {
            "resourceSpans": [
                {
                    "resource": {"attributes": []},
                    "scopeSpans": [
                        {
                            "scope": {"name": "phoenix"},
                            "spans": [otlp_span(s) for t in by_trace.values() for s in t],
                        }
                    ],
                }
            ]
        }
        result = read_otlp([document], target.canonical)
        for case in result.cases:
            trace_spans = by_trace.get(case.id, [])
            case.meta.update(
                {
                    "platform": target.platform,
                    "target": target.canonical,
                    "trace_id": case.id,
                    "root_span_id": root_span(trace_spans) or case.meta.get("root_span_id"),
                    "project": target.resource,
                }
            )
        return result

    # -- verdicts out -------------------------------------------------------------------------

    def annotation(self, verdict: VerdictOut) -> dict[str, Any]:
        """The span annotation of one verdict."""
        return {
            "span_id": verdict.root_span_id,
            "name": verdict.rubric_id,
            "annotator_kind": "LLM",
            "result": {
                "label": verdict.label,
                "score": verdict.p_pass,
                "explanation": verdict.explanation,
            },
            "metadata": verdict.metadata(),
            "identifier": identifier(verdict.model),
        }

    def export(self, target: Target, verdicts: Sequence[VerdictOut]) -> Iterator[list[VerdictOut]]:
        """Send the verdicts (each needs its root span id) in batches; yield each batch once it
        reads back from Phoenix. ``sync=true`` in the target: each batch is stored before the
        request returns (slower; no read-back needed)."""
        unlinked = [v.case_id for v in verdicts if not v.root_span_id]
        if unlinked:
            raise ConnectorError(
                f"{len(unlinked)} verdicts have no root span to annotate in Phoenix (cases "
                f"{', '.join(unlinked[:3])}...): import the cases from Phoenix"
            )
        sync = target.options.get("sync", "false").lower() in ("1", "true", "yes")
        size = self._batch_size(target, SYNC_BATCH if sync else ASYNC_BATCH)
        with self.client(target) as client:
            self.check_project(client, target)
            if sync:
                for batch in chunks(list(verdicts), size):
                    self._post(client, target, list(batch), sync=True)
                    yield list(batch)
                return
            # Asynchronous: post up to AHEAD batches past the one being read back, so that
            # Phoenix's inserter always has work while judge reads.
            waiting: list[list[VerdictOut]] = []
            for batch in chunks(list(verdicts), size):
                try:
                    self._post(client, target, list(batch), sync=False)
                except ConnectorError:
                    # What Phoenix took before the failure is recorded if it can be read.
                    yield from self._salvage(client, target, waiting)
                    raise
                waiting.append(list(batch))
                if len(waiting) > AHEAD:
                    yield self._confirm(client, target, waiting.pop(0))
            while waiting:
                yield self._confirm(client, target, waiting.pop(0))

    def _batch_size(self, target: Target, default: int) -> int:
        raw = target.options.get("batch")
        if raw is None:
            return default
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if size < 1:
            raise TargetError(f"batch={raw!r}: give a whole number of annotations per request")
        return size

    def _post(
        self, client: HttpClient, target: Target, batch: list[VerdictOut], *, sync: bool
    ) -> None:
        spans = ", ".join(sorted({str(v.root_span_id) for v in batch})[:5])
        client.post_json(
            "/v1/span_annotations",
            {"data": [self.annotation(v) for v in batch]},
            params={"sync": "true" if sync else "false"},
            not_found=f"Phoenix at {mask_url(target.base)} has not every span this batch "
            f"annotates (among {spans}): were the traces deleted from project "
            f"{target.resource!r}?",
        )

    def stored(self, client: HttpClient, target: Target, batch: Sequence[VerdictOut]) -> set[str]:
        """The keys of the verdicts of ``batch`` whose annotation Phoenix holds as sent (the
        content digest in its metadata compared)."""
        wanted: dict[tuple[Any, Any, Any], VerdictOut] = {
            (v.root_span_id, v.rubric_id, identifier(v.model)): v for v in batch
        }
        found: set[str] = set()
        spans = sorted({str(v.root_span_id) for v in batch})
        params: list[tuple[str, Any]] = [("limit", 10000)]
        params += [("identifier", i) for i in sorted({identifier(v.model) for v in batch})]
        params += [("include_annotation_names", n) for n in sorted({v.rubric_id for v in batch})]
        for part in chunks(spans, IDS_PER_READ):
            query = params + [("span_ids", s) for s in part]
            for row in self._pages(client, self._project(target) + "/span_annotations", query):
                verdict = wanted.get((row.get("span_id"), row.get("name"), row.get("identifier")))
                metadata = row.get("metadata") or {}
                if verdict is not None and metadata.get("digest") == verdict.short_digest:
                    found.add(verdict.key)
        return found

    def _confirm(
        self, client: HttpClient, target: Target, batch: list[VerdictOut]
    ) -> list[VerdictOut]:
        deadline = time.monotonic() + self.confirm_s
        pause = 0.2
        missing = list(batch)
        while True:
            stored = self.stored(client, target, missing)
            missing = [v for v in missing if v.key not in stored]
            if not missing or time.monotonic() >= deadline:
                break
            time.sleep(pause)
            pause = min(pause * 1.5, 2.0)
        if missing:
            # Not read back in time: sent again synchronously, which stores them or names
            # the spans Phoenix does not have (the asynchronous insert drops those silently).
            for part in chunks(missing, SYNC_BATCH):
                self._post(client, target, list(part), sync=True)
        return batch

    def _salvage(
        self, client: HttpClient, target: Target, waiting: list[list[VerdictOut]]
    ) -> Iterator[list[VerdictOut]]:
        """The verdicts of the batches posted before a failure that read back within
        ``SALVAGE_S`` (none when Phoenix cannot be read either)."""
        pending = [v for batch in waiting for v in batch]
        deadline = time.monotonic() + SALVAGE_S
        try:
            while pending:
                stored = self.stored(client, target, pending)
                if stored:
                    yield [v for v in pending if v.key in stored]
                    pending = [v for v in pending if v.key not in stored]
                if not pending or time.monotonic() >= deadline:
                    return
                time.sleep(0.5)
        except ConnectorError:
            return

    # -- labels back --------------------------------------------------------------------------

    def traces(self, client: HttpClient, target: Target) -> dict[str, str]:
        """span id -> trace id of every span of the project."""
        spans: dict[str, str] = {}
        path = self._project(target) + "/traces"
        for trace in self._pages(client, path, [("limit", PAGE), ("include_spans", "true")]):
            for span in trace.get("spans") or []:
                if isinstance(span.get("span_id"), str):
                    spans[span["span_id"]] = trace.get("trace_id") or ""
        return spans

    def _annotations(
        self,
        client: HttpClient,
        target: Target,
        kind: str,
        ids: Iterable[str],
        names: Sequence[str],
    ) -> Iterator[dict[str, Any]]:
        """The annotations of spans (``kind`` span) or traces (``kind`` trace) by id."""
        path = self._project(target) + f"/{kind}_annotations"
        params: list[tuple[str, Any]] = [("limit", 10000)]
        params += [("include_annotation_names", n) for n in names]
        for part in chunks(sorted(set(ids)), IDS_PER_READ):
            query = params + [(f"{kind}_ids", i) for i in part]
            yield from self._pages(client, path, query)

    def labels(self, target: Target, *, name: str) -> LabelsRead:
        """People's annotations named ``name`` on the project's spans and traces."""
        out = LabelsRead()
        with self.client(target) as client:
            self.check_project(client, target)
            span_traces = self.traces(client, target)
            trace_ids = set(span_traces.values())
            rows = [
                ("span", r) for r in self._annotations(client, target, "span", span_traces, [name])
            ]
            rows += [
                ("trace", r) for r in self._annotations(client, target, "trace", trace_ids, [name])
            ]
            for level, row in rows:
                if not _human(row) or row.get("name") != name:
                    continue
                result = row.get("result") or {}
                span_id = row.get("span_id") if level == "span" else None
                trace_id = span_traces.get(str(span_id)) if level == "span" else row.get("trace_id")
                out.labels.append(
                    PlatformLabel(
                        trace_id=str(trace_id or ""),
                        span_id=span_id,
                        name=name,
                        value=_value(result),
                        score=result.get("score"),
                        annotation_id=str(row.get("id") or ""),
                        annotator=row.get("user_id") or (row.get("identifier") or None),
                        created_at=iso_time(row.get("updated_at") or row.get("created_at")),
                        explanation=result.get("explanation"),
                    )
                )
            if not out.labels:
                seen: set[str] = set()
                for kind, ids in (("span", list(span_traces)), ("trace", list(trace_ids))):
                    for row in self._annotations(client, target, kind, ids, []):
                        if _human(row):
                            seen.add(str(row.get("name")))
                out.other_names = sorted(seen)
        return out


def _human(row: dict[str, Any]) -> bool:
    """A person's annotation: HUMAN, not a note, not written by judge."""
    return (
        row.get("annotator_kind") == "HUMAN"
        and row.get("name") != "note"
        and not str(row.get("identifier") or "").startswith(IDENTIFIER_PREFIX)
    )


def _value(result: dict[str, Any]) -> str | None:
    """The label of an annotation's result; a score-only result gives its score as text."""
    label = result.get("label")
    if isinstance(label, str) and label != "":
        return label
    score = result.get("score")
    if isinstance(score, int | float) and not isinstance(score, bool):
        return format(float(score), "g")
    return None
