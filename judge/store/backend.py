"""What a store backend provides: a place to run the store's SQL, whatever the database.

The store's queries are written once, in the SQL both SQLite and PostgreSQL speak: ``?``
placeholders, ``INSERT ... ON CONFLICT``, ``excluded.``. A backend runs them (translating the
placeholders where it must), owns connections and transactions, creates the schema of the
numbered migrations, and names the few things that differ (``for_update``, ``rowid``). A second
database is a second backend, not a second copy of every query.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any, Literal

from judge.digests import now_iso
from judge.errors import ConflictError, JudgeError, UnavailableError
from judge.store.migrations import MIGRATIONS, Schema

Row = dict[str, Any]
Args = Sequence[Any]
Conflict = Literal["error", "ignore", "update"]

#: Table and column names come from code; this guards the few places that take one as input.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class StoreError(JudgeError):
    """The store cannot be opened or used (names the location and what to do)."""


class DuplicateError(StoreError, ConflictError):
    """A row with this key exists already (a unique constraint refused the write)."""


class StoreUnavailable(UnavailableError):
    """The database cannot be reached now (refused, dropped mid-batch, timed out). What was
    written before is kept: run the same command again once the database is back. (Not a
    StoreError: it stops a whole batch, see judge.errors.)"""


def check_name(name: str) -> str:
    """``name`` if it is a plain SQL identifier; StoreError otherwise."""
    if not _NAME.match(name):
        raise StoreError(f"not a table or column name: {name!r}")
    return name


def quote(name: str) -> str:
    """A double-quoted identifier (``order`` is a keyword in both dialects)."""
    return '"' + check_name(name) + '"'


@lru_cache(maxsize=64)
def insert_sql(
    table: str, columns: tuple[str, ...], conflict: Conflict = "error", key: tuple[str, ...] = ()
) -> str:
    """``INSERT INTO table (columns) VALUES (?, ...)`` with an ``ON CONFLICT`` clause:
    ``ignore`` keeps the row already there, ``update`` replaces its other columns."""
    names = ", ".join(quote(c) for c in columns)
    marks = ", ".join("?" for _ in columns)
    sql = f"INSERT INTO {quote(table)} ({names}) VALUES ({marks})"
    if conflict == "ignore":
        sql += " ON CONFLICT DO NOTHING"
    elif conflict == "update":
        target = ", ".join(quote(c) for c in key)
        updates = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in columns if c not in key)
        sql += f" ON CONFLICT ({target}) DO UPDATE SET {updates}"
    return sql


def where_equal(filters: Mapping[str, Any], prefix: str = "") -> tuple[str, list[Any]]:
    """A `` WHERE a = ? AND b = ?`` clause for the filters whose value is not None (empty when
    none is set) and its arguments. Column names come from code, never from input."""
    given = {column: value for column, value in filters.items() if value is not None}
    clause = " AND ".join(f"{prefix}{quote(column)} = ?" for column in given)
    return (f" WHERE {clause}" if clause else ""), list(given.values())


def page(limit: int, offset: int = 0) -> str:
    """The `` LIMIT n OFFSET m`` clause of one page of rows."""
    return f" LIMIT {int(limit)} OFFSET {int(offset)}"


class Backend(ABC):
    """A database the store runs its SQL on."""

    #: "sqlite" or "postgresql".
    name: str
    #: Where the store is, safe to print (a PostgreSQL password is masked).
    location: str
    #: `` FOR UPDATE`` where the database locks selected rows, else empty (SQLite locks the
    #: whole database for a write transaction instead).
    for_update: str = ""
    #: ``for_update`` that skips rows another transaction holds (a queue's claim), else empty.
    skip_locked: str = ""
    #: An expression that orders rows as they were inserted.
    rowid: str = "rowid"

    @abstractmethod
    def query(self, sql: str, args: Args = ()) -> list[Row]:
        """Rows of a SELECT, as dicts."""

    def query_one(self, sql: str, args: Args = ()) -> Row | None:
        """The first row of a SELECT, or None."""
        rows = self.query(sql, args)
        return rows[0] if rows else None

    def scalar(self, sql: str, args: Args = ()) -> Any:
        """The first column of the first row (None when there is no row)."""
        row = self.query_one(sql, args)
        return None if row is None else next(iter(row.values()))

    @abstractmethod
    def execute(self, sql: str, args: Args = ()) -> int:
        """Run one statement (committed at once outside a transaction); the rows it changed.

        A unique-constraint violation raises DuplicateError."""

    @abstractmethod
    def executemany(self, sql: str, rows: Sequence[Args]) -> None:
        """Run one statement for each argument list, in one transaction."""

    @abstractmethod
    def transaction(self, *, lock: bool = False) -> AbstractContextManager[None]:
        """Statements inside the block commit together or not at all. ``lock``: take the
        write lock at the start (SQLite ``BEGIN IMMEDIATE``), so that what the block reads
        cannot change before it writes. A database with row locks (PostgreSQL) does not lock
        everything: there the block locks the rows it reads with ``for_update``, which
        every such block does. Nested blocks join the outer one."""

    def insert(
        self,
        table: str,
        row: Mapping[str, Any],
        *,
        conflict: Conflict = "error",
        key: Sequence[str] = (),
    ) -> int:
        """Insert one row (see :func:`insert_sql`); the number of rows written (0 or 1)."""
        sql = insert_sql(table, tuple(row), conflict, tuple(key))
        return self.execute(sql, list(row.values()))

    def insert_many(
        self,
        table: str,
        rows: Sequence[Mapping[str, Any]],
        *,
        conflict: Conflict = "error",
        key: Sequence[str] = (),
    ) -> None:
        """Insert rows that share their columns, in one transaction."""
        if not rows:
            return
        sql = insert_sql(table, tuple(rows[0]), conflict, tuple(key))
        self.executemany(sql, [list(r.values()) for r in rows])

    def applied_migrations(self) -> set[str]:
        """Names of the migrations that have run here (empty for a new database)."""
        if "_migrations" not in self.tables():
            return set()
        return {r["name"] for r in self.query("SELECT name FROM _migrations")}

    def pending_migrations(self) -> list[str]:
        """Names of the registered migrations that have not run here."""
        done = self.applied_migrations()
        return [name for name, _ in MIGRATIONS if name not in done]

    @abstractmethod
    def migrate(self) -> list[str]:
        """Run the pending migrations (once, even when several processes open a new store at
        the same moment); return the names run now."""

    def run_pending(self, schema: Schema) -> list[str]:
        """Run the migrations that have not run here through ``schema``, recording each in
        ``_migrations`` (which must exist); the names run now. :meth:`migrate` calls it holding
        the lock that makes it run once."""
        done = self.applied_migrations()
        applied: list[str] = []
        for name, fn in MIGRATIONS:
            if name in done:
                continue
            fn(schema)
            self.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", [name, now_iso()]
            )
            applied.append(name)
        return applied

    @abstractmethod
    def tables(self) -> list[str]:
        """The names of the tables in the store."""

    @abstractmethod
    def integrity(self) -> str:
        """ "ok", or what the database's own consistency check reports."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection(s)."""

    def sync_identities(self) -> None:  # noqa: B027 - a hook most backends need not fill
        """After rows were copied in with their integer ids: make new rows get larger ids
        (nothing to do where the database picks max(id) + 1 by itself)."""

    @abstractmethod
    def iter_query(self, sql: str, args: Args = ()) -> Iterator[Row]:
        """Rows of a SELECT, streamed (for reads too large to hold at once)."""
