"""The FastAPI application: JSON API under ``/v1``, review pages under ``/review``.

``create_app(ServiceConfig(...))`` builds an app with its own state (store path, rate limiter,
job workers); nothing lives at module level. Every route sits behind
``judge.api.security.AccessMiddleware`` (API key or page session, rate limit, body limit); the
OpenAPI schema is served at ``/openapi.json`` to authenticated callers and declares both key
schemes. Errors are JSON ``{"error": {"code", "message"}}`` with a matching status.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.api import schemas as s
from judge.api.jobs import JobManager, JudgeSettings, create_job, get_job, list_jobs
from judge.api.keys import Principal
from judge.api.security import AccessMiddleware, RateLimiter
from judge.defaults import DEFAULT_MODEL
from judge.errors import CardError, InputError, JudgeError, RubricError
from judge.review import ConflictError, NotFoundError
from judge.store import Store

log = logging.getLogger("judge.api")

MB = 1024 * 1024


@dataclass(frozen=True)
class ServiceConfig:
    """How the service runs. ``models``: judge models callers may use (the first is default)."""

    db: Path
    models: tuple[str, ...] = (DEFAULT_MODEL,)
    api_base: str | None = None
    max_body_bytes: int = 5 * MB
    #: Requests per second per key (token bucket refill) and the bucket size; rate 0: no limit.
    rate_per_s: float = 10.0
    burst: int = 60
    #: Force blind review for every item (items routed with --blind are blind anyway).
    blind: bool = False
    job_workers: int = 1
    concurrency: int = 4
    audit_fraction: float = 0.05
    session_hours: float = 12.0
    extra: dict[str, Any] = field(default_factory=dict)


# --- Errors ------------------------------------------------------------------------------------

#: Our error types -> (HTTP status, code). A registry, checked most specific first.
ERROR_STATUS: tuple[tuple[type[JudgeError], int, str], ...] = (
    (NotFoundError, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    (CardError, 409, "card_refused"),
    (RubricError, 422, "invalid_rubric"),
    (InputError, 422, "invalid_input"),
    (JudgeError, 422, "invalid_request"),
)
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
}


def error_response(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    """The JSON error body every failure uses."""
    body: dict[str, Any] = {"code": code, "message": message}
    body.update({k: v for k, v in extra.items() if v is not None})
    return JSONResponse({"error": body}, status_code=status)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(JudgeError)
    async def judge_error(_: Request, exc: JudgeError) -> JSONResponse:
        for kind, status, code in ERROR_STATUS:
            if isinstance(exc, kind):
                return error_response(status, code, str(exc))
        return error_response(422, "invalid_request", str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        details = [
            {"field": ".".join(str(p) for p in e.get("loc", ())), "message": str(e.get("msg"))}
            for e in errors[:20]
        ]
        first = details[0] if details else {"field": "", "message": "invalid request"}
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        message = f"field '{first['field']}': {first['message']}{more}"
        return error_response(422, "invalid_request", message, details=details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        response = error_response(exc.status_code, code, str(exc.detail))
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(Exception)
    async def crash(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return error_response(500, "internal_error", "internal error; see the server log")


# --- Dependencies ------------------------------------------------------------------------------

_bearer = HTTPBearer(auto_error=False, scheme_name="bearerKey", description="API key")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="apiKeyHeader")


def principal(
    request: Request,
    _bearer_key: Annotated[Any, Security(_bearer)] = None,
    _header_key: Annotated[Any, Security(_header)] = None,
) -> Principal:
    """The authenticated caller (set by the access middleware; declared for the schema)."""
    found = getattr(request.state, "principal", None)
    if not isinstance(found, Principal):
        raise StarletteHTTPException(401, "an API key is required")
    return found


def config_of(request: Request) -> ServiceConfig:
    """The service configuration."""
    config: ServiceConfig = request.app.state.config
    return config


def store_dep(request: Request) -> Iterator[Store]:
    """A store connection for this request (SQLite connections stay in their thread)."""
    with Store(config_of(request).db) as store:
        yield store


Caller = Annotated[Principal, Depends(principal)]
Db = Annotated[Store, Depends(store_dep)]
Config = Annotated[ServiceConfig, Depends(config_of)]
Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0, le=10_000_000)]

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorResponse, "description": text}
    for code, text in (
        (400, "Malformed request (body not decodable)"),
        (401, "Missing or invalid API key"),
        (413, "Request body too large"),
        (422, "Invalid request"),
        (429, "Rate limited (see Retry-After)"),
    )
}


def _with(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {404: "Not found", 409: "Conflict with the current state"}
    return {c: {"model": s.ErrorResponse, "description": text[c]} for c in codes}


# --- Routes ------------------------------------------------------------------------------------


def _settings(config: ServiceConfig) -> JudgeSettings:
    return JudgeSettings(
        models=config.models, api_base=config.api_base, concurrency=config.concurrency
    )


def _card_info(row: dict[str, Any]) -> s.CardInfo:
    return s.CardInfo(
        digest=row["digest"],
        model=row["model"],
        rubric_id=row["rubric_id"],
        rubric_version=row["rubric_version"],
        kind=row["kind"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        stale=bool(row["stale"]),
        stale_reason=row["stale_reason"],
    )


def _card_row(store: Store, digest: str) -> dict[str, Any]:
    full = digest if digest.startswith("sha256:") else "sha256:" + digest
    rows = list(store.db.query("select * from cards where digest = ?", [full]))
    if not rows:
        raise NotFoundError(f"no stored card {digest!r} (upload it with POST /v1/cards)")
    return rows[0]


def _check_card_before_judging(card: Any, models: list[str], rubric: Any) -> None:
    """Refuse a card that could not route this request's judgments, before paying for them."""
    from calibration.card import verify_card
    from judge.evidence import SELECTOR_VERSION
    from judge.routing import card_models

    # The card's judge (or, for a cascade card, one of its stages) must be among the models.
    model = card.judge.model if set(card_models(card)) & set(models) else models[0]
    try:
        verify_card(
            card, judge_model=model, rubric_digest=rubric.digest, selector_version=SELECTOR_VERSION
        )
    except CardError as err:
        raise CardError(f"card {card.card_digest[:19]} cannot route this request: {err}") from err


