"""The export ledger: which verdicts were sent to which destination, with the digest of what was
sent. An export reads it to send only what is new or changed, and writes it batch by batch as the
destination confirms, so an interrupted export resumes where it stopped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judge.digests import now_iso
from judge.store.backend import Backend


class ExportTables:
    """The export ledger (``exports``)."""

    backend: Backend

    def exported(self, destination: str) -> dict[str, str]:
        """verdict key -> digest of what was last sent to ``destination``."""
        rows = self.backend.query(
            "SELECT verdict_key, digest FROM exports WHERE destination = ?", [destination]
        )
        return {r["verdict_key"]: r["digest"] for r in rows}

    def record_exports(self, destination: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Record that ``destination`` now holds these verdicts (``verdict_key``, ``digest``,
        ``case_id``, ``rubric_id``, ``model`` each), in one transaction; replaces what was
        recorded for the same keys. Returns how many."""
        when = now_iso()
        table = [
            {
                "destination": destination,
                "verdict_key": r["verdict_key"],
                "digest": r["digest"],
                "case_id": r.get("case_id"),
                "rubric_id": r.get("rubric_id"),
                "model": r.get("model"),
                "exported_at": when,
            }
            for r in rows
        ]
        with self.backend.transaction():
            self.backend.insert_many(
                "exports", table, conflict="update", key=("destination", "verdict_key")
            )
        return len(table)

    def export_destinations(self) -> list[dict[str, Any]]:
        """Every destination with how many verdicts it holds and the last export, by name."""
        return self.backend.query(
            "SELECT destination, count(*) AS verdicts, max(exported_at) AS last_export "
            "FROM exports GROUP BY destination ORDER BY destination"
        )
