"""The SQLite store of cases, judgments and provider calls (sqlite3 and sqlite-utils, WAL).

A judgment is written the moment it is finished, so a batch that dies loses nothing it had done.
Its cache key identifies what was paid for: the same key is never sent to a provider twice
(unless the stored result is a provider failure, which cost nothing and is worth retrying).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.migrations import migrate, pending
from judge.types import Case, Judgment

if TYPE_CHECKING:
    import sqlite_utils

DEFAULT_DB = "judge.db"

#: Statuses that are final: served from the store instead of calling the provider again.
CACHED_STATUSES = frozenset({"ok", "abstain", "parse_error"})


def digest(obj: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``obj``."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(data.encode("utf-8")).hexdigest()


def cache_key(
    *,
    rubric_digest: str,
    evidence_digest: str,
    prompt_digest: str,
    model: str,
    params: Mapping[str, Any],
    order: str | None,
    sample: int,
    variant: int = 0,
    selector_version: str = "",
) -> str:
    """The identity of one paid-for judgment.

    The selector version is part of it although the prompt digest already covers what the
    model saw: a card binds one selector version, so judgments made under another are not
    reused for it (a selector change is rare; a store whose cached judgments carry an old
    version could never be calibrated as one judge)."""
    return digest(
        {
            "rubric": rubric_digest,
            "evidence": evidence_digest,
            "prompt": prompt_digest,
            "model": model,
            "params": dict(params),
            "order": order,
            "sample": sample,
            "variant": variant,
            "selector": selector_version,
        }
    )


def _enable_wal(conn: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch the database to WAL. When several processes open the same new file at once,
    SQLite refuses the journal-mode change with "database is locked" at once, without waiting
    for the busy timeout; so retry until ``wait_s`` has passed (tests/test_crash.py)."""
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


@lru_cache(maxsize=32)
def _insert_sql(table: str, columns: tuple[str, ...], conflict: str = "") -> str:
    """``INSERT [OR REPLACE] INTO table (columns) VALUES (?, ...) [conflict clause]``.

    The hot writes (a judgment, a call, a case per judgment) use plain SQL: sqlite-utils'
    insert and upsert inspect the table's schema on every call (about 8 statements each).
    """
    quoted = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    verb = "INSERT OR REPLACE" if conflict == "replace" else "INSERT"
    sql = f'{verb} INTO "{table}" ({quoted}) VALUES ({marks})'
    if conflict.startswith("upsert:"):
        key = conflict.removeprefix("upsert:")
        updates = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c != key)
        sql += f' ON CONFLICT("{key}") DO UPDATE SET {updates}'
    return sql


