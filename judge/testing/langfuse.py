"""A replay server of Langfuse's public API for tests: the recorded contract served on
127.0.0.1 (``http.server``), each request checked against the recorded one.

Langfuse's server cannot run here (it needs ClickHouse, Redis and S3), so the connector is
tested against a **recorded contract**: JSON exchanges ``{"_meta", "request", "response"}``
in ``tests/data/connectors/langfuse/`` (``SOURCE.md`` there: composed from Langfuse's OpenAPI
spec and server code at langfuse/langfuse 62751446, server v4.16.0, and validated by the
langfuse Python SDKs 4.18.0 and 5.2.0 against a replay server; *not* captured from a live
server). The connector talks to this server over real HTTP, as it would to Langfuse::

    with LangfuseReplay.start(load_contract(folder), generation="v4") as server:
        os.environ["LANGFUSE_PUBLIC_KEY"], os.environ["LANGFUSE_SECRET_KEY"] = server.keys
        judge.import_traces(server.target)

A request is answered by the first of these that applies:

1. a fault the test queued for its method and path (:meth:`LangfuseReplay.fail`): a recorded
   error exchange (``error_429_rate_limited``...) or a status and body, after ``after``
   requests that pass;
2. ``GET /api/public/health``, which needs no auth;
3. the auth header: none gets the recorded ``error_401_no_auth_header``, other keys than
   :attr:`LangfuseReplay.keys` get ``error_401_invalid_credentials`` (``error_401_ingestion``
   on ``/ingestion``);
4. the server's generation: ``v4`` (events_only mode, the default) answers the legacy reads
   (``/traces``, ``/observations``, ``GET /scores``, ``/v2/scores``) with the recorded
   ``error_404_legacy_in_events_only``; ``v3`` answers ``/v2/observations`` with
   ``error_404_v2_observations_on_v3``, and, as a server older than 3.179
   (``v3_scores=False``), ``/v3/scores`` with an HTML 404 page (Next.js's answer to a route
   that does not exist; composed, not recorded);
5. ``POST /api/public/scores``: the body is checked against ``CreateScoreRequest`` (the spec's
   field names, types and required fields, ``spec/scores.json``) and the server's rules that
   the contract records as 400s (BOOLEAN 0 or 1, ANNOTATION needs a configId, one subject);
   a good one is kept by its id (Langfuse upserts on it: :attr:`LangfuseReplay.scores`) and
   answered 200 ``{"id"}`` as ``scores_create_*.json`` are, a bad one 400 in the recorded
   shape (and kept in :attr:`LangfuseReplay.violations`);
6. any other request: the recorded exchange with the same method, path and query (the same
   ``key=value`` pairs, in any order) and the recorded headers (``accept``...);
7. nothing matches: a 400 naming the request and the nearest recorded exchange, and the request
   is kept in :attr:`LangfuseReplay.mismatches` (a test asserts there is none).

Tests derive the few exchanges the contract lacks from recorded ones, in the open
(:meth:`Exchange.derive`, :meth:`Exchange.narrowed`, :meth:`Exchange.paged`): another trace id
with no rows, the annotation filter applied to a page, a listing split into pages.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from judge.testing.processes import Stoppable
from judge.urls import mask_header

#: The routes a v4 server in events_only mode (its default) answers 404.
LEGACY_READS = ("/api/public/traces", "/api/public/observations", "/api/public/v2/scores")
#: Next.js's answer to a route that does not exist (composed: a v3 server before 3.179 has no
#: /v3/scores route).
NEXT_404 = (
    b"<!DOCTYPE html><html><head><title>404: This page could not be found</title></head>"
    b"<body><h1>404</h1><h2>This page could not be found.</h2></body></html>"
)
#: The keys the replay server takes (a test sets them as LANGFUSE_PUBLIC_KEY / _SECRET_KEY).
PUBLIC_KEY = "pk-lf-replay-0000"
SECRET_KEY = "sk-lf-replay-0000"


Query = tuple[tuple[str, str], ...]


def _query(raw: Mapping[str, Any] | Iterable[tuple[str, str]]) -> Query:
    """A query as sorted ``(key, value)`` pairs (a recorded list value is a repeated key)."""
    pairs: list[tuple[str, str]] = []
    items = raw.items() if isinstance(raw, Mapping) else raw
    for key, value in items:
        for one in value if isinstance(value, list) else [value]:
            pairs.append((str(key), str(one)))
    return tuple(sorted(pairs))


@dataclass(frozen=True)
class Exchange:
    """One recorded request and its answer."""

    name: str
    method: str
    path: str
    query: Query
    headers: Mapping[str, str]
    body: Any
    status: int
    response_headers: Mapping[str, str]
    response: Any
    #: Where it comes from: the file's ``_meta.provenance``, or how a test derived it.
    provenance: str = ""

    @classmethod
    def load(cls, path: Path) -> Exchange:
        """An exchange of the contract (``{"_meta", "request", "response"}``)."""
        data = json.loads(path.read_text(encoding="utf-8"))
        request, response = data["request"], data["response"]
        return cls(
            name=path.stem,
            method=request["method"].upper(),
            path=request["path"],
            query=_query(request.get("query") or {}),
            headers={k.lower(): v for k, v in (request.get("headers") or {}).items()},
            body=request.get("body"),
            status=int(response["status"]),
            response_headers={k.lower(): v for k, v in (response.get("headers") or {}).items()},
            response=response.get("body"),
            provenance=str((data.get("_meta") or {}).get("provenance") or ""),
        )

    def derive(
        self,
        name: str,
        *,
        query: Mapping[str, str | list[str] | None] | None = None,
        response: Any = None,
    ) -> Exchange:
        """This exchange with query parameters changed (None removes one) and, when given,
        another response body: an exchange the contract lacks, derived in the open."""
        pairs = dict[str, list[str]]()
        for key, value in self.query:
            pairs.setdefault(key, []).append(value)
        for key, change in (query or {}).items():
            if change is None:
                pairs.pop(key, None)
            else:
                pairs[key] = change if isinstance(change, list) else [change]
        return replace(
            self,
            name=name,
            query=_query(pairs),
            response=copy.deepcopy(self.response if response is None else response),
            provenance=f"derived from {self.name}",
        )

    def narrowed(self, name: str, key: str, value: str) -> Exchange:
        """This listing with the filter ``key=value`` added, keeping the rows the server would
        (those whose ``key`` is ``value``)."""
        body = copy.deepcopy(self.response)
        body["data"] = [row for row in body.get("data") or [] if str(row.get(key)) == value]
        return self.derive(name, query={key: value}, response=body)

    def paged(self, per_page: int) -> list[Exchange]:
        """This page/limit listing cut into pages of ``per_page`` rows (``page``, ``limit`` and
        ``meta`` as the server would give them)."""
        rows = list(self.response.get("data") or [])
        total = max(1, -(-len(rows) // per_page))
        out = []
        for page in range(1, total + 1):
            body = copy.deepcopy(self.response)
            body["data"] = rows[(page - 1) * per_page : page * per_page]
            body["meta"] = {
                "page": page,
                "limit": per_page,
                "totalItems": len(rows),
                "totalPages": total,
            }
            query = {"page": str(page), "limit": str(per_page)}
            out.append(self.derive(f"{self.name}[page {page}]", query=query, response=body))
        return out


def load_contract(folder: str | Path) -> dict[str, Exchange]:
    """name -> exchange, for every ``*.json`` exchange of ``folder`` (not ``spec/``)."""
    root = Path(folder)
    return {p.stem: Exchange.load(p) for p in sorted(root.glob("*.json"))}


def _spec(folder: Path) -> dict[str, Any]:
    path = folder / "spec" / "scores.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


@dataclass
class Seen:
    """One request as the replay server saw it, and what it answered."""

    method: str
    path: str
    query: Query
    headers: Mapping[str, str]
    body: Any
    status: int = 0
    answered_by: str = ""
    #: When it came (time.monotonic()).
    at: float = field(default_factory=time.monotonic)


@dataclass
class Fault:
    """An answer to serve instead of the contract's, for a method and path."""

    method: str
    path: str
    status: int
    body: Any
    headers: Mapping[str, str]
    name: str
    times: int | None = 1
    after: int = 0
    passed: int = 0
    served: int = 0


