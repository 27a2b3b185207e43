"""``/v1/review``: the queue, an item's view, labels, agreement and the gold export."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

import calibration.gold
import judge.review
import judge.routing
from judge.api import schemas as s
from judge.api.deps import Caller, Config, Db, Limit, Offset, Route, resource
from judge.errors import ConflictError


def review_queue(
    caller: Caller,
    store: Db,
    config: Config,
    mine: bool = True,
    limit: Limit = 50,
    offset: Offset = 0,
) -> s.QueueResponse:
    """Items awaiting a label in priority order (``mine``: those this key may label now).
    Blind items, and every item of a case whose blind item awaits this key's label, are shown
    blind (``judge.review.blindness``)."""
    who = caller.name if mine else None
    found = judge.review.queue(store, reviewer=who, role=caller.role, limit=limit, offset=offset)
    viewer = _viewer(caller, store, config)
    return s.QueueResponse(items=[viewer.shown(i) for i in found])


def _viewer(caller: Caller, store: Db, config: Config) -> judge.review.ReviewerQueue:
    return judge.review.reviewer_queue(
        store, reviewer=caller.name, role=caller.role, force_blind=config.blind
    )


def review_item(item_id: str, caller: Caller, store: Db, config: Config) -> s.ItemView:
    """What a reviewer sees for an item (blind items hide verdicts and model names; so does
    every item of a case whose blind item still awaits this key's label)."""
    return judge.review.item_view(
        store,
        item_id,
        force_blind=config.blind,
        viewer_role=caller.role,
        viewer=_viewer(caller, store, config),
    )


def label_item(
    item_id: str, body: s.LabelRequest, caller: Caller, store: Db, config: Config
) -> s.LabelResponse:
    """Label an item (canonical frame) as this key's reviewer; returns the item's state (blind
    items as blind: no judge label, score, model or audit state, even after the label; so is
    an item whose case still has a blind item awaiting this key's label)."""
    item = judge.review.add_label(
        store,
        item_id,
        reviewer=caller.name,
        role=caller.role,
        label=body.label,
        note=body.note,
        step=body.step,
    )
    viewer = _viewer(caller, store, config)
    if viewer.blind(item):
        return s.LabelResponse(item=judge.review.blinded(item), audit=None)
    audit = None
    if item.audit and item.card_digest and item.status == "done":
        audit = judge.routing.audit_cards(store, item.card_digest)[0]
    return s.LabelResponse(item=item, audit=audit)


def review_labels(
    caller: Caller,
    store: Db,
    item_id: Annotated[str | None, Query(max_length=200)] = None,
    limit: Limit = 1000,
    offset: Offset = 0,
) -> s.LabelList:
    """Labels given (with reviewer, role, note and time)."""
    return s.LabelList(labels=store.review_labels(item_id=item_id, limit=limit, offset=offset))


def review_agreement(caller: Caller, store: Db) -> s.AgreementResponse:
    """Raw agreement and Cohen's kappa per reviewer pair; critical-step agreement on
    first-bad-decision items (people with people, each judge with people)."""
    return s.AgreementResponse(
        pairs=judge.review.agreement(store), steps=judge.review.step_agreement(store)
    )


def review_gold(
    caller: Caller,
    store: Db,
    license: Annotated[str, Query(min_length=1, max_length=200)] = "unspecified",
) -> Response:
    """Finished review items as gold JSONL with lineage (``calibration.gold`` format)."""
    records, skipped = judge.review.gold_records(store, license=license)
    if not records:
        raise ConflictError("no finished review items with a gold label to export yet")
    text = "".join(calibration.gold.dumps_record(r) + "\n" for r in records)
    return Response(
        text,
        media_type="application/x-ndjson",
        headers={"X-Gold-Records": str(len(records)), "X-Gold-Skipped": str(len(skipped))},
    )


def router() -> APIRouter:
    """The review routes."""
    ndjson = {
        200: {
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            "description": "Gold JSONL, one record per line",
        }
    }
    return resource(
        "review",
        Route("GET", "/queue", review_queue, s.QueueResponse),
        Route("GET", "/items/{item_id}", review_item, s.ItemView, errors=(404,)),
        Route(
            "POST",
            "/items/{item_id}/labels",
            label_item,
            s.LabelResponse,
            status=201,
            errors=(404, 409),
        ),
        Route("GET", "/labels", review_labels, s.LabelList),
        Route("GET", "/agreement", review_agreement, s.AgreementResponse),
        Route(
            "GET", "/gold", review_gold, errors=(409,), responses=ndjson, response_class=Response
        ),
        prefix="/review",
    )
