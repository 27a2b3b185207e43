"""The PostgreSQL backend: one database shared by several processes and machines.

psycopg 3 with a connection pool (psycopg_pool), one pool per database URL and process, shared
by every ``Store`` opened on that URL (the API opens one per request). Both are imported inside
functions: ``judge --help`` never loads them, and the SQLite default never needs them (the
``postgres`` extra installs them).

What differs from SQLite, all of it here:

- placeholders: the store's ``?`` become psycopg's ``%s`` (a literal ``%`` is escaped);
- types: str is ``TEXT COLLATE "C"`` (byte order, as SQLite compares text, so every ``ORDER BY``
  gives the same rows in the same order on both), int ``BIGINT``, float ``DOUBLE PRECISION``; a
  table whose primary key is one int ``id`` gets an identity column;
- insertion order: every table gets a hidden ``_rowid`` identity column (what SQLite's rowid
  is); ``SELECT *`` callers never see it, the store orders by it through ``Backend.rowid``;
- locks: ``transaction(lock=True)`` is a plain transaction; the block locks the rows it reads
  (``for_update``), a queue skips rows others hold (``skip_locked``); migrations run under a
  transaction-level advisory lock, so replicas starting together migrate once;
- a transaction pins one pooled connection to its thread until it ends;
- errors: a unique violation is DuplicateError; a refused or dropped connection is
  StoreUnavailable, naming the URL with its password masked.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from judge.defaults import DB_ENV
from judge.store.backend import (
    Args,
    Backend,
    DuplicateError,
    Row,
    StoreError,
    StoreUnavailable,
    quote,
)
from judge.store.migrations import Schema, Table, index_name

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

#: URL schemes this backend opens.
SCHEMES = ("postgresql", "postgres")
#: Most connections one process keeps to one database (JUDGE_DB_POOL_SIZE overrides).
POOL_SIZE = 20
#: Seconds to wait for a connection (a new one, or a free one from the pool).
CONNECT_TIMEOUT_S = 10.0
#: Key of the advisory lock migrations hold ("judg").
MIGRATION_LOCK = 0x6A756467
#: The hidden insertion-order column every table gets.
ROWID = "_rowid"

_TYPES: dict[type, str] = {str: 'TEXT COLLATE "C"', int: "BIGINT", float: "DOUBLE PRECISION"}

#: Seconds during which a database found unreachable is not tried again: a batch whose
#: database went away stops at once instead of waiting a connection timeout per statement.
DOWN_S = 5.0

_pools: dict[tuple[str, int], ConnectionPool[Any]] = {}
#: (url, pid) -> until when (monotonic) the database is taken as down.
_down: dict[tuple[str, int], float] = {}
_pools_lock = threading.Lock()


def is_url(location: object) -> bool:
    """Whether ``location`` is a PostgreSQL URL."""
    return isinstance(location, str) and location.split("://", 1)[0].lower() in SCHEMES


def mask_url(url: str) -> str:
    """The URL with its password (if any) replaced by ``***``, safe to print and log."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable database URL>"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as err:
        raise StoreError(f"{name}={raw!r} is not a number") from err


@lru_cache(maxsize=512)
def to_format(sql: str) -> str:
    """The store's SQL with ``?`` placeholders turned into psycopg's ``%s`` (and a literal
    ``%`` into ``%%``); quoted strings and identifiers are left as written."""
    out: list[str] = []
    quote_char: str | None = None
    for ch in sql:
        if quote_char is not None:
            if ch == quote_char:
                quote_char = None
            out.append("%%" if ch == "%" else ch)
        elif ch in ("'", '"'):
            quote_char = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


def _args(args: Args) -> list[Any]:
    # PostgreSQL will not put a boolean into a BIGINT column: store flags as 0/1, as SQLite does.
    return [int(a) if isinstance(a, bool) else a for a in args]


def _row_maker(cursor: Any) -> Any:
    """A psycopg row factory: rows as dicts, without the hidden ``_rowid``."""
    names = [c.name for c in cursor.description or ()]
    keep = [i for i, name in enumerate(names) if name != ROWID]
    if len(keep) == len(names):
        return lambda values: dict(zip(names, values, strict=True))
    kept = [names[i] for i in keep]
    return lambda values: {name: values[i] for name, i in zip(kept, keep, strict=True)}


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