@dataclass
class LangfuseReplay(Stoppable):
    """A running replay server (see the module's docstring)."""

    exchanges: dict[str, Exchange]
    generation: str = "v4"
    v3_scores: bool = True
    keys: tuple[str, str] = (PUBLIC_KEY, SECRET_KEY)
    spec: dict[str, Any] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    #: Score id -> the last body posted with it (Langfuse upserts on the id).
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Requests no recorded exchange matched (each a line saying why).
    mismatches: list[str] = field(default_factory=list)
    #: Write bodies that broke the contract (each a line saying how).
    violations: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    _server: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(
        cls,
        folder: str | Path,
        *,
        generation: str = "v4",
        v3_scores: bool = True,
        extra: Iterable[Exchange] = (),
    ) -> LangfuseReplay:
        """Serve the contract of ``folder`` (plus ``extra`` derived exchanges) on a free port
        of 127.0.0.1, as a ``generation`` ("v4" or "v3") server."""
        if generation not in ("v4", "v3"):
            raise ValueError(f"generation is v4 or v3, not {generation!r}")
        exchanges = load_contract(folder)
        exchanges.update({e.name: e for e in extra})
        replay = cls(exchanges, generation, v3_scores, spec=_spec(Path(folder)))
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.replay = replay  # type: ignore[attr-defined]
        replay._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return replay

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def target(self) -> str:
        """The judge target URL of this server (``langfuse+http://127.0.0.1:PORT``)."""
        return "langfuse+" + self.url

    def add(self, *exchanges: Exchange) -> None:
        """Serve these exchanges too."""
        with self._lock:
            self.exchanges.update({e.name: e for e in exchanges})

    def fail(
        self,
        method: str,
        path: str,
        exchange: str | None = None,
        *,
        status: int = 503,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        times: int | None = 1,
        after: int = 0,
    ) -> Fault:
        """Answer ``method path`` (any query) with the recorded error ``exchange``'s response
        (or ``status`` / ``body`` / ``headers``) ``times`` times (None: until cleared), after
        ``after`` requests to it that are answered as usual."""
        if exchange is not None:
            recorded = self.exchanges[exchange]
            fault = Fault(
                method.upper(),
                path,
                recorded.status,
                recorded.response,
                dict(recorded.response_headers),
                exchange,
                times,
                after,
            )
        else:
            fault = Fault(
                method.upper(),
                path,
                status,
                body,
                dict(headers or {"content-type": "application/json; charset=utf-8"}),
                f"fault {status}",
                times,
                after,
            )
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Answer from the contract again."""
        with self._lock:
            self.faults.clear()

    def requests(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        """The requests seen (of ``method`` to ``path`` only, when given)."""
        with self._lock:
            return [
                s
                for s in self.seen
                if (method is None or s.method == method) and (path is None or s.path == path)
            ]

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- answering ----------------------------------------------------------------------------

    def answer(self, seen: Seen) -> tuple[int, Any, Mapping[str, str], str]:
        """(status, body, headers, what answered) for one request."""
        with self._lock:
            for fault in self.faults:
                if fault.method != seen.method or fault.path != seen.path:
                    continue
                if fault.passed < fault.after:
                    fault.passed += 1
                    break
                if fault.times is None or fault.served < fault.times:
                    fault.served += 1
                    return fault.status, fault.body, fault.headers, fault.name
        if seen.path == "/api/public/health":
            return self._recorded(seen)
        auth = self._auth(seen)
        if auth is not None:
            return auth
        gate = self._gate(seen)
        if gate is not None:
            return gate
        if seen.method == "POST" and seen.path == "/api/public/scores":
            return self._create_score(seen)
        return self._recorded(seen)

    def _reply(self, name: str) -> tuple[int, Any, Mapping[str, str], str]:
        recorded = self.exchanges[name]
        return recorded.status, recorded.response, recorded.response_headers, name

    def _auth(self, seen: Seen) -> tuple[int, Any, Mapping[str, str], str] | None:
        header = seen.headers.get("authorization")
        if not header:
            return self._reply("error_401_no_auth_header")
        token = base64.b64encode(":".join(self.keys).encode()).decode("ascii")
        if header != f"Basic {token}":
            if seen.path == "/api/public/ingestion":
                return self._reply("error_401_ingestion")
            return self._reply("error_401_invalid_credentials")
        return None

    def _gate(self, seen: Seen) -> tuple[int, Any, Mapping[str, str], str] | None:
        path = seen.path
        if self.generation == "v4":
            legacy = any(path == p or path.startswith(p + "/") for p in LEGACY_READS)
            if legacy or (path == "/api/public/scores" and seen.method == "GET"):
                return self._reply("error_404_legacy_in_events_only")
            return None
        if path == "/api/public/v2/observations":
            return self._reply("error_404_v2_observations_on_v3")
        if path == "/api/public/v3/scores" and not self.v3_scores:
            return 404, NEXT_404, {"content-type": "text/html; charset=utf-8"}, "next.js 404"
        return None

    def _recorded(self, seen: Seen) -> tuple[int, Any, Mapping[str, str], str]:
        with self._lock:
            candidates = [
                e for e in self.exchanges.values() if (e.method, e.path) == (seen.method, seen.path)
            ]
        for exchange in candidates:
            if exchange.query == seen.query and not self._header_differences(exchange, seen):
                if exchange.body is not None and exchange.body != seen.body:
                    continue
                return exchange.status, exchange.response, exchange.response_headers, exchange.name
        shown = f"{seen.method} {seen.path}?" + "&".join(f"{k}={v}" for k, v in seen.query)
        if candidates:
            nearest = min(
                candidates, key=lambda e: len(set(e.query) ^ set(seen.query)) * 10 + e.status
            )
            missing = sorted(set(nearest.query) - set(seen.query))
            extra = sorted(set(seen.query) - set(nearest.query))
            why = (
                f"nearest {nearest.name}: query lacks {missing}, has extra {extra}; "
                f"headers {self._header_differences(nearest, seen) or 'as recorded'}"
            )
        else:
            why = "no exchange of that method and path is recorded"
        line = f"{shown}: {why}"
        with self._lock:
            self.mismatches.append(line)
        body = {"message": f"replay: no recorded exchange for {line}", "error": "ReplayMismatch"}
        return 400, body, {"content-type": "application/json; charset=utf-8"}, "mismatch"

    def _header_differences(self, exchange: Exchange, seen: Seen) -> list[str]:
        out = []
        for name, value in exchange.headers.items():
            if name == "authorization":
                continue  # checked against the keys
            got = seen.headers.get(name)
            if got is None or got.split(";")[0].strip() != value.split(";")[0].strip():
                shown = None if got is None else mask_header(name, got)
                out.append(f"{name}: {shown!r} (recorded {mask_header(name, value)!r})")
        return out

    def _create_score(self, seen: Seen) -> tuple[int, Any, Mapping[str, str], str]:
        """POST /scores checked against CreateScoreRequest and the server's rules."""
        problems = self._score_problems(seen.body)
        headers = {"content-type": "application/json; charset=utf-8"}
        if problems:
            path, message, recorded = problems[0]
            with self._lock:
                self.violations.extend(f"POST /api/public/scores: {p[1]}" for p in problems)
            if recorded is not None:
                return self._reply(recorded)
            body = {
                "message": "Invalid request data",
                "error": [{"code": "custom", "path": path, "message": message}],
            }
            return 400, body, headers, "scores_create_400 (composed)"
        score = dict(seen.body)
        score_id = str(score.get("id") or uuid.uuid4())
        with self._lock:
            self.scores[score_id] = score
        example = self.exchanges.get("scores_create_categorical_config")
        answered = example.name if example is not None else "scores_create"
        return (
            200,
            {"id": score_id},
            dict(example.response_headers if example else headers),
            answered,
        )

    def _score_problems(self, body: Any) -> list[tuple[list[str], str, str | None]]:
        """(path, message, the recorded 400 exchange that says it) for each way ``body`` breaks
        CreateScoreRequest (spec) and the server's rules."""
        if not isinstance(body, dict):
            return [([], f"expected one score object, got {type(body).__name__}", None)]
        schemas = self.spec.get("schemas") or {}
        request = schemas.get("CreateScoreRequest") or {}
        properties: dict[str, Any] = request.get("properties") or {}
        out: list[tuple[list[str], str, str | None]] = []
        for name in request.get("required") or []:
            if name not in body:
                out.append(([name], f"{name} is required", None))
        for name, value in body.items():
            if properties and name not in properties:
                out.append(([name], f"{name} is not a field of CreateScoreRequest", None))
                continue
            problem = _type_problem(properties.get(name) or {}, value, schemas)
            if problem:
                out.append(([name], f"{name}: {problem}", None))
        kind = body.get("dataType")
        value = body.get("value")
        if kind == "BOOLEAN" and value not in (0, 1):
            out.append((["value"], "BOOLEAN value not 0 or 1", "scores_create_400_boolean_value"))
        if kind in ("CATEGORICAL", "TEXT", "CORRECTION") and not isinstance(value, str):
            out.append((["value"], f"a {kind} value must be a string", None))
        if kind in ("NUMERIC", "BOOLEAN") and not isinstance(value, int | float):
            out.append((["value"], f"a {kind} value must be a number", None))
        if body.get("source") == "ANNOTATION" and not body.get("configId") and kind != "CORRECTION":
            out.append(
                (
                    ["configId"],
                    "ANNOTATION without configId",
                    "scores_create_400_annotation_without_config",
                )
            )
        subjects = [k for k in ("traceId", "sessionId", "datasetRunId") if body.get(k)]
        if len(subjects) != 1:
            out.append(([], f"exactly one of traceId, sessionId, datasetRunId ({subjects})", None))
        if body.get("observationId") and not body.get("traceId"):
            out.append((["observationId"], "observationId without traceId", None))
        return out


