"""The store: the only code that writes SQL.

One :class:`Store` holds a judge's cases, judgments and provider calls, its calibration cards and
routing decisions, the review queue and its labels, API keys, sessions and jobs. Its methods are
grouped by area (``judgments``, ``routing``, ``review``, ``access``, ``jobs``; one module each),
all written once in the SQL both backends speak and run by a :class:`~judge.store.backend.Backend`:
SQLite (a file path, the embedded default) or PostgreSQL (a ``postgresql://`` URL). The same
numbered migrations (``judge.store.migrations``) make the schema on both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from judge.base import Closing
from judge.defaults import DB_ENV, DB_MIGRATE_ENV, DEFAULT_DB
from judge.store.access import AccessTables
from judge.store.backend import Backend, DuplicateError, StoreError, StoreUnavailable
from judge.store.coordination import CoordinationTables
from judge.store.drift import DriftTables
from judge.store.exports import ExportTables
from judge.store.failures import FailureTables
from judge.store.jobs import JobTables
from judge.store.judgments import JudgmentTables
from judge.store.migrations import MIGRATIONS
from judge.store.plans import PlanTables
from judge.store.postgres import PostgresBackend, is_url
from judge.store.replicas import ReplicaTables
from judge.store.review import LabelWrite, ReviewTables
from judge.store.routing import RoutingTables
from judge.store.sqlite import SQLiteBackend
from judge.store.tables import TransferTables
from judge.urls import mask_url

if TYPE_CHECKING:
    import sqlite_utils

__all__ = [
    "DEFAULT_DB",
    "DB_ENV",
    "DuplicateError",
    "LabelWrite",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "forget_schema_checks",
    "mask_url",
    "open_store",
    "store_exists",
]


def default_location() -> str:
    """``$JUDGE_DB`` when set, else ``judge.db``."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


def store_exists(location: str | Path) -> bool:
    """Whether a store is there to open (a SQLite file exists; a database URL is assumed)."""
    return "://" in str(location) or Path(location).exists()


def connect(location: str | Path) -> Backend:
    """The backend for a store location: a ``postgresql://`` URL, else a SQLite file path."""
    if is_url(location):
        return PostgresBackend(str(location))
    if "://" in str(location):
        scheme = str(location).split("://", 1)[0]
        raise StoreError(
            f"{scheme}://...: unsupported database URL; give a SQLite file path or a "
            "postgresql://USER:PASSWORD@HOST:5432/DATABASE URL"
        )
    return SQLiteBackend(location)


def _auto_migrate() -> bool:
    return os.environ.get(DB_MIGRATE_ENV, "auto").strip().lower() not in ("off", "0", "no")


#: Databases (name, location, process) found current by this process: the API opens a store
#: per request, and a shared database's schema is checked once, not on every request.
_current: set[tuple[str, str, int]] = set()


def forget_schema_checks() -> None:
    """Check every shared database's schema again at its next opening (after it was changed
    behind this process's back: tests, or an operator dropping tables)."""
    _current.clear()


def check_schema(backend: Backend, *, migrate: bool) -> list[str]:
    """Make sure ``backend`` holds a judge store this code can use; migrate it when allowed.
    Returns the migrations run now. Refuses a database with other tables and no migration
    record (not a judge store), a newer judge's schema, and (``migrate`` False) an older one."""
    seen = (backend.name, backend.location, os.getpid())
    if seen in _current:
        return []
    tables = backend.tables()
    where = backend.location
    if tables and "_migrations" not in tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(
            f"{where}: not a judge store (it holds other tables: {shown}); give the location "
            "of a store made by judge, or a new file or an empty database"
        )
    applied = backend.applied_migrations() if tables else set()
    known = [name for name, _ in MIGRATIONS]
    newer = sorted(applied - set(known))
    if newer:
        raise StoreError(
            f"{where}: the store was migrated by a newer judge ({', '.join(newer)}); "
            "upgrade judge to use it"
        )
    pending = [name for name in known if name not in applied]
    ran: list[str] = []
    if pending:
        if not migrate and tables:
            raise StoreError(
                f"{where}: the store has an older schema ({len(pending)} migration(s) to run: "
                f"{', '.join(pending)}); run `judge db migrate --db {where}` (automatic "
                f"migration is off: {DB_MIGRATE_ENV}=off)"
            )
        ran = backend.migrate()
    if backend.name != "sqlite":
        _current.add(seen)
    return ran


class Store(
    JudgmentTables,
    RoutingTables,
    ReviewTables,
    AccessTables,
    JobTables,
    CoordinationTables,
    TransferTables,
    PlanTables,
    ExportTables,
    ReplicaTables,
    DriftTables,
    FailureTables,
    Closing,
):
    """A judge store, opened (and migrated to the current schema) at ``location``: a SQLite
    file path or a ``postgresql://`` URL. ``migrate``: run pending migrations (default: unless
    ``JUDGE_DB_MIGRATE=off``); a new, empty store is always set up."""

    def __init__(self, location: str | Path = DEFAULT_DB, *, migrate: bool | None = None) -> None:
        self.backend = connect(location)
        #: Where the store is (a path, or a URL with its password masked).
        self.location = self.backend.location
        #: Where to open it again from another process (secrets included: never print it).
        self.address = self.backend.address
        #: The migrations this opening ran.
        self.migrated: list[str] = []
        try:
            self.migrated = check_schema(
                self.backend, migrate=_auto_migrate() if migrate is None else migrate
            )
        except BaseException:
            self.backend.close()
            raise

    @property
    def path(self) -> Path:
        """The SQLite file of this store."""
        if not isinstance(self.backend, SQLiteBackend):
            raise StoreError(f"{self.location} is not a SQLite file")
        return self.backend.path

    @property
    def db(self) -> sqlite_utils.Database:
        """The SQLite connection through sqlite-utils (tests inspect tables with it)."""
        if not isinstance(self.backend, SQLiteBackend):
            raise StoreError(f"{self.location} is not a SQLite file")
        return self.backend.db

    def integrity(self) -> str:
        """ "ok", or what the database's consistency check reports."""
        return self.backend.integrity()

    def close(self) -> None:
        """Close the connection(s)."""
        self.backend.close()


def open_store(location: str | Path | None = None) -> Store:
    """Open (and migrate) the store at ``location``: a SQLite file path or a database URL;
    default ``$JUDGE_DB`` or ``judge.db``. Use it as a context manager to close it."""
    return Store(location if location is not None else default_location())
