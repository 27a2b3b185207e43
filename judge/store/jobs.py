"""API jobs: a batch of cases as submitted, its state, and the judgments it produced."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from judge.digests import now_iso, utcnow
from judge.store.backend import Backend, StoreError, page, quote, where_equal
from judge.store.replicas import DEAD_OWNER
from judge.types import Case, JobRecord


def _job(row: Mapping[str, Any]) -> JobRecord:
    data = dict(row)
    data["models"] = json.loads(data["models"])
    data["params"] = json.loads(data["params"] or "{}")
    data["counts"] = json.loads(data["counts"] or "{}")
    data["n_done"] = data["n_done"] or 0
    # Who holds a job's lease is the workers' business, not the job's record.
    for column in ("lease_owner", "lease_until", "finished_by", "taken_over_from"):
        data.pop(column, None)
    return JobRecord.model_validate(data)


def _moment(seconds: float = 0.0) -> str:
    # Fixed-width UTC text, so that leases compare as strings on both backends.
    return (utcnow() + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


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
            self.backend.insert_many(
                "job_cases",
                [
                    {
                        "job_id": row["id"],
                        "position": i,
                        "case_id": case.id,
                        "json": case.model_dump_json(),
                    }
                    for i, case in enumerate(cases)
                ],
            )

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
        where, params = where_equal({"key_id": key_id})
        rows = self.backend.query(
            f"SELECT * FROM jobs{where} ORDER BY created_at DESC{page(limit, offset)}",
            params,
        )
        return [_job(r) for r in rows]

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

    def add_job_result(self, job_id: str, judgment_id: str) -> int:
        """Record a judgment of a job; the job's progress (``n_done``) becomes the number of
        its judgments stored, whoever stored them: it never goes back when another worker
        resumes the job. Returns that number."""
        with self.backend.transaction():
            self.backend.insert(
                "job_results", {"job_id": job_id, "judgment_id": judgment_id}, conflict="ignore"
            )
            self.backend.execute(
                "UPDATE jobs SET n_done = (SELECT count(*) FROM job_results WHERE job_id = ?) "
                "WHERE id = ?",
                [job_id, job_id],
            )
            return int(self.backend.scalar("SELECT n_done FROM jobs WHERE id = ?", [job_id]) or 0)

    def job_result_count(self, job_id: str) -> int:
        """How many judgments of a job are stored."""
        return int(
            self.backend.scalar("SELECT count(*) FROM job_results WHERE job_id = ?", [job_id])
        )

    # --- leases: one worker runs a job, among every process sharing the store ---------------
    def claim_job(
        self,
        owner: str,
        lease_s: float,
        *,
        job_id: str | None = None,
        dead_after_s: float | None = None,
    ) -> str | None:
        """Claim the oldest job (or job ``job_id``) that is queued, or running under a lease
        that expired (its worker died): ``owner`` holds it for ``lease_s`` seconds. None when
        there is none. Several workers claiming at once each get a different job (PostgreSQL
        skips rows another transaction holds; SQLite's write lock serialises the claims).

        ``dead_after_s``: a running job whose lease holder is a replica whose heartbeat
        (``judge.store.replicas``) is older than this is claimable too, before its lease ends.
        A claim of a running job is a takeover: the job keeps its ``started_at`` and records
        ``taken_over_at`` and ``taken_over_from`` (the previous holder)."""
        now = _moment()
        expired, args = "lease_until IS NULL OR lease_until < ?", [now]
        if dead_after_s is not None:
            expired += " OR (lease_owner IS NOT NULL AND " + DEAD_OWNER.format(owner="lease_owner")
            expired += ")"
            args.append(_moment(-dead_after_s))
        where = ""
        if job_id is not None:
            where, args = " AND id = ?", [*args, job_id]
        with self.backend.transaction(lock=True):
            row = self.backend.query_one(
                "SELECT id, status, lease_owner FROM jobs WHERE status IN ('queued', 'running') "
                f"AND ({expired}){where} "
                "ORDER BY created_at, id LIMIT 1" + self.backend.skip_locked,
                args,
            )
            if row is None:
                return None
            takeover = row["status"] == "running" and row["lease_owner"] is not None
            moved, moved_args = "", []
            if takeover:
                moved, moved_args = (
                    ", taken_over_at = ?, taken_over_from = ?",
                    [
                        now_iso(),
                        row["lease_owner"],
                    ],
                )
            self.backend.execute(
                "UPDATE jobs SET status = 'running', lease_owner = ?, lease_until = ?, "
                "attempts = coalesce(attempts, 0) + 1, started_at = coalesce(started_at, ?), "
                f"error = NULL{moved} WHERE id = ?",
                [owner, _moment(lease_s), now_iso(), *moved_args, row["id"]],
            )
        return str(row["id"])

    def renew_job_lease(self, job_id: str, owner: str, lease_s: float) -> bool:
        """Extend ``owner``'s lease on a running job (the heartbeat); False once it lost it."""
        changed = self.backend.execute(
            "UPDATE jobs SET lease_until = ? WHERE id = ? AND lease_owner = ? "
            "AND status = 'running'",
            [_moment(lease_s), job_id, owner],
        )
        return changed == 1

    def expire_job_lease(self, job_id: str, owner: str) -> bool:
        """End ``owner``'s lease on a job now (its worker is known to be gone)."""
        changed = self.backend.execute(
            "UPDATE jobs SET lease_until = NULL WHERE id = ? AND lease_owner = ?", [job_id, owner]
        )
        return changed == 1

    def finish_job(
        self,
        job_id: str,
        owner: str,
        *,
        status: str,
        counts: Mapping[str, int],
        error: str | None,
    ) -> bool:
        """Record how a job ended and free its lease, if ``owner`` still holds it (a worker
        that lost its lease to another leaves the ending to that one); whether it did."""
        changed = self.backend.execute(
            "UPDATE jobs SET status = ?, counts = ?, error = ?, finished_at = ?, "
            "finished_by = ?, lease_owner = NULL, lease_until = NULL "
            "WHERE id = ? AND lease_owner = ?",
            [status, json.dumps(dict(counts)), error, now_iso(), owner, job_id, owner],
        )
        return changed == 1

    def requeue_job(self, job_id: str) -> bool:
        """Queue a finished or failed job again (False while it is queued or running)."""
        changed = self.backend.execute(
            "UPDATE jobs SET status = 'queued', started_at = NULL, finished_at = NULL, "
            "lease_owner = NULL, lease_until = NULL, taken_over_at = NULL, "
            "taken_over_from = NULL WHERE id = ? AND status NOT IN ('queued', 'running')",
            [job_id],
        )
        return changed == 1

    def job_leases(self) -> list[dict[str, Any]]:
        """Every job's id, status, lease holder and expiry, claims and finisher (oldest
        first): what operators and tests look at to see which worker ran what."""
        return self.backend.query(
            "SELECT id, status, lease_owner, lease_until, attempts, finished_by, started_at, "
            "taken_over_at, taken_over_from, n_steps, n_done FROM jobs ORDER BY created_at, id"
        )
