"""Append-only schema migrations for the judge store.

Each migration is a numbered function registered in order; a database records which ones ran in
``_migrations``. Published migrations are never edited: a schema change is a new function.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import sqlite_utils

Migration = Callable[[sqlite_utils.Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration; its name is its identity."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_judgments(db: sqlite_utils.Database) -> None:
    """One row per judgment, keyed by the cache key; the full Judgment JSON kept for audit."""
    db.table("judgments").create(
        {
            "id": str,
            "cache_key": str,
            "case_id": str,
            "status": str,
            "label": str,
            "confidence": float,
            "rubric_id": str,
            "rubric_version": int,
            "rubric_digest": str,
            "model": str,
            "order": str,
            "sample": int,
            "prompt_digest": str,
            "evidence_digest": str,
            "selector_version": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cost_usd": float,
            "latency_s": float,
            "batch_id": str,
            "created_at": str,
            "json": str,
        },
        pk="id",
        not_null={"cache_key", "case_id", "status", "model", "rubric_id", "json"},
    )
    db.table("judgments").create_index(["cache_key"], unique=True)
    db.table("judgments").create_index(["case_id"])
    db.table("judgments").create_index(["rubric_id", "model"])


@migration
def m002_calls(db: sqlite_utils.Database) -> None:
    """Every provider call attempt, append-only: what was paid for, and what failed."""
    db.table("calls").create(
        {
            "id": int,
            "cache_key": str,
            "model": str,
            "attempt": int,
            "outcome": str,  # ok | parse_error | infra_error
            "error": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cost_usd": float,
            "latency_s": float,
            "created_at": str,
        },
        pk="id",
    )
    db.table("calls").create_index(["cache_key"])


@migration
def m003_cases(db: sqlite_utils.Database) -> None:
    """The cases judged (as validated), so judgments can be shown and reviewed later."""
    db.table("cases").create(
        {"id": str, "kind": str, "digest": str, "json": str, "created_at": str}, pk="id"
    )


@migration
def m004_batches(db: sqlite_utils.Database) -> None:
    """Batches (a `judge run` or an API job): what was asked and how it ended."""
    db.table("batches").create(
        {
            "id": str,
            "created_at": str,
            "finished_at": str,
            "rubric": str,
            "model": str,
            "input": str,
            "params": str,
            "status": str,
            "counts": str,
        },
        pk="id",
    )


def migrate(db: sqlite_utils.Database) -> list[str]:
    """Apply every migration not yet applied, in order; return the names applied now."""
    if "_migrations" not in db.table_names():
        db.table("_migrations").create({"name": str, "applied_at": str}, pk="name")
    done = {row["name"] for row in db.table("_migrations").rows}
    applied: list[str] = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with db.conn:
            fn(db)
            stamp = datetime.now(UTC).isoformat()
            db.table("_migrations").insert({"name": name, "applied_at": stamp})
        applied.append(name)
    return applied
