"""Calibration cards used for routing, and the routing decision of each (case, judge, card)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from judge.digests import full_digest, now_iso
from judge.store.backend import Backend, page, where_equal
from judge.types import CardRecord, RoutingDecision

_CARD_COLUMNS = (
    "digest, model, rubric_id, rubric_version, rubric_digest, selector_version, kind, "
    "created_at, expires_at, added_at, stale, stale_reason, stale_at"
)


def _card(row: Mapping[str, Any]) -> CardRecord:
    return CardRecord.model_validate({**row, "stale": bool(row["stale"])})


def _decision(row: Mapping[str, Any]) -> RoutingDecision:
    data = dict(row)
    data.pop("n_judgments", None)
    data["judgment_ids"] = json.loads(data["judgment_ids"] or "[]")
    data["audit"] = bool(data["audit"])
    return RoutingDecision.model_validate(data)


class RoutingTables:
    """Cards and routing decisions."""

    backend: Backend

    # --- cards -----------------------------------------------------------------------------
    def save_card(self, record: CardRecord, yaml_text: str) -> bool:
        """Keep a card by digest; False when it was stored already (its stale flag is kept)."""
        row = {
            k: (v.isoformat() if isinstance(v, datetime) else v)
            for k, v in record.model_dump().items()
        }
        row["stale"] = int(record.stale)
        row["yaml"] = yaml_text
        return self.backend.insert("cards", row, conflict="ignore") == 1

    def card_yaml(self, digest: str) -> str | None:
        """The YAML of the stored card with this digest (``sha256:`` optional), or None."""
        row = self.backend.query_one(
            "SELECT yaml FROM cards WHERE digest = ?", [full_digest(digest)]
        )
        return None if row is None else str(row["yaml"])

    def card_record(self, digest: str) -> CardRecord | None:
        """The stored card's summary (no YAML), or None."""
        row = self.backend.query_one(
            f"SELECT {_CARD_COLUMNS} FROM cards WHERE digest = ?", [full_digest(digest)]
        )
        return None if row is None else _card(row)

    def card_records(self) -> list[CardRecord]:
        """Every stored card's summary, newest first."""
        rows = self.backend.query(f"SELECT {_CARD_COLUMNS} FROM cards ORDER BY added_at DESC")
        return [_card(r) for r in rows]

    def mark_card_stale(self, digest: str, reason: str) -> None:
        """Flag a card stale (audits pushed a band's error bound above its alpha)."""
        self.backend.execute(
            "UPDATE cards SET stale = 1, stale_reason = ?, stale_at = ? WHERE digest = ?",
            [reason, now_iso(), digest],
        )

    # --- decisions -------------------------------------------------------------------------
    def save_decisions(self, decisions: Iterable[RoutingDecision]) -> int:
        """Upsert decisions by id (re-routing with the same card replaces them); the count."""
        rows = [
            {
                **d.model_dump(exclude={"judgment_ids", "routed_at", "audit"}),
                "judgment_ids": json.dumps(d.judgment_ids),
                "n_judgments": len(d.judgment_ids),
                "audit": int(d.audit),
                "routed_at": d.routed_at.isoformat(),
            }
            for d in decisions
        ]
        self.backend.insert_many("routing_decisions", rows, conflict="update", key=("id",))
        return len(rows)

    def decisions(
        self,
        *,
        card: str | None = None,
        decision: str | None = None,
        case_id: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RoutingDecision]:
        """Stored routing decisions, filtered, in routing order."""
        digest = None if card is None else full_digest(card)
        where, args = where_equal({"card_digest": digest, "decision": decision, "case_id": case_id})
        sql = f"SELECT * FROM routing_decisions{where} ORDER BY routed_at, {self.backend.rowid}"
        if limit is not None:
            sql += page(limit, offset)
        return [_decision(r) for r in self.backend.query(sql, args)]

    def decision_judgment_ids(self, routing_id: str | None) -> list[str]:
        """Ids of the judgments a routing decision pooled (empty for an unknown decision)."""
        if routing_id is None:
            return []
        row = self.backend.query_one(
            "SELECT judgment_ids FROM routing_decisions WHERE id = ?", [routing_id]
        )
        return list(json.loads(row["judgment_ids"] or "[]")) if row else []

    def audit_rows(self, digest: str) -> list[tuple[str, str | None, str, str]]:
        """(band, slice, automatic label, human label) of a card's finished audit items."""
        sql = (
            "SELECT r.band, r.slice, r.label AS auto_label, q.final_label "
            "FROM review_items q JOIN routing_decisions r ON r.id = q.routing_id "
            "WHERE q.card_digest = ? AND q.audit = 1 AND q.status = 'done' "
            "AND q.final_label IS NOT NULL AND r.band IS NOT NULL"
        )
        return [
            (r["band"], r["slice"], r["auto_label"], r["final_label"])
            for r in self.backend.query(sql, [digest])
        ]
