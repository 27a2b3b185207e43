"""What every route depends on: the caller, the configuration, a store per request, the
shared response declarations of the OpenAPI schema, and the table a resource's routes are
declared in (:class:`Route`, :func:`resource`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Security
from fastapi.security import APIKeyHeader, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.api import schemas as s
from judge.api.config import ServiceConfig
from judge.service import Principal
from judge.store import Store

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


def job_owner(caller: Principal) -> str | None:
    """Whose jobs the caller may see: its own key's, or every job (None) for an admin."""
    return None if caller.role == "admin" else caller.key_id


Db = Annotated[Store, Depends(store_dep)]


Config = Annotated[ServiceConfig, Depends(config_of)]


Limit = Annotated[int, Query(ge=1, le=1000)]


Offset = Annotated[int, Query(ge=0, le=10_000_000)]


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorResponse, "description": text}
    for code, text in (
        (400, "Malformed request (body not decodable)"),
        (401, "Missing or invalid API key"),
        (403, "This key's role may not call this route (see x-roles)"),
        (413, "Request body too large"),
        (422, "Invalid request"),
        (429, "Rate limited (see Retry-After)"),
    )
}


def with_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """Response declarations for these error statuses."""
    text = {404: "Not found", 409: "Conflict with the current state"}
    return {c: {"model": s.ErrorResponse, "description": text[c]} for c in codes}


@dataclass(frozen=True)
class Route:
    """One route of a resource, as declared data: what ``APIRouter.add_api_route`` is given."""

    method: str
    path: str
    endpoint: Callable[..., Any]
    #: The response body's model (None: none declared, as for a plain ``Response``).
    model: Any = None
    #: The success status (None: FastAPI's 200).
    status: int | None = None
    #: Error statuses the route answers besides the shared ones (:data:`ERRORS`).
    errors: tuple[int, ...] = ()
    #: Other responses to declare (a second success status, another media type).
    responses: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    response_class: Any = None


def resource(tag: str, *routes: Route, prefix: str = "") -> APIRouter:
    """The router of one resource's routes, declared in order."""
    r = APIRouter(prefix=prefix, tags=[tag])
    for route in routes:
        options: dict[str, Any] = {
            "response_model": route.model,
            "status_code": route.status,
            "response_class": route.response_class,
        }
        responses = with_errors(*route.errors)
        responses.update({code: dict(body) for code, body in route.responses.items()})
        r.add_api_route(
            route.path,
            route.endpoint,
            methods=[route.method],
            responses=responses or None,
            **{k: v for k, v in options.items() if v is not None},
        )
    return r
