"""Whole tables, for moving a store between databases (``judge db copy``) and checking the move.

Rows are read in insertion order and written in that order, so a copy keeps the order in which
judgments, decisions and labels were made. A table's digest does not depend on row order (it
hashes the sorted digests of its rows), so the same rows give the same digest on SQLite and on
PostgreSQL whatever order each database returns them in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from judge.digests import Hasher, canonical_json, sha256_raw
from judge.store.backend import Backend, check_name, quote

#: Rows per INSERT batch of a copy.
COPY_BATCH = 1000


def row_digest(row: dict[str, Any]) -> bytes:
    """The SHA-256 of one row (canonical JSON: sorted keys; numbers and text as stored)."""
    return sha256_raw(canonical_json(row))


class TransferTables:
    """Every table of a store, row by row."""

    backend: Backend

    def table_names(self) -> list[str]:
        """The store's tables (not its migration record), sorted."""
        return sorted(t for t in self.backend.tables() if t != "_migrations")

    def table_rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of ``table`` in insertion order (streamed)."""
        return self.backend.iter_query(
            f"SELECT * FROM {quote(table)} ORDER BY {self.backend.rowid}"
        )

    def table_count(self, table: str) -> int:
        """Rows in ``table``."""
        return int(self.backend.scalar(f"SELECT count(*) AS n FROM {quote(check_name(table))}"))

    def table_digest(self, table: str) -> tuple[int, str]:
        """(rows, digest) of ``table``: SHA-256 over its rows' sorted SHA-256 digests."""
        digests = sorted(row_digest(row) for row in self.table_rows(table))
        whole = Hasher()
        for d in digests:
            whole.update(d)
        return len(digests), whole.digest()

    def add_rows(self, table: str, rows: Iterable[dict[str, Any]]) -> int:
        """Insert rows as they are (ids included) in batches; how many. Call inside one
        ``backend.transaction()`` to make a copy all or nothing."""
        total = 0
        it = iter(rows)
        while batch := list(islice(it, COPY_BATCH)):
            self.backend.insert_many(table, batch)
            total += len(batch)
        return total