def _api_router() -> APIRouter:
    router = APIRouter(prefix="/v1", responses=_ERRORS)

    @router.get("/whoami", response_model=s.WhoAmI, tags=["access"])
    def whoami(caller: Caller) -> s.WhoAmI:
        """The caller's key name and role."""
        return s.WhoAmI(name=caller.name, role=caller.role)

    @router.post(
        "/judge", response_model=s.JudgeResponse, tags=["judging"], responses=_with(404, 409)
    )
    def judge_case(
        body: s.JudgeRequest, caller: Caller, store: Db, config: Config
    ) -> s.JudgeResponse:
        """Judge one case now; with ``card``, route the result and queue it for review if needed."""
        import asyncio

        from judge.providers import ModelParams
        from judge.routing import apply_card, get_card
        from judge.rubrics import load_rubric
        from judge.runner import Runner, plan

        settings = _settings(config)
        models = settings.pick_models(body.models)
        rubric = load_rubric(body.rubric)
        card = None
        if body.card is not None:
            card = get_card(store, body.card)
            if card is None:
                raise NotFoundError(f"no stored card {body.card!r} (upload it with POST /v1/cards)")
            _check_card_before_judging(card, models, rubric)
        temperature = body.temperature
        if temperature is None:
            temperature = 0.7 if body.samples > 1 else 0.0
        params = ModelParams(
            temperature=temperature, max_tokens=body.max_tokens, api_base=config.api_base
        )
        steps = plan([body.case], rubric, models, orders=body.orders, samples=body.samples)
        runner = Runner(store, rubric, params, concurrency=config.concurrency)
        summary = asyncio.run(runner.run(steps))
        judgments = [o.judgment for o in summary.outcomes]
        routing = []
        if card is not None and judgments:
            run = apply_card(store, card, judgments=judgments, audit_fraction=config.audit_fraction)
            routing = run.decisions
        return s.JudgeResponse(
            judgments=judgments,
            routing=routing,
            errors=[f"case {st.case.id}: {err}" for st, err in summary.errors],
        )

    @router.post(
        "/jobs",
        response_model=s.Job,
        status_code=202,
        tags=["judging"],
        responses={**_with(409), 200: {"model": s.Job, "description": "Replayed (same key)"}},
    )
    def submit_job(
        body: s.JobRequest,
        request: Request,
        caller: Caller,
        store: Db,
        config: Config,
        idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    ) -> Any:
        """Queue a batch of cases; the same Idempotency-Key and body return the same job."""
        models = _settings(config).pick_models(body.models)
        job, created = create_job(
            store, body, models, key_id=caller.key_id, idempotency_key=idempotency_key
        )
        if created:
            request.app.state.jobs.submit(job.id)
            return job
        return JSONResponse(
            job.model_dump(mode="json"), status_code=200, headers={"Idempotent-Replayed": "true"}
        )

    @router.get("/jobs", response_model=s.JobList, tags=["judging"])
    def jobs(caller: Caller, store: Db, limit: Limit = 50, offset: Offset = 0) -> s.JobList:
        """Jobs, newest first."""
        return s.JobList(jobs=list_jobs(store, limit=limit, offset=offset))

    @router.get("/jobs/{job_id}", response_model=s.Job, tags=["judging"], responses=_with(404))
    def job(job_id: str, caller: Caller, store: Db) -> s.Job:
        """A job's state and progress."""
        return get_job(store, job_id)

    @router.get(
        "/jobs/{job_id}/results",
        response_model=s.JobResults,
        tags=["judging"],
        responses=_with(404),
    )
    def job_results(
        job_id: str, caller: Caller, store: Db, limit: Limit = 100, offset: Offset = 0
    ) -> s.JobResults:
        """A page of the judgments a job produced (or found already stored)."""
        from judge.api.jobs import job_judgment_ids
        from judge.types import Judgment

        state = get_job(store, job_id)
        ids = job_judgment_ids(store, job_id)
        page = ids[offset : offset + limit]
        found: list[Judgment] = []
        if page:
            marks = ", ".join("?" for _ in page)
            rows = store.db.query(f"select json from judgments where id in ({marks})", page)
            found = [Judgment.model_validate_json(r["json"]) for r in rows]
        found.sort(
            key=lambda j: (
                j.case_id,
                j.provenance.model,
                j.provenance.order or "",
                j.provenance.sample,
            )
        )
        return s.JobResults(
            job_id=job_id, status=state.status, total=len(ids), offset=offset, judgments=found
        )

    @router.post(
        "/jobs/{job_id}/resume",
        response_model=s.Job,
        status_code=202,
        tags=["judging"],
        responses=_with(404, 409),
    )
    def resume_job(job_id: str, request: Request, caller: Caller, store: Db) -> s.Job:
        """Run a finished or failed job again: stored judgments are reused, not paid again."""
        state = get_job(store, job_id)
        if state.status in ("queued", "running"):
            raise ConflictError(f"job {job_id} is {state.status} already")
        with store.db.conn:
            store.db.table("jobs").update(job_id, {"status": "queued", "finished_at": None})
        request.app.state.jobs.submit(job_id)
        return get_job(store, job_id)

    @router.get("/cards", response_model=list[s.CardInfo], tags=["cards"])
    def cards(caller: Caller, store: Db) -> list[s.CardInfo]:
        """Stored calibration cards, newest first."""
        from judge.routing import card_rows

        return [_card_info(r) for r in card_rows(store)]

    @router.post(
        "/cards", response_model=s.CardInfo, status_code=201, tags=["cards"], responses=_with(409)
    )
    def upload_card(body: s.CardUpload, caller: Caller, store: Db) -> s.CardInfo:
        """Store a card (validated, digest checked against its content)."""
        import tempfile

        from calibration.card import load_card
        from judge.routing import save_card

        # load_card reads a file: reuse its strict checks (schema and content digest).
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as handle:
            handle.write(body.yaml)
            handle.flush()
            card = load_card(handle.name)
        digest = save_card(store, card)
        return _card_info(_card_row(store, digest))

    @router.get(
        "/cards/{digest}", response_model=s.CardDetail, tags=["cards"], responses=_with(404)
    )
    def card(digest: str, caller: Caller, store: Db) -> s.CardDetail:
        """A stored card with its YAML."""
        row = _card_row(store, digest)
        return s.CardDetail(**_card_info(row).model_dump(), yaml=row["yaml"])

    @router.get(
        "/cards/{digest}/audit", response_model=s.AuditStatus, tags=["cards"], responses=_with(404)
    )
    def card_audit(digest: str, caller: Caller, store: Db) -> s.AuditStatus:
        """The card's live band bounds from audit labels; stale when one exceeds alpha."""
        from judge.routing import refresh_audit

        row = _card_row(store, digest)
        return refresh_audit(store, row["digest"])

    @router.post(
        "/routing", response_model=s.RouteResponse, tags=["routing"], responses=_with(404, 409)
    )
    def route(body: s.RouteRequest, caller: Caller, store: Db) -> s.RouteResponse:
        """Apply a stored card to the stored judgments (or one job's): decide, queue review."""
        from judge.api.jobs import job_judgment_ids
        from judge.routing import apply_card, get_card
        from judge.types import Judgment

        card = get_card(store, body.card)
        if card is None:
            raise NotFoundError(f"no stored card {body.card!r} (upload it with POST /v1/cards)")
        judgments = None
        if body.job_id is not None:
            get_job(store, body.job_id)
            ids = job_judgment_ids(store, body.job_id)
            judgments = []
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ", ".join("?" for _ in part)
                rows = store.db.query(f"select json from judgments where id in ({marks})", part)
                judgments += [Judgment.model_validate_json(r["json"]) for r in rows]
            if not judgments:
                raise ConflictError(f"job {body.job_id} has no judgments yet")
        run = apply_card(
            store,
            card,
            judgments=judgments,
            audit_fraction=body.audit_fraction,
            seed=body.seed,
            double_fraction=body.double_fraction,
            blind=body.blind,
        )
        return s.RouteResponse(
            card_digest=run.card_digest,
            counts=dict(Counter(d.decision for d in run.decisions)),
            reasons=dict(Counter(d.reason for d in run.decisions)),
            enqueued=run.enqueued,
            audited=run.audited,
            decisions=run.decisions,
        )

    @router.get("/routing", response_model=s.RoutingList, tags=["routing"])
    def routing(
        caller: Caller,
        store: Db,
        card: Annotated[str | None, Query(max_length=80)] = None,
        decision: Annotated[str | None, Query(max_length=20)] = None,
        case_id: Annotated[str | None, Query(max_length=500)] = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> s.RoutingList:
        """Stored routing decisions, filtered."""
        from judge.routing import load_decisions

        found = load_decisions(
            store, card=card, decision=decision, case_id=case_id, limit=limit, offset=offset
        )
        return s.RoutingList(decisions=found)

    @router.get("/review/queue", response_model=s.QueueResponse, tags=["review"])
    def review_queue(
        caller: Caller,
        store: Db,
        config: Config,
        mine: bool = True,
        limit: Limit = 50,
        offset: Offset = 0,
    ) -> s.QueueResponse:
        """Items awaiting a label in priority order (``mine``: those this key may label now)."""
        from judge.review import blinded, queue

        who = caller.name if mine else None
        found = queue(store, reviewer=who, role=caller.role, limit=limit, offset=offset)
        shown = [blinded(i) if (i.blind or config.blind) else i for i in found]
        return s.QueueResponse(items=shown)

    @router.get(
        "/review/items/{item_id}", response_model=s.ItemView, tags=["review"], responses=_with(404)
    )
    def review_item(item_id: str, caller: Caller, store: Db, config: Config) -> s.ItemView:
        """What a reviewer sees for an item (blind items hide verdicts and model names)."""
        from judge.review import item_view

        return item_view(store, item_id, force_blind=config.blind, viewer_role=caller.role)

    @router.post(
        "/review/items/{item_id}/labels",
        response_model=s.LabelResponse,
        status_code=201,
        tags=["review"],
        responses=_with(404, 409),
    )
    def label_item(
        item_id: str, body: s.LabelRequest, caller: Caller, store: Db
    ) -> s.LabelResponse:
        """Label an item (canonical frame) as this key's reviewer; returns the item's state."""
        from judge.review import add_label
        from judge.routing import refresh_audit

        item = add_label(
            store, item_id, reviewer=caller.name, role=caller.role, label=body.label, note=body.note
        )
        audit = None
        if item.audit and item.card_digest and item.status == "done":
            audit = refresh_audit(store, item.card_digest)
        return s.LabelResponse(item=item, audit=audit)

    @router.get("/review/labels", response_model=s.LabelList, tags=["review"])
    def review_labels(
        caller: Caller,
        store: Db,
        item_id: Annotated[str | None, Query(max_length=200)] = None,
        limit: Limit = 1000,
        offset: Offset = 0,
    ) -> s.LabelList:
        """Labels given (with reviewer, role, note and time)."""
        from judge.review import labels

        return s.LabelList(labels=labels(store, item_id=item_id, limit=limit, offset=offset))

    @router.get("/review/agreement", response_model=s.AgreementResponse, tags=["review"])
    def review_agreement(caller: Caller, store: Db) -> s.AgreementResponse:
        """Raw agreement and Cohen's kappa per reviewer pair."""
        from judge.review import agreement

        return s.AgreementResponse(pairs=agreement(store))

    @router.get(
        "/review/gold",
        tags=["review"],
        response_class=Response,
        responses={
            200: {
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                "description": "Gold JSONL, one record per line",
            },
            **_with(409),
        },
    )
    def review_gold(
        caller: Caller,
        store: Db,
        license: Annotated[str, Query(min_length=1, max_length=200)] = "unspecified",
    ) -> Response:
        """Finished review items as gold JSONL with lineage (``calibration.gold`` format)."""
        from calibration.gold import dumps_record
        from judge.review import gold_records

        records, skipped = gold_records(store, license=license)
        if not records:
            raise ConflictError("no finished review items with a gold label to export yet")
        text = "".join(dumps_record(r) + "\n" for r in records)
        return Response(
            text,
            media_type="application/x-ndjson",
            headers={"X-Gold-Records": str(len(records)), "X-Gold-Skipped": str(len(skipped))},
        )

    return router


def create_app(config: ServiceConfig) -> FastAPI:
    """The service: API, review pages, job workers, access control, all from ``config``."""
    from judge.api.pages import page_router

    jobs = JobManager(config.db, _settings(config), workers=config.job_workers)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with Store(config.db):
            pass  # migrate once before any request or worker
        jobs.start()
        yield
        jobs.stop()

    app = FastAPI(
        title="judge",
        version=_version(),
        summary="Calibrated LLM-as-judge verdicts, routing and human review.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.jobs = jobs
    _install_error_handlers(app)
    app.include_router(_api_router())
    app.include_router(page_router())

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(caller: Caller) -> JSONResponse:
        """The OpenAPI schema (authenticated like every route)."""
        return JSONResponse(app.openapi())

    app.add_middleware(
        AccessMiddleware,
        db=config.db,
        limiter=RateLimiter(config.rate_per_s, config.burst),
        max_body_bytes=config.max_body_bytes,
    )
    return app


def _version() -> str:
    import judge

    return str(judge.__version__)
