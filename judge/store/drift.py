"""Drift checks: each re-judging of an anchor set, kept so that control charts run over them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge.store.backend import Backend, where_equal


class DriftTables:
    """Drift checks."""

    backend: Backend

    def save_drift_check(self, row: Mapping[str, Any]) -> bool:
        """Keep one check (``id``, ``card_digest``, ``anchor_digest``, ..., ``json``); False
        when a check with this id is stored already."""
        return self.backend.insert("drift_checks", row, conflict="ignore") > 0

    def drift_checks(
        self, card_digest: str, anchor_digest: str | None = None
    ) -> list[dict[str, Any]]:
        """A card's checks (on one anchor set, when given), oldest first."""
        where, args = where_equal({"card_digest": card_digest, "anchor_digest": anchor_digest})
        sql = f"SELECT * FROM drift_checks{where} ORDER BY checked_at, id"
        return [dict(r) for r in self.backend.query(sql, args)]
