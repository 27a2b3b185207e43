"""``/docs``: Swagger UI for the API, and ``/static``: the review pages' CSS and JS.

Swagger UI's files come from the installed ``swagger-ui-bundle-v2`` package (Apache-2.0, the
Swagger UI 5 distribution; OpenAPI 3.1 as FastAPI writes it), served by this app: nothing is
loaded from a CDN. The page's start-up script is a static file too (``static/docs.js``): the
pages allow no inline script. ``/docs`` sits behind the same gate as the review pages (an API
key, or the session of a reviewer who logged in at ``/login``); the schema it reads,
``/docs/openapi.json``, is the one ``/openapi.json`` serves to key holders.
"""

from __future__ import annotations

import importlib.util
import mimetypes
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse, JSONResponse, Response

from judge.errors import NotFoundError

#: The Swagger UI files /docs serves (the rest of the distribution is not needed).
SWAGGER_FILES = frozenset({"swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png"})

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>judge API · Swagger UI</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<script src="/docs/assets/swagger-ui-bundle.js" defer></script>
<script src="/static/docs.js" defer></script>
</head>
<body>
<div id="swagger-ui" data-url="/docs/openapi.json"></div>
</body>
</html>
"""


def swagger_dir() -> Path | None:
    """Where the installed Swagger UI distribution is (None without the package)."""
    if importlib.util.find_spec("swagger_ui_bundle") is None:
        return None
    vendor = Path(str(resources.files("swagger_ui_bundle"))) / "vendor"
    found = sorted(vendor.glob("swagger-ui-*"))
    return found[-1] if found else None


def docs_router(app: FastAPI) -> APIRouter:
    """``/docs`` (Swagger UI), its assets and the schema it reads; not in the schema itself."""
    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    def docs() -> Response:
        if swagger_dir() is None:
            raise NotFoundError(
                "Swagger UI is not installed: pip install swagger-ui-bundle-v2 "
                "(the schema is at /openapi.json)"
            )
        return HTMLResponse(_PAGE)

    @router.get("/docs/openapi.json")
    def schema() -> JSONResponse:
        return JSONResponse(app.openapi())

    @router.get("/docs/assets/{name}")
    def asset(name: str) -> Response:
        where = swagger_dir()
        if where is None or name not in SWAGGER_FILES:
            raise NotFoundError(f"no file {name!r} under /docs/assets")
        body = (where / name).read_bytes()
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        headers: dict[str, Any] = {"cache-control": "private, max-age=86400"}
        return Response(body, media_type=kind, headers=headers)

    return router
