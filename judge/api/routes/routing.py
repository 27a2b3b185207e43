"""``/v1/routing``: apply a stored card to stored judgments, and read the decisions."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

from fastapi import APIRouter, Query

import judge.review
import judge.service
from judge.api import schemas as s
from judge.api.deps import Caller, Db, Limit, Offset, Route, resource
from judge.api.routes.cards import stored_card
from judge.errors import ConflictError


def route(body: s.RouteRequest, caller: Caller, store: Db) -> s.RouteResponse:
    """Apply a stored card to the stored judgments (or one job's): decide, queue review."""
    card = stored_card(store, body.card)
    judgments = None
    if body.job_id is not None:
        judgments = judge.service.job_judgments(store, body.job_id)
        if not judgments:
            raise ConflictError(f"job {body.job_id} has no judgments yet")
    run = judge.review.route(
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
    found = store.decisions(
        card=card, decision=decision, case_id=case_id, limit=limit, offset=offset
    )
    return s.RoutingList(decisions=found)


def router() -> APIRouter:
    """The routing routes."""
    return resource(
        "routing",
        Route("POST", "/routing", route, s.RouteResponse, errors=(404, 409)),
        Route("GET", "/routing", routing, s.RoutingList),
    )