def _type_problem(schema: Mapping[str, Any], value: Any, schemas: Mapping[str, Any]) -> str:
    """What is wrong with ``value`` under an OpenAPI property ``schema`` ('' when nothing)."""
    if value is None:
        return "" if schema.get("nullable") else "may not be null"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = schemas.get(ref.rsplit("/", 1)[-1]) or {}
        return _type_problem({**target, "nullable": schema.get("nullable")}, value, schemas)
    if "oneOf" in schema:
        options = [_type_problem(s, value, schemas) for s in schema["oneOf"]]
        return "" if "" in options else " or ".join(options)
    kind = schema.get("type")
    checks = {
        "string": isinstance(value, str),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "boolean": isinstance(value, bool),
    }
    if kind in checks and not checks[kind]:
        return f"expected {kind}, got {type(value).__name__}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{value!r} is not one of {schema['enum']}"
    return ""


class _Handler(BaseHTTPRequestHandler):
    """Hands each request to the replay server."""

    def _handle(self) -> None:
        replay: LangfuseReplay = self.server.replay  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        seen = Seen(
            method=self.command,
            path=parts.path,
            query=_query(parse_qsl(parts.query, keep_blank_values=True)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        status, answer, headers, name = replay.answer(seen)
        seen.status, seen.answered_by = status, name
        with replay._lock:
            replay.seen.append(seen)
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle  # noqa: N815 - http.server's names

    def log_message(self, *args: Any) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    """Serve a contract folder until interrupted (``python -m judge.testing.langfuse FOLDER``)
    and say how to point judge at it."""
    parser = argparse.ArgumentParser(description="Replay Langfuse's recorded contract.")
    parser.add_argument("folder", help="the contract, e.g. tests/data/connectors/langfuse")
    parser.add_argument("--generation", choices=("v4", "v3"), default="v4")
    args = parser.parse_args(argv)
    replay = LangfuseReplay.start(args.folder, generation=args.generation)
    print(f"export LANGFUSE_PUBLIC_KEY={replay.keys[0]} LANGFUSE_SECRET_KEY={replay.keys[1]}")
    print(f"judge import --from {replay.target} --out cases.jsonl", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        replay.stop()


if __name__ == "__main__":
    main()