class _Schema(Schema):
    """The migrations' table and index descriptions as PostgreSQL DDL."""

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend

    def make_table(self, table: Table) -> None:
        name, columns, keys = table.name, table.columns, table.keys
        identity = keys == ("id",) and columns.get("id") is int
        parts = []
        for column, kind in columns.items():
            if identity and column == "id":
                parts.append('"id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY')
                continue
            part = f"{quote(column)} {_TYPES[kind]}"
            if column in table.not_null:
                part += " NOT NULL"
            if column in table.defaults:
                part += f" DEFAULT {_literal(table.defaults[column])}"
            parts.append(part)
        parts.append(f"{quote(ROWID)} BIGINT GENERATED ALWAYS AS IDENTITY")
        if not identity:
            parts.append(f"PRIMARY KEY ({', '.join(quote(k) for k in keys)})")
        self.backend.execute(f"CREATE TABLE {quote(name)} ({', '.join(parts)})")

    def create_index(self, table: str, columns: Sequence[str], *, unique: bool = False) -> None:
        self.backend.execute(
            f"CREATE {'UNIQUE ' if unique else ''}INDEX {quote(index_name(table, columns))} "
            f"ON {quote(table)} ({', '.join(quote(c) for c in columns)})"
        )

    def add_column(self, table: str, name: str, kind: type) -> None:
        self.backend.execute(f"ALTER TABLE {quote(table)} ADD COLUMN {quote(name)} {_TYPES[kind]}")


def _check_url(url: str, shown: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url)
    except Exception as err:  # noqa: BLE001 - psycopg raises ProgrammingError, libpq others
        raise StoreError(
            f"{shown}: not a valid PostgreSQL URL ({err}); write it as "
            "postgresql://USER:PASSWORD@HOST:5432/DATABASE"
        ) from err
    if not info.get("dbname"):
        raise StoreError(
            f"{shown}: the URL names no database; write it as "
            "postgresql://USER:PASSWORD@HOST:5432/DATABASE"
        )


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _pool(url: str, shown: str) -> ConnectionPool[Any]:
    """This process's pool for ``url``, made on first use after one direct connection (so a
    wrong URL or a refused connection fails at once with libpq's reason, not a pool timeout)."""
    key = (url, os.getpid())
    with _pools_lock:
        pool = _pools.get(key)
        if pool is not None:
            return pool
        import psycopg
        from psycopg_pool import ConnectionPool

        _check_url(url, shown)
        timeout = _env_number("JUDGE_DB_TIMEOUT_S", CONNECT_TIMEOUT_S)
        try:
            psycopg.connect(url, connect_timeout=max(1, int(timeout))).close()
        except psycopg.Error as err:
            reason = _first_line(err)
            hint = (
                "create it first (createdb, or CREATE DATABASE as a superuser)"
                if "does not exist" in reason
                else "check that the server is running and the URL's host, port, user, password "
                f"and database (given with --db or {DB_ENV})"
            )
            raise StoreUnavailable(
                f"{shown}: cannot connect to PostgreSQL ({reason}); {hint}"
            ) from err

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.autocommit = True  # a statement outside a transaction commits at once

        pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, int(_env_number("JUDGE_DB_POOL_SIZE", POOL_SIZE))),
            timeout=timeout,
            kwargs={"connect_timeout": max(1, int(timeout))},
            configure=configure,
            check=ConnectionPool.check_connection,
            name=f"judge-{shown}",
            open=False,
        )
        pool.open(wait=False)
        _pools[key] = pool
        return pool


def close_pool(url: str) -> None:
    """Close this process's pool for ``url`` (before dropping its database, or at exit)."""
    with _pools_lock:
        pool = _pools.pop((url, os.getpid()), None)
        _down.pop((url, os.getpid()), None)
    if pool is not None:
        pool.close(timeout=1.0)


@atexit.register
def _close_pools() -> None:
    for url, pid in list(_pools):
        if pid == os.getpid():
            close_pool(url)


