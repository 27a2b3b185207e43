"""The FastAPI application: JSON API under ``/v1``, review pages under ``/review``.

``create_app(ServiceConfig(...))`` builds an app with its own state (store location, rate
limiter, job workers, the signing secret its forms share with every replica through the store,
``judge.service.signing``); nothing lives at module level. Behind a proxy, forwarded headers are
read from ``trusted_proxies`` only (``judge.api.proxy``). ``/healthz`` (the process answers) and
``/readyz`` (and its store too) are open, for load balancers, as is ``/favicon.ico``. Every
other route sits behind ``judge.api.security.AccessMiddleware`` (API key or page session, the
route's roles from ``judge.api.roles``, rate limit, body limit, the Origin of page forms) and
``SecurityHeaders``; an app with a route whose roles are not declared is not built. The
OpenAPI schema is served at ``/openapi.json`` to authenticated callers, declares both key
schemes and each operation's roles (``x-roles``), and read in Swagger UI at ``/docs``
(``judge.api.docs``: the installed swagger-ui-bundle-v2 package's own files, no CDN). The
pages' CSS and JS are static files (``judge/api/static``, at ``/static``). Errors are JSON
``{"error": {"code", "message"}}`` with a matching status (``judge.api.errors``). The routes
live in ``judge.api.routes``, one module per resource.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

import judge.service
from judge.api.config import MB, ServiceConfig
from judge.api.deps import Caller
from judge.api.docs import docs_router
from judge.api.errors import error_response, install_error_handlers
from judge.api.failure_pages import failure_page_router
from judge.api.icon import favicon
from judge.api.pages import STATIC, error_page, inline_style_hashes, page_router
from judge.api.proxy import ProxyHeaders, parse_networks
from judge.api.roles import annotate_schema, check_declared
from judge.api.routes import api_router
from judge.api.security import AccessMiddleware, RateLimiter, SecurityHeaders, page_csp
from judge.errors import Failure
from judge.store import Store, open_store
from judge.version import __version__

__all__ = ["MB", "ServiceConfig", "create_app", "error_response"]


def create_app(config: ServiceConfig) -> FastAPI:
    """The service: API, review pages, job workers, access control, all from ``config``."""
    jobs = judge.service.JobManager(
        config.db,
        config.settings(),
        workers=config.job_workers,
        lease_s=config.job_lease_s,
        poll_s=config.job_poll_s,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        open_store(config.db).close()  # migrate once before any request or worker
        jobs.start()
        yield
        jobs.stop()

    app = FastAPI(
        title="judge",
        version=__version__,
        summary="Calibrated LLM-as-judge verdicts, routing and human review.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.jobs = jobs
    app.state.signing = judge.service.SharedSecret(config.db)
    install_error_handlers(app)
    app.include_router(api_router())
    app.include_router(page_router())
    app.include_router(failure_page_router())
    app.include_router(docs_router(app))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _open_routes(app, config)
    _serve_schema(app)
    check_declared(app.router.routes)
    _add_middleware(app, config)
    return app


def _open_routes(app: FastAPI, config: ServiceConfig) -> None:
    """The routes open to anyone (load balancers, the browser's icon), outside the schema."""

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> JSONResponse:
        """Liveness, for load balancers: the process answers (no key, no database)."""
        return JSONResponse({"status": "ok", "version": __version__})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        """Readiness: the store answers too (503 while it does not). No key."""
        try:
            await run_in_threadpool(_ping, config.db)
        except Failure as err:
            return error_response(503, "unavailable", f"the store does not answer: {err}")
        return JSONResponse({"status": "ready", "version": __version__})

    @app.get("/favicon.ico", include_in_schema=False)
    def icon() -> Response:
        """The page's icon (no key)."""
        return Response(
            favicon(),
            media_type="image/vnd.microsoft.icon",
            headers={"cache-control": "public, max-age=86400"},
        )


def _serve_schema(app: FastAPI) -> None:
    """The OpenAPI schema at ``/openapi.json`` (authenticated like every route), each operation
    with its roles (``x-roles``)."""

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(caller: Caller) -> JSONResponse:
        """The OpenAPI schema (authenticated like every route)."""
        return JSONResponse(app.openapi())

    plain_openapi = app.openapi

    def openapi_with_roles() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = annotate_schema(plain_openapi())
        return app.openapi_schema

    app.openapi = openapi_with_roles  # type: ignore[method-assign]


def _add_middleware(app: FastAPI, config: ServiceConfig) -> None:
    """Access control, security headers and forwarded headers, outermost last."""
    app.add_middleware(
        AccessMiddleware,
        db=config.db,
        limiter=RateLimiter(config.rate_per_s, config.burst, db=config.db),
        max_body_bytes=config.max_body_bytes,
        trusted_origins=frozenset(config.page_origins()),
        page_error=error_page,
    )
    app.add_middleware(SecurityHeaders, csp=page_csp(inline_style_hashes()))
    # Last added, outermost: every other layer sees the request as the browser made it.
    app.add_middleware(ProxyHeaders, trusted=parse_networks(config.trusted_proxies))


def _ping(db: str | Path) -> None:
    with Store(db) as store:
        store.ping()
