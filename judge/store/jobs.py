"""API jobs: a batch of cases as submitted, its state, and the judgments it produced."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from judge.digests import now_iso
from judge.store.backend import Backend, StoreError, quote
from judge.types import Case, JobRecord


def _job(row: Mapping[str, Any]) -> JobRecord:
    data = dict(row)
    data["models"] = json.loads(data["models"])
    data["params"] = json.loads(data["params"] or "{}")
    data["counts"] = json.loads(data["counts"] or "{}")
    data["n_done"] = data["n_done"] or 0
    return JobRecord.model_validate(data)


class JobTables:
    """Jobs, their cases and their results."""

    backend: Backend

    def add_job(self, job: Mapping[str, Any], cases: Sequence[Case]) -> None:
        """Store a queued job with its cases, in one transaction (DuplicateError when its
        idempotency key is taken for this API key)."""
        row = dict(job)
        row["models"] = json.dumps(row["models"])
        row["params"] = json.dumps(row["params"], sort_keys=True)
        row.setdefault("created_at", now_iso())
        with self.backend.transaction():
            self.backend.insert("jobs", row)
            self.backend.insert_many("job_cases", [
                {"job_id": row["id"], "position": i, "case_id": case.id,
                 "json": case.model_dump_json()}
                for i, case in enumerate(cases)
            ])

    def job(self, job_id: str) -> JobRecord | None:
        """The job with this id, or None."""
        row = self.backend.query_one("SELECT * FROM jobs WHERE id = ?", [job_id])
        return None if row is None else _job(row)

    def job_by_idempotency_key(self, key_id: str, idempotency_key: str) -> JobRecord | None:
        """The job this API key created with this idempotency key, or None."""
        row = self.backend.query_one(
            "SELECT * FROM jobs WHERE key_id = ? AND idempotency_key = ?",
            [key_id, idempotency_key],
        )
        return None if row is None else _job(row)

    def jobs(
        self, *, key_id: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[JobRecord]:
        """Jobs, newest first (only those created by API key ``key_id`` when given)."""
        where, params = ("WHERE key_id = ? ", [key_id]) if key_id is not None else ("", [])
        rows = self.backend.query(
            f"SELECT * FROM jobs {where}ORDER BY created_at DESC "
            f"LIMIT {int(limit)} OFFSET {int(offset)}",
            params,
        )
        return [_job(r) for r in rows]

    def unfinished_jobs(self) -> list[str]:
        """Ids of queued or running jobs, oldest first."""
        rows = self.backend.query(
            "SELECT id FROM jobs WHERE status IN ('queued', 'running') ORDER BY created_at"
        )
        return [r["id"] for r in rows]

    def job_cases(self, job_id: str) -> list[Case]:
        """A job's cases, as submitted, in order."""
        rows = self.backend.query(
            "SELECT json FROM job_cases WHERE job_id = ? ORDER BY position", [job_id]
        )
        return [Case.model_validate_json(r["json"]) for r in rows]

    def job_judgment_ids(self, job_id: str) -> list[str]:
        """Ids of the judgments a job produced or reused."""
        rows = self.backend.query(
            f"SELECT judgment_id FROM job_results WHERE job_id = ? ORDER BY {self.backend.rowid}",
            [job_id],
        )
        return [r["judgment_id"] for r in rows]

    def update_job(self, job_id: str, **fields: Any) -> None:
        """Set some of a job's columns (counts as a dict)."""
        if "counts" in fields and fields["counts"] is not None:
            fields["counts"] = json.dumps(dict(fields["counts"]))
        columns = ", ".join(f"{quote(name)} = ?" for name in fields)
        done = self.backend.execute(
            f"UPDATE jobs SET {columns} WHERE id = ?", [*fields.values(), job_id]
        )
        if done == 0:
            raise StoreError(f"no job {job_id!r} in this store")

    def add_job_result(self, job_id: str, judgment_id: str, n_done: int) -> None:
        """Record a judgment of a job and how many of its steps are done."""
        with self.backend.transaction():
            self.backend.insert(
                "job_results", {"job_id": job_id, "judgment_id": judgment_id}, conflict="ignore"
            )
            self.backend.execute("UPDATE jobs SET n_done = ? WHERE id = ?", [n_done, job_id])
