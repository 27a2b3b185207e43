"""Label plans: which runs of a run set people were asked to label, drawn at random with
recorded inclusion probabilities (``calibration.ppi.LabelPlan``), so that a report can check
later that the labels it is given are the planned sample."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge.store.backend import Backend, where_equal


class PlanTables:
    """Label plans."""

    backend: Backend

    def save_label_plan(self, row: Mapping[str, Any]) -> bool:
        """Keep a plan row (``id``, ``runs_digest``, ``design``, ..., ``json``); False when a
        plan with this id (the same draw) is stored already."""
        return self.backend.insert("label_plans", row, conflict="ignore") > 0

    def label_plans(self, *, runs_digest: str | None = None) -> list[dict[str, Any]]:
        """Stored plans, oldest first (optionally only those drawn from one set of runs)."""
        where, args = where_equal({"runs_digest": runs_digest})
        sql = f"SELECT * FROM label_plans{where} ORDER BY created_at, id"
        return [dict(r) for r in self.backend.query(sql, args)]

    def label_plan(self, plan_id: str) -> dict[str, Any] | None:
        """The stored plan with this id, or None."""
        row = self.backend.query_one("SELECT * FROM label_plans WHERE id = ?", [plan_id])
        return None if row is None else dict(row)
