"""Append-only schema migrations for the judge store.

Each migration is a numbered function registered in order; a database records which ones ran in
``_migrations``. Published migrations are never edited: a schema change is a new function.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by whoever migrates: importing this module stays cheap
    import sqlite_utils

Migration = Callable[["sqlite_utils.Database"], None]
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


@migration
def m005_routing(db: sqlite_utils.Database) -> None:
    """Calibration cards used for routing, and the routing decision of each (case, judge, card)."""
    db.table("cards").create(
        {
            "digest": str,
            "model": str,
            "rubric_id": str,
            "rubric_version": int,
            "rubric_digest": str,
            "selector_version": str,
            "kind": str,
            "created_at": str,
            "expires_at": str,
            "added_at": str,
            "yaml": str,
            # Set when audit labels push a band's live error bound above the card's alpha.
            "stale": int,
            "stale_reason": str,
            "stale_at": str,
        },
        pk="digest",
        not_null={"yaml", "model"},
        defaults={"stale": 0},
    )
    db.table("routing_decisions").create(
        {
            "id": str,
            "card_digest": str,
            "case_id": str,
            "model": str,
            "rubric_id": str,
            "rubric_version": int,
            "kind": str,
            "decision": str,  # auto_accept | auto_reject | auto_decide | review
            "label": str,  # the label decided automatically; null for review
            "reason": str,
            "detail": str,
            "band": str,
            "score": float,
            "raw_score": float,
            "slice": str,
            "n_judgments": int,
            "judgment_ids": str,
            "audit": int,
            "routed_at": str,
        },
        pk="id",
        not_null={"card_digest", "case_id", "model", "decision", "reason"},
    )
    db.table("routing_decisions").create_index(["card_digest", "decision"])
    db.table("routing_decisions").create_index(["case_id"])


@migration
def m006_review(db: sqlite_utils.Database) -> None:
    """The human review queue and the labels reviewers give."""
    db.table("review_items").create(
        {
            "id": str,
            "routing_id": str,
            "card_digest": str,
            "case_id": str,
            "model": str,
            "rubric_id": str,
            "kind": str,  # binary | pairwise
            "reason": str,
            "detail": str,
            "audit": int,
            "band": str,
            "auto_label": str,
            "score": float,
            "priority": float,
            "required_labels": int,
            "blind": int,
            "status": str,  # open | adjudicate | done
            "final_label": str,
            "created_at": str,
            "closed_at": str,
        },
        pk="id",
        not_null={"case_id", "kind", "status", "required_labels"},
    )
    db.table("review_items").create_index(["status", "priority"])
    db.table("review_labels").create(
        {
            "id": int,
            "item_id": str,
            "reviewer": str,
            "role": str,  # reviewer | adjudicator
            "label": str,
            "note": str,
            "created_at": str,
        },
        pk="id",
        not_null={"item_id", "reviewer", "role", "label", "created_at"},
    )
    db.table("review_labels").create_index(["item_id", "reviewer"], unique=True)


@migration
def m007_access(db: sqlite_utils.Database) -> None:
    """API keys (only a salted hash is kept) and review-page sessions (hashed tokens)."""
    db.table("api_keys").create(
        {
            "id": str,
            "name": str,
            "role": str,  # reviewer | adjudicator
            "salt": str,
            "hash": str,
            "created_at": str,
            "revoked_at": str,
            "last_used_at": str,
        },
        pk="id",
        not_null={"name", "role", "salt", "hash", "created_at"},
    )
    db.table("api_keys").create_index(["name"], unique=True)
    db.table("sessions").create(
        {"token_hash": str, "key_id": str, "created_at": str, "expires_at": str},
        pk="token_hash",
        not_null={"key_id", "expires_at"},
    )


@migration
def m008_jobs(db: sqlite_utils.Database) -> None:
    """API jobs (a batch of cases to judge), their cases as submitted, and their judgments."""
    db.table("jobs").create(
        {
            "id": str,
            "key_id": str,
            "idempotency_key": str,
            "request_digest": str,
            "rubric": str,
            "models": str,
            "params": str,
            "status": str,  # queued | running | done | failed
            "n_cases": int,
            "n_steps": int,
            "n_done": int,
            "counts": str,
            "error": str,
            "created_at": str,
            "started_at": str,
            "finished_at": str,
        },
        pk="id",
        not_null={"status", "rubric", "models", "request_digest"},
    )
    # Null idempotency keys do not collide (SQLite treats NULLs as distinct in unique indexes).
    db.table("jobs").create_index(["key_id", "idempotency_key"], unique=True)
    db.table("job_cases").create(
        {"job_id": str, "position": int, "case_id": str, "json": str},
        pk=("job_id", "position"),
    )
    db.table("job_results").create(
        {"job_id": str, "judgment_id": str}, pk=("job_id", "judgment_id")
    )


@migration
def m009_step_keys(db: sqlite_utils.Database) -> None:
    """Which cache key a planned step's inputs led to, so that re-running a finished batch
    finds its judgments without selecting evidence and rendering prompts again."""
    db.table("step_keys").create(
        {"step_key": str, "cache_key": str, "created_at": str},
        pk="step_key",
        not_null={"cache_key"},
    )
    db.table("step_keys").create_index(["cache_key"])


def applied_names(conn: sqlite3.Connection) -> set[str]:
    """Names of the migrations already run on this database (plain sqlite3: the store checks
    this at every open without loading sqlite-utils)."""
    if conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = '_migrations'"
    ).fetchone() is None:
        return set()
    return {row[0] for row in conn.execute("select name from _migrations")}


def pending(conn: sqlite3.Connection) -> bool:
    """Whether a registered migration has not run on this database yet."""
    done = applied_names(conn)
    return any(name not in done for name, _ in MIGRATIONS)


def migrate(db: sqlite_utils.Database) -> list[str]:
    """Apply every migration not yet applied, in order; return the names applied now.

    Several processes may open a new database at once (two ``judge run`` on one file): the
    pending migrations are applied under SQLite's write lock (``BEGIN IMMEDIATE``, which waits
    for the busy timeout) and re-read once the lock is held, so each runs exactly once and a
    process never sees half a schema.
    """
    if not pending(db.conn):
        return []
    db.conn.commit()  # no implicit transaction may be open before BEGIN
    db.execute("BEGIN IMMEDIATE")
    try:
        done = applied_names(db.conn)
        if "_migrations" not in db.table_names():
            db.table("_migrations").create({"name": str, "applied_at": str}, pk="name")
        applied: list[str] = []
        for name, fn in MIGRATIONS:
            if name in done:
                continue
            fn(db)
            stamp = datetime.now(UTC).isoformat()
            db.table("_migrations").insert({"name": name, "applied_at": stamp})
            applied.append(name)
        db.execute("COMMIT")
    except BaseException:
        db.rollback()
        raise
    return applied
