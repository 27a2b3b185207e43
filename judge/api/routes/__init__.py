"""The JSON API under ``/v1``: one module per resource, each with a ``router()``."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api.deps import ERRORS
from judge.api.routes import access, cards, failures, jobs, judging, keys, review, routing


def api_router() -> APIRouter:
    """Every ``/v1`` route."""
    r = APIRouter(prefix="/v1", responses=ERRORS)
    for module in (access, keys, judging, jobs, cards, routing, review, failures):
        r.include_router(module.router())
    return r
