"""``/v1/cards``: calibration cards used for routing, and their live audit bounds."""

from __future__ import annotations

from fastapi import APIRouter

import calibration.card
import judge.routing
from judge.api import schemas as s
from judge.api.deps import Caller, Db, Route, resource
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


def _missing(digest: str) -> NotFoundError:
    return NotFoundError(f"no stored card {digest!r} (upload it with POST /v1/cards)")


def _record(store: Db, digest: str) -> CardRecord:
    record = store.card_record(digest)
    if record is None:
        raise _missing(digest)
    return record


def stored_card(store: Db, digest: str) -> calibration.card.Card:
    """The stored card with this digest (404 when there is none)."""
    card = judge.routing.get_card(store, digest)
    if card is None:
        raise _missing(digest)
    return card


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
    return judge.routing.audit_cards(store, _record(store, digest).digest)[0]


def router() -> APIRouter:
    """The card routes."""
    return resource(
        "cards",
        Route("GET", "/cards", cards, list[s.CardInfo]),
        Route("POST", "/cards", upload_card, s.CardInfo, status=201, errors=(409,)),
        Route("GET", "/cards/{digest}", card, s.CardDetail, errors=(404,)),
        Route("GET", "/cards/{digest}/audit", card_audit, s.AuditStatus, errors=(404,)),
    )
