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

from judge.store.access import AccessTables
from judge.store.backend import Backend, DuplicateError, StoreError
from judge.store.jobs import JobTables
from judge.store.judgments import CACHED_STATUSES, JudgmentTables
from judge.store.plans import PlanTables
from judge.store.review import LabelRule, LabelWrite, ReviewTables
from judge.store.routing import RoutingTables
from judge.store.sqlite import SQLiteBackend

if TYPE_CHECKING:
    import sqlite_utils

__all__ = [
    "CACHED_STATUSES",
    "DEFAULT_DB",
    "DB_ENV",
    "DuplicateError",
    "LabelRule",
    "LabelWrite",
    "Store",
    "StoreError",
    "default_location",
    "store_exists",
]

#: The store a command opens when given none: a SQLite file in the working directory.
DEFAULT_DB = "judge.db"
#: The environment variable that names the store (a path or a postgresql:// URL).
DB_ENV = "JUDGE_DB"


def default_location() -> str:
    """``$JUDGE_DB`` when set, else ``judge.db``."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


def store_exists(location: str | Path) -> bool:
    """Whether a store is there to open (a SQLite file exists; a database URL is assumed)."""
    return "://" in str(location) or Path(location).exists()


def connect(location: str | Path) -> Backend:
    """The backend for a store location: a SQLite file path (the default)."""
    return SQLiteBackend(location)


class Store(JudgmentTables, RoutingTables, ReviewTables, AccessTables, JobTables, PlanTables):
    """A judge store, opened (and migrated to the current schema) at ``location``."""

    def __init__(self, location: str | Path = DEFAULT_DB) -> None:
        self.backend = connect(location)
        #: Where the store is (a path, or a URL with its password masked).
        self.location = self.backend.location
        try:
            if self.backend.pending_migrations():
                self.backend.migrate()
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
        """"ok", or what the database's consistency check reports."""
        return self.backend.integrity()

    def close(self) -> None:
        """Close the connection(s)."""
        self.backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