class PostgresBackend(Backend):
    """A judge store in a PostgreSQL database."""

    name = "postgresql"
    for_update = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    rowid = quote(ROWID)

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = mask_url(url)
        self.pool = _pool(url, self.location)
        self._local = threading.local()

    # --- connections and errors -------------------------------------------------------------
    @contextmanager
    def _errors(self) -> Iterator[None]:
        """psycopg's errors as the store's: unique violations, lost connections, the rest."""
        import psycopg
        from psycopg_pool import PoolTimeout

        key = (self.url, os.getpid())
        if _down.get(key, 0.0) > time.monotonic():
            raise StoreUnavailable(self._lost("it did not answer a moment ago"))
        try:
            yield
        except psycopg.errors.UniqueViolation as err:
            raise DuplicateError(f"{self.location}: {_first_line(err)}") from err
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as err:
            _down[key] = time.monotonic() + DOWN_S
            raise StoreUnavailable(self._lost(_first_line(err))) from err
        except psycopg.Error as err:
            raise StoreError(f"{self.location}: {_first_line(err)}") from err

    def _lost(self, reason: str) -> str:
        return (
            f"{self.location}: the database cannot be reached ({reason}); what was finished is "
            "stored: run the same command again once it is back"
        )

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection this thread's transaction pinned, else one from the pool."""
        pinned = getattr(self._local, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self._errors(), self.pool.connection() as conn:
            yield conn

    # --- statements -------------------------------------------------------------------------
    def query(self, sql: str, args: Args = ()) -> list[Row]:
        with self._connection() as conn, self._errors():
            cursor = conn.cursor(row_factory=_row_maker)
            cursor.execute(to_format(sql), _args(args))
            rows: list[Row] = cursor.fetchall()
        return rows

    def iter_query(self, sql: str, args: Args = ()) -> Iterator[Row]:
        # A named (server-side) cursor, fetched 500 rows at a time, lives in a transaction:
        # this thread's, or one of its own on a connection of its own (never pinned, so that
        # statements run between two rows are not held in it).
        pinned = getattr(self._local, "conn", None)
        if pinned is not None:
            yield from self._stream(pinned, sql, args)
            return
        with self._errors(), self.pool.connection() as conn, conn.transaction():
            yield from self._stream(conn, sql, args)

    def _stream(self, conn: psycopg.Connection[Any], sql: str, args: Args) -> Iterator[Row]:
        with self._errors():
            cursor = conn.cursor(
                name=f"judge_iter_{id(self):x}_{threading.get_ident():x}", row_factory=_row_maker
            )
            cursor.itersize = 500
            try:
                cursor.execute(to_format(sql), _args(args))
                yield from cursor
            finally:
                cursor.close()

    def execute(self, sql: str, args: Args = ()) -> int:
        with self._connection() as conn, self._errors():
            cursor = conn.execute(to_format(sql), _args(args))
            return cursor.rowcount

    def executemany(self, sql: str, rows: Sequence[Args]) -> None:
        with self.transaction(), self._connection() as conn, self._errors():
            conn.cursor().executemany(to_format(sql), [_args(r) for r in rows])

    @contextmanager
    def transaction(self, *, lock: bool = False) -> Iterator[None]:
        if getattr(self._local, "conn", None) is not None:
            yield  # nested: joins the outer transaction
            return
        with self._errors(), self.pool.connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    yield
            finally:
                self._local.conn = None

    # --- schema -----------------------------------------------------------------------------
    def tables(self) -> list[str]:
        rows = self.query(
            "SELECT table_name AS name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' "
            "ORDER BY table_name"
        )
        return [r["name"] for r in rows]

    def migrate(self) -> list[str]:
        """Apply the pending migrations in one transaction under an advisory lock: replicas
        that start together wait for the first, then find nothing left to do. PostgreSQL's
        DDL is transactional, so a failed migration leaves the schema as it was."""
        if not self.pending_migrations():
            return []
        with self.transaction():
            self.execute("SELECT pg_advisory_xact_lock(?)", [MIGRATION_LOCK])
            self.execute(
                'CREATE TABLE IF NOT EXISTS _migrations (name TEXT COLLATE "C" PRIMARY KEY, '
                "applied_at TEXT)"
            )
            return self.run_pending(_Schema(self))

    def sync_identities(self) -> None:
        rows = self.query(
            "SELECT table_name AS t FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND column_name = 'id' AND is_identity = 'YES'"
        )
        for row in rows:
            table = quote(row["t"])
            self.execute(
                f"SELECT setval(pg_get_serial_sequence(?, 'id'), "
                f"coalesce((SELECT max(id) FROM {table}), 0) + 1, false)",
                [table],
            )

    def integrity(self) -> str:
        """ "ok" when every index is valid (PostgreSQL keeps its own pages consistent; a
        deeper check is the amcheck extension's, run by an administrator)."""
        rows = self.query(
            "SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND NOT i.indisvalid"
        )
        if rows:
            return "invalid indexes: " + ", ".join(r["name"] for r in rows)
        return "ok"

    def close(self) -> None:
        """Nothing to release: the pool is the process's, shared by every store on this URL
        (``close_pool`` closes it)."""
