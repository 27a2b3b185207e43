"""Moving a store: migrate it in place (``judge db migrate``), copy it to another database
(``judge db copy``: SQLite to PostgreSQL and back), and prove the copy complete.

A copy goes into a new or empty store, in one transaction (a failed copy leaves the target as
empty as it was, so it can simply be run again), then every table is counted and digested on
both sides: the copy is reported only when each table has the same rows on both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from judge.store import Store, StoreError
from judge.urls import mask_url


@dataclass(frozen=True)
class MigrationReport:
    """What ``migrate_store`` did: the store, the migrations run now, and all that ran there."""

    location: str
    applied: list[str]
    schema: list[str]


@dataclass(frozen=True)
class TableCopy:
    """One table of a copy: rows and digest on each side."""

    table: str
    source_rows: int
    target_rows: int
    source_digest: str
    target_digest: str

    @property
    def same(self) -> bool:
        """Whether the target holds exactly the source's rows."""
        return (self.source_rows, self.source_digest) == (self.target_rows, self.target_digest)


@dataclass(frozen=True)
class CopyReport:
    """A verified copy: where from, where to, and each table's counts and digests."""

    source: str
    target: str
    tables: list[TableCopy] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Rows copied, all tables together."""
        return sum(t.target_rows for t in self.tables)


def shown(location: str | Path) -> str:
    """A store location safe to print (a URL's password masked)."""
    return mask_url(str(location))


def migrate_store(location: str | Path) -> MigrationReport:
    """Bring the store at ``location`` to this judge's schema (whatever JUDGE_DB_MIGRATE says);
    a new file or an empty database becomes an empty store."""
    with Store(location, migrate=True) as store:
        return MigrationReport(
            store.location, store.migrated, sorted(store.backend.applied_migrations())
        )


def copy_store(source: str | Path, target: str | Path) -> CopyReport:
    """Copy every row of the store at ``source`` into the new or empty store at ``target``
    (both migrated first), then verify each table's row count and digest on both sides.

    StoreError when the target already holds rows or the copy does not verify. Stop the
    services writing to the source first: rows written during the copy may be left out."""
    if str(source) == str(target):
        raise StoreError(f"{shown(source)}: source and target are the same store")
    with Store(source, migrate=True) as src, Store(target, migrate=True) as dst:
        tables = src.table_names()
        if set(tables) != set(dst.table_names()):
            raise StoreError(
                f"{dst.location}: its tables differ from {src.location}'s "
                f"({sorted(set(tables) ^ set(dst.table_names()))}); copy into a new store"
            )
        full = [t for t in tables if dst.table_count(t)]
        if full:
            raise StoreError(
                f"{dst.location} already holds rows ({', '.join(full)}); copy into a new file "
                "or an empty database (a copy never merges into an existing store)"
            )
        with dst.backend.transaction():
            for table in tables:
                dst.add_rows(table, src.table_rows(table))
        dst.backend.sync_identities()
        report = CopyReport(src.location, dst.location)
        for table in tables:
            n_src, d_src = src.table_digest(table)
            n_dst, d_dst = dst.table_digest(table)
            report.tables.append(TableCopy(table, n_src, n_dst, d_src, d_dst))
    bad = [t.table for t in report.tables if not t.same]
    if bad:
        raise StoreError(
            f"the copy from {report.source} to {report.target} does not verify for "
            f"{', '.join(bad)} (row counts or digests differ); do not use the target"
        )
    return report