def where_equal(filters: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """A `` where a = ? and b = ?`` clause (empty when no filter is set) and its arguments,
    for the filters whose value is not None. Column names come from code, never from input."""
    set_ = {column: value for column, value in filters.items() if value is not None}
    clause = " and ".join(f'"{column}" = ?' for column in set_)
    return (f" where {clause}" if clause else ""), list(set_.values())


def _now() -> str:
    return datetime.now(UTC).isoformat()


class Store:
    """Judgments, cases, calls and batches in one SQLite file."""

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        # Plain sqlite3 for the store's own reads and writes. sqlite-utils (which imports pandas
        # and numpy when they are installed: 0.6 s of every command's start) is loaded only
        # to migrate or when a caller uses ``db``. The connection is set up as
        # sqlite_utils.Database(path) sets up its own.
        # check_same_thread=False: the API opens a store per request in a FastAPI dependency,
        # whose setup and the endpoint may run on different threadpool threads; one request
        # uses its connection sequentially, and SQLite itself is built thread-safe.
        self.conn = sqlite3.connect(str(self.path), check_same_thread=False)
        self.conn.execute("PRAGMA recursive_triggers=on;")
        self._db: sqlite_utils.Database | None = None
        # Several processes may write one file: wait for the lock rather than fail.
        self.conn.execute("PRAGMA busy_timeout = 30000")
        _enable_wal(self.conn)
        self.conn.execute("PRAGMA synchronous = NORMAL")
        if pending(self.conn):
            migrate(self.db)

    @property
    def db(self) -> sqlite_utils.Database:
        """The same connection through sqlite-utils, for callers that query with it."""
        if self._db is None:
            import sqlite_utils

            self._db = sqlite_utils.Database(self.conn)
        return self._db

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- judgments -------------------------------------------------------------------------
    def cached(self, key: str) -> Judgment | None:
        """The stored judgment for ``key`` if it is final (not a provider failure)."""
        row = self.conn.execute(
            "select status, json from judgments where cache_key = ?", [key]
        ).fetchone()
        if row is None or row[0] not in CACHED_STATUSES:
            return None
        return Judgment.model_validate_json(row[1])

    def cached_step(self, step_key: str) -> Judgment | None:
        """The final judgment a planned step's inputs led to before (see Runner.step_key)."""
        row = self.conn.execute(
            "select j.status, j.json from step_keys s join judgments j"
            " on j.cache_key = s.cache_key where s.step_key = ?",
            [step_key],
        ).fetchone()
        if row is None or row[0] not in CACHED_STATUSES:
            return None
        return Judgment.model_validate_json(row[1])

    def remember_step(self, step_key: str, key: str) -> None:
        """Record that the inputs ``step_key`` give the judgment with cache key ``key``."""
        row = {"step_key": step_key, "cache_key": key, "created_at": _now()}
        with self.conn:
            self.conn.execute(_insert_sql("step_keys", tuple(row), "replace"), list(row.values()))

    def put(self, judgment: Judgment, *, batch_id: str | None = None) -> None:
        """Insert or replace the judgment for its cache key, in one transaction."""
        v = judgment.verdict
        p = judgment.provenance
        row = {
            "id": judgment.id,
            "cache_key": judgment.cache_key,
            "case_id": judgment.case_id,
            "status": judgment.status,
            "label": v.label if v else None,
            "confidence": v.confidence if v else None,
            "rubric_id": p.rubric_id,
            "rubric_version": p.rubric_version,
            "rubric_digest": p.rubric_digest,
            "model": p.model,
            "order": p.order,
            "sample": p.sample,
            "prompt_digest": p.prompt_digest,
            "evidence_digest": p.evidence_digest,
            "selector_version": p.selector_version,
            "prompt_tokens": judgment.usage.prompt_tokens,
            "completion_tokens": judgment.usage.completion_tokens,
            "cost_usd": judgment.usage.cost_usd,
            "latency_s": judgment.usage.latency_s,
            "batch_id": batch_id,
            "created_at": judgment.created_at.isoformat(),
            "json": judgment.model_dump_json(),
        }
        conn = self.conn
        with conn:
            conn.execute("delete from judgments where cache_key = ?", [judgment.cache_key])
            conn.execute(_insert_sql("judgments", tuple(row), "replace"), list(row.values()))

    def judgments(
        self,
        *,
        rubric_id: str | None = None,
        model: str | None = None,
        case_id: str | None = None,
        status: str | None = None,
        batch_id: str | None = None,
        limit: int | None = None,
    ) -> Iterator[Judgment]:
        """Stored judgments, oldest first, filtered by the given fields."""
        where, args = where_equal({"rubric_id": rubric_id, "model": model, "case_id": case_id,
                                   "status": status, "batch_id": batch_id})
        sql = "select json from judgments" + where
        sql += " order by created_at, rowid"
        if limit is not None:
            sql += f" limit {int(limit)}"
        for (text,) in self.conn.execute(sql, args):
            yield Judgment.model_validate_json(text)

    def count(self, table: str = "judgments") -> int:
        """Number of rows in ``table``."""
        quoted = table.replace('"', '""')
        return int(self.conn.execute(f'select count(*) from "{quoted}"').fetchone()[0])

    # --- calls, cases, batches -------------------------------------------------------------
    def record_call(
        self,
        *,
        cache_key: str,
        model: str,
        attempt: int,
        outcome: str,
        error: str | None = None,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float | None = None,
        latency_s: float = 0.0,
    ) -> None:
        """Append one provider call attempt to the call log."""
        row = {
            "cache_key": cache_key,
            "model": model,
            "attempt": attempt,
            "outcome": outcome,
            "error": error,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "cost_usd": cost_usd,
            "latency_s": latency_s,
            "created_at": _now(),
        }
        with self.conn:
            self.conn.execute(_insert_sql("calls", tuple(row)), list(row.values()))

    def put_case(self, case: Case) -> None:
        """Keep the validated case (idempotent)."""
        data = case.model_dump(mode="json")
        row = {
            "id": case.id,
            "kind": case.kind,
            "digest": digest(data),
            "json": json.dumps(data, ensure_ascii=False),
            "created_at": _now(),
        }
        with self.conn:
            self.conn.execute(_insert_sql("cases", tuple(row), "upsert:id"), list(row.values()))

    def get_case(self, case_id: str) -> Case | None:
        """The stored case with this id, if any."""
        row = self.conn.execute("select json from cases where id = ?", [case_id]).fetchone()
        return Case.model_validate_json(row[0]) if row else None

    def start_batch(
        self, batch_id: str, *, rubric: str, model: str, input: str, params: Mapping[str, Any]
    ) -> None:
        """Record the start of a batch."""
        row = {
            "id": batch_id,
            "created_at": _now(),
            "rubric": rubric,
            "model": model,
            "input": input,
            "params": json.dumps(dict(params), sort_keys=True, default=str),
            "status": "running",
        }
        with self.conn:
            self.conn.execute(_insert_sql("batches", tuple(row), "upsert:id"), list(row.values()))

    def finish_batch(self, batch_id: str, *, status: str, counts: Mapping[str, int]) -> None:
        """Record how a batch ended."""
        with self.conn:
            done = self.conn.execute(
                "update batches set finished_at = ?, status = ?, counts = ? where id = ?",
                [_now(), status, json.dumps(dict(counts)), batch_id],
            )
        if done.rowcount == 0:
            from sqlite_utils.db import NotFoundError

            raise NotFoundError(batch_id)  # what sqlite-utils' update() raised
