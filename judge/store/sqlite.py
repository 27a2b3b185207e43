"""The SQLite backend: one file, WAL, several processes may write it (the embedded default).

Plain sqlite3 for the store's reads and writes. sqlite-utils (which imports pandas and numpy
when they are installed: 0.6 s of every command's start) is loaded only to migrate or when a
test asks for ``db``; the connection is set up as ``sqlite_utils.Database(path)`` sets up its
own. Statements outside a transaction commit at once (autocommit mode); a transaction is an
explicit ``BEGIN`` (``BEGIN IMMEDIATE`` when it must hold the write lock from the start).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.store.backend import Args, Backend, DuplicateError, Row, StoreError
from judge.store.migrations import Schema, Table

if TYPE_CHECKING:
    import sqlite_utils

#: How long a writer waits for another process's lock before failing.
BUSY_TIMEOUT_MS = 30_000


def _enable_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch the database to WAL. When several processes open the same new file at once,
    SQLite refuses the journal-mode change with "database is locked" at once, without waiting
    for the busy timeout; so retry until ``wait_s`` has passed
    (tests/judge/judging/test_crash.py)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=wal")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> Row:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}


class _Schema(Schema):
    """Migrations' table and index creation through sqlite-utils (as every store so far)."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db

    def make_table(self, table: Table) -> None:
        self.db.table(table.name).create(
            dict(table.columns),
            pk=table.pk,
            not_null=set(table.not_null) or None,
            defaults=dict(table.defaults),
        )

    def create_index(self, table: str, columns: Sequence[str], *, unique: bool = False) -> None:
        self.db.table(table).create_index(list(columns), unique=unique)

    def add_column(self, table: str, name: str, kind: type) -> None:
        self.db.table(table).add_column(name, kind)


class SQLiteBackend(Backend):
    """A judge store in one SQLite file."""

    name = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        try:
            # check_same_thread=False: the API opens a store per request in a FastAPI
            # dependency, whose setup and the endpoint may run on different threadpool
            # threads; one request uses its connection sequentially, and SQLite itself is
            # built thread-safe. isolation_level=None: autocommit, transactions explicit.
            self.conn = sqlite3.connect(
                str(self.path), check_same_thread=False, isolation_level=None
            )
        except sqlite3.Error as err:
            raise StoreError(
                f"{self.path}: cannot open the SQLite store ({err}); check that the folder "
                "exists and is writable"
            ) from err
        self._db: sqlite_utils.Database | None = None
        self._depth = 0
        self._lock = threading.RLock()
        try:
            self.conn.execute("PRAGMA recursive_triggers=on")
            # Several processes may write one file: wait for the lock rather than fail.
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _enable_wal(self.conn)
            self.conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as err:
            self.conn.close()
            raise StoreError(
                f"{self.path}: not a judge store ({err}); give the path of a store made by "
                "`judge run`, or a new file name"
            ) from err

    # --- sqlite-utils, for migrations (and tests) -------------------------------------------
    @property
    def db(self) -> sqlite_utils.Database:
        """The same connection through sqlite-utils."""
        if self._db is None:
            import sqlite_utils

            self._db = sqlite_utils.Database(self.conn)
        return self._db

    # --- statements -------------------------------------------------------------------------
    def query(self, sql: str, args: Args = ()) -> list[Row]:
        with self._lock:
            cursor = self.conn.execute(sql, list(args))
            cursor.row_factory = _dict_row
            rows: list[Row] = cursor.fetchall()
        return rows

    def iter_query(self, sql: str, args: Args = ()) -> Iterator[Row]:
        cursor = self.conn.execute(sql, list(args))
        cursor.row_factory = _dict_row
        try:
            while rows := cursor.fetchmany(500):
                yield from rows
        finally:
            cursor.close()

    def execute(self, sql: str, args: Args = ()) -> int:
        with self._lock:
            try:
                return self.conn.execute(sql, list(args)).rowcount
            except sqlite3.IntegrityError as err:
                if "UNIQUE" in str(err) or "PRIMARY KEY" in str(err):
                    raise DuplicateError(str(err)) from err
                raise

    def executemany(self, sql: str, rows: Sequence[Args]) -> None:
        with self.transaction():
            try:
                self.conn.executemany(sql, [list(r) for r in rows])
            except sqlite3.IntegrityError as err:
                raise DuplicateError(str(err)) from err

    @contextmanager
    def transaction(self, *, lock: bool = False) -> Iterator[None]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE" if lock else "BEGIN")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self.conn.execute("COMMIT")

    # --- schema -----------------------------------------------------------------------------
    def tables(self) -> list[str]:
        rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [r["name"] for r in rows]

    def migrate(self) -> list[str]:
        """Apply the pending migrations under SQLite's write lock (``BEGIN IMMEDIATE`` waits
        for the busy timeout), re-reading what ran once the lock is held: two processes that
        open a new file at once each see the whole schema, and each migration runs once."""
        if not self.pending_migrations():
            return []
        with self.transaction(lock=True):
            if "_migrations" not in self.tables():
                self.db.table("_migrations").create({"name": str, "applied_at": str}, pk="name")
            return self.run_pending(_Schema(self.db))

    def integrity(self) -> str:
        return str(self.scalar("PRAGMA integrity_check"))

    def close(self) -> None:
        self.conn.close()
