"""``/v1/cards``: calibration cards used for routing, and their live audit bounds."""

from __future__ import annotations

from fastapi import APIRouter

import calibration.card
import judge
import judge.routing
from judge.api import schemas as s
from judge.api.deps import Caller, Db, with_errors
from judge.errors import NotFoundError
from judge.types import CardRecord


def card_info(record: CardRecord) -> s.CardInfo:
    """The API view of a stored card."""
    return s.CardInfo(
        digest=record.digest,
        model=record.model,
        rubric_id=record.rubric_id,
        rubric_version=record.rubric_version,
        kind=record.kind,
        created_at=record.created_at,
        expires_at=record.expires_at,
        stale=record.stale,
        stale_reason=record.stale_reason,
    )


def _record(store: Db, digest: str) -> CardRecord:
    record = store.card_record(digest)
    if record is None:
        raise NotFoundError(f"no stored card {digest!r} (upload it with POST /v1/cards)")
    return record


def cards(caller: Caller, store: Db) -> list[s.CardInfo]:
    """Stored calibration cards, newest first."""
    return [card_info(r) for r in store.card_records()]


def upload_card(body: s.CardUpload, caller: Caller, store: Db) -> s.CardInfo:
    """Store a card (validated, digest checked against its content)."""
    card = calibration.card.parse_card(body.yaml, source="the uploaded card")
    digest = judge.routing.save_card(store, card)
    return card_info(_record(store, digest))


def card(digest: str, caller: Caller, store: Db) -> s.CardDetail:
    """A stored card with its YAML."""
    record = _record(store, digest)
    return s.CardDetail(**card_info(record).model_dump(), yaml=store.card_yaml(record.digest) or "")


def card_audit(digest: str, caller: Caller, store: Db) -> s.AuditStatus:
    """The card's live band bounds from audit labels; stale when one exceeds alpha."""
    return judge.audit_cards(store, _record(store, digest).digest)[0]


def router() -> APIRouter:
    """The card routes."""
    r = APIRouter(tags=["cards"])
    r.add_api_route("/cards", cards, methods=["GET"], response_model=list[s.CardInfo])
    r.add_api_route(
        "/cards",
        upload_card,
        methods=["POST"],
        response_model=s.CardInfo,
        status_code=201,
        responses=with_errors(409),
    )
    r.add_api_route(
        "/cards/{digest}",
        card,
        methods=["GET"],
        response_model=s.CardDetail,
        responses=with_errors(404),
    )
    r.add_api_route(
        "/cards/{digest}/audit",
        card_audit,
        methods=["GET"],
        response_model=s.AuditStatus,
        responses=with_errors(404),
    )
    return r
