"""Failure clusters: each cluster's record (judge.failures), kept with its lineage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge.store.backend import Backend, where_equal


class FailureTables:
    """Failure clusters."""

    backend: Backend

    def save_failure_clusters(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Write clusters (``cluster_id``, ``status``, ``definition``, ``updated_at``,
        ``json``), replacing the stored row of the same id, all together."""
        with self.backend.transaction():
            for row in rows:
                self.backend.insert("failure_clusters", row, conflict="update", key=["cluster_id"])

    def failure_clusters(self, status: str | None = None) -> list[dict[str, Any]]:
        """The stored clusters (with ``status`` only, when given), by id."""
        where, args = where_equal({"status": status})
        sql = f"SELECT * FROM failure_clusters{where} ORDER BY cluster_id"
        return [dict(r) for r in self.backend.query(sql, args)]
