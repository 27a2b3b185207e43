"""Cases, judgments, provider calls, batches and step keys.

A judgment is written the moment it is finished, so a batch that dies loses nothing it had done.
Its cache key identifies what was paid for: the same key is never sent to a provider twice
(unless the stored result is a provider failure, which cost nothing and is worth retrying).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NotRequired, TypedDict, Unpack

from judge.digests import digest, now_iso
from judge.store.backend import Backend, StoreError, quote, where_equal
from judge.types import Case, Judgment

#: Statuses that are final: served from the store instead of calling the provider again.
CACHED_STATUSES = frozenset({"ok", "abstain", "parse_error"})

#: Every table of a store, for counts (the migrations create them).
TABLES = frozenset(
    {
        "judgments",
        "calls",
        "cases",
        "batches",
        "cards",
        "routing_decisions",
        "review_items",
        "review_labels",
        "api_keys",
        "sessions",
        "jobs",
        "job_cases",
        "job_results",
        "step_keys",
        "label_plans",
        "call_claims",
        "rate_buckets",
        "exports",
    }
)
#: Ids per ``IN (...)`` list (SQLite's default limit on variables is far above this).
ID_CHUNK = 500


def _judgment_row(judgment: Judgment, batch_id: str | None) -> dict[str, Any]:
    v = judgment.verdict
    p = judgment.provenance
    return {
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


def _final(row: Mapping[str, Any] | None) -> Judgment | None:
    if row is None or row["status"] not in CACHED_STATUSES:
        return None
    return Judgment.model_validate_json(row["json"])


class JudgmentTables:
    """The tables of judging: judgments, cases, calls, batches, step keys."""

    backend: Backend

    # --- judgments -------------------------------------------------------------------------
    def cached(self, key: str) -> Judgment | None:
        """The stored judgment for ``key`` if it is final (not a provider failure)."""
        row = self.backend.query_one(
            "SELECT status, json FROM judgments WHERE cache_key = ?", [key]
        )
        return _final(row)

    def cached_step(self, step_key: str) -> Judgment | None:
        """The final judgment a planned step's inputs led to before (see judging.step_key)."""
        row = self.backend.query_one(
            "SELECT j.status, j.json FROM step_keys s JOIN judgments j"
            " ON j.cache_key = s.cache_key WHERE s.step_key = ?",
            [step_key],
        )
        return _final(row)

    def remember_step(self, step_key: str, key: str) -> None:
        """Record that the inputs ``step_key`` give the judgment with cache key ``key``."""
        row = {"step_key": step_key, "cache_key": key, "created_at": now_iso()}
        self.backend.insert("step_keys", row, conflict="update", key=("step_key",))

    def put(self, judgment: Judgment, *, batch_id: str | None = None) -> None:
        """Insert or replace the judgment for its cache key, in one transaction."""
        row = _judgment_row(judgment, batch_id)
        with self.backend.transaction():
            self.backend.execute("DELETE FROM judgments WHERE cache_key = ?", [row["cache_key"]])
            self.backend.insert("judgments", row, conflict="update", key=("id",))

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
        where, args = where_equal(
            {
                "rubric_id": rubric_id,
                "model": model,
                "case_id": case_id,
                "status": status,
                "batch_id": batch_id,
            }
        )
        sql = f"SELECT json FROM judgments{where} ORDER BY created_at, {self.backend.rowid}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
            rows: Iterable[dict[str, Any]] = self.backend.query(sql, args)
        else:
            rows = self.backend.iter_query(sql, args)
        for row in rows:
            yield Judgment.model_validate_json(row["json"])

    def judgments_by_id(self, ids: Sequence[str]) -> list[Judgment]:
        """The stored judgments with these ids (unknown ids are left out), in no set order."""
        found: list[Judgment] = []
        for start in range(0, len(ids), ID_CHUNK):
            part = list(ids[start : start + ID_CHUNK])
            marks = ", ".join("?" for _ in part)
            rows = self.backend.query(f"SELECT json FROM judgments WHERE id IN ({marks})", part)
            found += [Judgment.model_validate_json(r["json"]) for r in rows]
        return found

    def count(self, table: str = "judgments") -> int:
        """Number of rows in ``table``."""
        if table not in TABLES:
            raise StoreError(f"no table {table!r} in a judge store")
        return int(self.backend.scalar(f"SELECT count(*) AS n FROM {quote(table)}"))

    # --- calls -----------------------------------------------------------------------------
    def record_call(self, **attempt: Unpack[CallAttempt]) -> None:
        """Append one provider call attempt to the call log."""
        self.backend.insert("calls", call_row(**attempt))

    def calls(self, *, cache_key: str | None = None) -> list[dict[str, Any]]:
        """The call log (every attempt), oldest first."""
        where, args = where_equal({"cache_key": cache_key})
        return self.backend.query(f"SELECT * FROM calls{where} ORDER BY id", args)

    # --- cases -----------------------------------------------------------------------------
    def put_case(self, case: Case) -> None:
        """Keep the validated case (idempotent)."""
        self.backend.insert("cases", case_row(case), conflict="update", key=("id",))

    def get_case(self, case_id: str) -> Case | None:
        """The stored case with this id, if any."""
        row = self.backend.query_one("SELECT json FROM cases WHERE id = ?", [case_id])
        return Case.model_validate_json(row["json"]) if row else None

    def get_cases(self, case_ids: Iterable[str]) -> dict[str, Case]:
        """The stored cases with these ids, by id (unknown ids are left out)."""
        ids = list(dict.fromkeys(case_ids))
        out: dict[str, Case] = {}
        for start in range(0, len(ids), ID_CHUNK):
            part = ids[start : start + ID_CHUNK]
            marks = ", ".join("?" for _ in part)
            for row in self.backend.query(f"SELECT json FROM cases WHERE id IN ({marks})", part):
                case = Case.model_validate_json(row["json"])
                out[case.id] = case
        return out

    # --- batches ---------------------------------------------------------------------------
    def start_batch(
        self, batch_id: str, *, rubric: str, model: str, input: str, params: Mapping[str, Any]
    ) -> None:
        """Record the start of a batch."""
        row = {
            "id": batch_id,
            "created_at": now_iso(),
            "rubric": rubric,
            "model": model,
            "input": input,
            "params": json.dumps(dict(params), sort_keys=True, default=str),
            "status": "running",
        }
        self.backend.insert("batches", row, conflict="update", key=("id",))

    def finish_batch(self, batch_id: str, *, status: str, counts: Mapping[str, int]) -> None:
        """Record how a batch ended."""
        done = self.backend.execute(
            "UPDATE batches SET finished_at = ?, status = ?, counts = ? WHERE id = ?",
            [now_iso(), status, json.dumps(dict(counts)), batch_id],
        )
        if done == 0:
            raise StoreError(f"no batch {batch_id!r} in this store")

    def batches(self) -> list[dict[str, Any]]:
        """Every batch, oldest first."""
        return self.backend.query("SELECT * FROM batches ORDER BY created_at, id")

    # --- batch reads and writes (judging at scale) -----------------------------------------
    # Added for the runner's write-behind and the Ray engine: one query for many keys, one
    # transaction for many finished judgments. The rows are the same as the single-row methods
    # above write (``case_row`` mirrors ``put_case``): one format whoever wrote the store.
    def _final_by(self, sql: str, keys: Sequence[str]) -> dict[str, Judgment]:
        found: dict[str, Judgment] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), ID_CHUNK):
            part = unique[start : start + ID_CHUNK]
            marks = ", ".join("?" for _ in part)
            for row in self.backend.query(sql.format(marks=marks), part):
                judgment = _final(row)
                if judgment is not None:
                    found[row["k"]] = judgment
        return found

    def cached_many(self, keys: Sequence[str]) -> dict[str, Judgment]:
        """:meth:`JudgmentTables.cached` for many cache keys: key -> final judgment."""
        return self._final_by(
            "SELECT cache_key AS k, status, json FROM judgments WHERE cache_key IN ({marks})", keys
        )

    def cached_steps(self, step_keys: Sequence[str]) -> dict[str, Judgment]:
        """:meth:`JudgmentTables.cached_step` for many step keys: step key -> judgment."""
        return self._final_by(
            "SELECT s.step_key AS k, j.status, j.json FROM step_keys s JOIN judgments j"
            " ON j.cache_key = s.cache_key WHERE s.step_key IN ({marks})",
            step_keys,
        )

    def put_batch(
        self,
        *,
        cases: Sequence[Mapping[str, Any]] = (),
        judgments: Sequence[tuple[Judgment, str | None]] = (),
        calls: Sequence[Mapping[str, Any]] = (),
        steps: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Write finished work in one transaction: case rows (:func:`case_row`), judgments
        with their batch id (each replacing any judgment of its cache key, as ``put``), call
        rows (:func:`call_row`) and (step key, cache key) pairs (as ``remember_step``)."""
        rows = [_judgment_row(j, batch_id) for j, batch_id in judgments]
        when = now_iso()
        step_rows = [{"step_key": s, "cache_key": k, "created_at": when} for s, k in steps]
        with self.backend.transaction():
            self.backend.insert_many("cases", list(cases), conflict="update", key=("id",))
            if rows:
                self.backend.executemany(
                    "DELETE FROM judgments WHERE cache_key = ?", [[r["cache_key"]] for r in rows]
                )
                self.backend.insert_many("judgments", rows, conflict="update", key=("id",))
            self.backend.insert_many("calls", list(calls))
            self.backend.insert_many("step_keys", step_rows, conflict="update", key=("step_key",))


def case_row(case: Case) -> dict[str, Any]:
    """The ``cases`` row of a case, as :meth:`JudgmentTables.put_case` writes it. Built where
    the case is prepared (a worker process may build it), written by ``put_batch``."""
    data = case.model_dump(mode="json")
    return {
        "id": case.id,
        "kind": case.kind,
        "digest": digest(data),
        "json": json.dumps(data, ensure_ascii=False),
        "created_at": now_iso(),
    }


class CallAttempt(TypedDict):
    """One provider call attempt, as the call log records it (the keywords of
    :meth:`JudgmentTables.record_call` and :func:`call_row`)."""

    cache_key: str
    model: str
    attempt: int
    outcome: str
    error: NotRequired[str | None]
    prompt_tokens: NotRequired[int]
    completion_tokens: NotRequired[int]
    cost_usd: NotRequired[float | None]
    latency_s: NotRequired[float]


def call_row(**attempt: Unpack[CallAttempt]) -> dict[str, Any]:
    """The ``calls`` row of one provider attempt, as :meth:`JudgmentTables.record_call`
    writes it."""
    return {
        "cache_key": attempt["cache_key"],
        "model": attempt["model"],
        "attempt": attempt["attempt"],
        "outcome": attempt["outcome"],
        "error": attempt.get("error"),
        "prompt_tokens": attempt.get("prompt_tokens", 0),
        "completion_tokens": attempt.get("completion_tokens", 0),
        "cost_usd": attempt.get("cost_usd"),
        "latency_s": attempt.get("latency_s", 0.0),
        "created_at": now_iso(),
    }
