"""Who may call what: one table for every route of the service, JSON API and pages alike.

Least privilege by role (``judge.types.ROLES``):

- ``admin``: keys, cards, routing, gold export, every job (and what a client may do);
- ``client``: submits cases (``POST /v1/judge``, ``/v1/jobs``) and reads its own jobs and their
  judgments; reads cards, to name one when judging;
- ``reviewer`` and ``adjudicator``: the review queue, items, labels and the review page only;
  never a routing decision, a score or the gold export, so that blind review stays blind.

The access middleware (``judge.api.security``) looks every request's route up here after
authenticating it and refuses a role the route does not list with 403, before the route runs.
A route missing from the table is refused to everyone, ``create_app`` refuses to build an app
with one (:func:`check_declared`), and ``tests/judge/api/test_api_roles.py`` walks the OpenAPI
schema and the pages, route by route and role by role. The OpenAPI schema carries each
operation's roles (``x-roles``). Jobs are also owned: a client sees only the jobs its key
created (``404`` for another's, so ids do not leak); that check is in the job routes
(``judge.service.jobs.get_job``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.routing import Match

from judge.types import ROLES, Role

ADMIN: frozenset[Role] = frozenset({"admin"})
#: Callers who submit cases and read their own jobs; admins may do the same.
CLIENTS: frozenset[Role] = frozenset({"admin", "client"})
#: Keys of people who label items.
REVIEWERS: frozenset[Role] = frozenset({"reviewer", "adjudicator"})
EVERYONE: frozenset[Role] = frozenset(ROLES)

#: "METHOD /path/{param}" -> the roles that may call it. Nothing else may.
ROUTE_ROLES: Mapping[str, frozenset[Role]] = {
    "GET /openapi.json": EVERYONE,
    # Swagger UI (judge.api.docs): the schema every key may read, rendered
    "GET /docs": EVERYONE,
    "GET /docs/openapi.json": EVERYONE,
    "GET /docs/assets/{name}": EVERYONE,
    "GET /v1/whoami": EVERYONE,
    # keys
    "GET /v1/keys": ADMIN,
    "POST /v1/keys": ADMIN,
    "DELETE /v1/keys/{name_or_id}": ADMIN,
    # judging and jobs (a client's own jobs; an admin's are every job)
    "POST /v1/judge": CLIENTS,
    "POST /v1/jobs": CLIENTS,
    "GET /v1/jobs": CLIENTS,
    "GET /v1/jobs/{job_id}": CLIENTS,
    "GET /v1/jobs/{job_id}/results": CLIENTS,
    "POST /v1/jobs/{job_id}/resume": CLIENTS,
    # cards: a client reads them to name one in POST /v1/judge
    "GET /v1/cards": CLIENTS,
    "POST /v1/cards": ADMIN,
    "GET /v1/cards/{digest}": CLIENTS,
    "GET /v1/cards/{digest}/audit": ADMIN,
    # routing decisions hold the judge's label and score: never for reviewers
    "POST /v1/routing": ADMIN,
    "GET /v1/routing": ADMIN,
    # failure clusters and dossiers: case ids and priorities, for the team that fixes them
    "GET /v1/failures": ADMIN,
    "GET /v1/failures/{cluster_id}": ADMIN,
    # their pages (an admin key in the X-API-Key header: sessions are for reviewers' keys)
    "GET /failures": ADMIN,
    "GET /failures/{cluster_id}": ADMIN,
    # review
    "GET /v1/review/queue": REVIEWERS,
    "GET /v1/review/items/{item_id}": REVIEWERS,
    "POST /v1/review/items/{item_id}/labels": REVIEWERS,
    # every reviewer's labels: another reviewer's label would bias an independent second one
    "GET /v1/review/labels": ADMIN,
    "GET /v1/review/agreement": ADMIN | REVIEWERS,
    "GET /v1/review/gold": ADMIN,
    # the review page (a session cookie is only given to reviewer and adjudicator keys)
    "GET /": REVIEWERS,
    "GET /review": REVIEWERS,
    "GET /review/next": REVIEWERS,
    "GET /review/items/{item_id}": REVIEWERS,
    "POST /review/items/{item_id}/label": REVIEWERS,
    "POST /logout": EVERYONE,
}

#: Routes open without a key: the login form (how a browser gets a session), the health checks
#: of load balancers (``/healthz``: the process answers; ``/readyz``: its store too) and the
#: page's icon.
OPEN_ROUTES = frozenset(
    {"GET /login", "POST /login", "GET /healthz", "GET /readyz", "GET /favicon.ico"}
)

#: The roles that may use the review page (and so may log in to it).
PAGE_ROLES: frozenset[Role] = ROUTE_ROLES["GET /review"]


def route_name(method: str, path: str) -> str:
    """The table's key of a route: ``"GET /v1/jobs/{job_id}"``."""
    return f"{method.upper()} {path}"


def allowed(route: str) -> frozenset[Role]:
    """The roles that may call ``route`` (none for a route the table does not declare)."""
    return ROUTE_ROLES.get(route, frozenset())


def _endpoints(routes: Sequence[Any]) -> Iterator[Any]:
    # FastAPI keeps included routers lazily; their routes, with full paths, come from here.
    for context in iter_route_contexts(routes):
        if context.methods and context.path:  # a mount (static files) has no methods
            yield context


def match_route(routes: Sequence[Any], scope: Mapping[str, Any]) -> str | None:
    """The table key of the route a request reaches, or None when it reaches none (the app
    answers 404 or 405) or reaches a mount (static files)."""
    for context in _endpoints(routes):
        match, _ = context.matches(dict(scope))
        if match == Match.FULL:
            # HEAD is served by the GET route, with the same roles.
            method = "GET" if scope["method"] == "HEAD" else scope["method"]
            return route_name(method, context.path)
    return None


def declared_routes(routes: Sequence[Any]) -> list[str]:
    """Every (method, path) the app serves, as table keys (HEAD aside: it follows GET)."""
    return [
        route_name(m, c.path) for c in _endpoints(routes) for m in sorted(c.methods) if m != "HEAD"
    ]


def undeclared(routes: Sequence[Any]) -> list[str]:
    """Routes the app serves that the table does not declare."""
    return [r for r in declared_routes(routes) if r not in ROUTE_ROLES and r not in OPEN_ROUTES]


def check_declared(routes: Sequence[Any]) -> None:
    """Refuse to serve a route whose roles nobody declared."""
    missing = undeclared(routes)
    if missing:
        raise RuntimeError(
            f"routes without declared roles: {', '.join(missing)}; add them to ROUTE_ROLES in "
            "judge/api/roles.py"
        )


def annotate_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Add each operation's roles to the OpenAPI schema (``x-roles`` and its description)."""
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            roles = sorted(allowed(route_name(method, path)))
            operation["x-roles"] = roles
            note = f"Roles: {', '.join(roles) or 'none'}."
            text = operation.get("description")
            operation["description"] = f"{text}\n\n{note}" if text else note
    return schema
