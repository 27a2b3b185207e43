"""Batch jobs: stored as submitted, judged by daemon worker threads with ``judge.runner.Runner``.

A job's cases are kept in ``job_cases`` exactly as submitted, so a job can be re-run at any time:
the runner serves every judgment already stored from the store (same cache key), so resuming
after a crash or a restart pays only for what was not finished. Unfinished jobs are resumed when
the service starts. Submitting with an Idempotency-Key returns the job first created with that
key (for the same API key) when the request is the same, and refuses a different request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import sqlite3
import threading
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.api.schemas import Job, JobRequest
from judge.defaults import DEFAULT_MAX_TOKENS
from judge.errors import InputError, JudgeError
from judge.review import ConflictError, NotFoundError
from judge.store import Store, digest
from judge.types import Case

log = logging.getLogger("judge.api.jobs")

#: Finished states: a job in one of these is not resumed at start-up.
FINAL = frozenset({"done", "failed"})


@dataclass(frozen=True)
class JudgeSettings:
    """What the server lets callers use, and how it calls models."""

    models: tuple[str, ...]
    api_base: str | None = None
    concurrency: int = 4
    token_budget: int | None = None

    def pick_models(self, asked: Sequence[str] | None) -> list[str]:
        """The models of a request, refused unless enabled on this server."""
        if not asked:
            return [self.models[0]]
        for model in asked:
            if model not in self.models:
                raise InputError(
                    f"model {model!r} is not enabled on this server",
                    field="models",
                    hint=f"use one of: {', '.join(self.models)} (judge serve --model ...)",
                )
        return list(dict.fromkeys(asked))


def _now() -> str:
    return datetime.now(UTC).isoformat()


def job_from_row(row: Mapping[str, Any]) -> Job:
    """The API view of a ``jobs`` row."""
    return Job(
        id=row["id"],
        status=row["status"],
        rubric=row["rubric"],
        models=json.loads(row["models"]),
        n_cases=row["n_cases"],
        n_steps=row["n_steps"],
        n_done=row["n_done"] or 0,
        counts=json.loads(row["counts"] or "{}"),
        error=row["error"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
    )


def get_job(store: Store, job_id: str) -> Job:
    """The job with this id; NotFoundError otherwise."""
    rows = list(store.db.query("select * from jobs where id = ?", [job_id]))
    if not rows:
        raise NotFoundError(f"no job {job_id!r}")
    return job_from_row(rows[0])


def list_jobs(store: Store, *, limit: int = 50, offset: int = 0) -> list[Job]:
    """Jobs, newest first."""
    sql = f"select * from jobs order by created_at desc limit {int(limit)} offset {int(offset)}"
    return [job_from_row(r) for r in store.db.query(sql)]


def create_job(
    store: Store,
    request: JobRequest,
    models: list[str],
    *,
    key_id: str,
    idempotency_key: str | None,
) -> tuple[Job, bool]:
    """Store a new job (queued); return it and whether it was created now.

    With an idempotency key already used by this API key: the same request returns the
    existing job (created False); a different request raises ConflictError.
    """
    from judge.rubrics import load_rubric

    load_rubric(request.rubric)  # an unknown rubric fails now, not in the worker
    request_digest = digest(request.model_dump(mode="json"))
    if idempotency_key is not None:
        existing = _by_idempotency(store, key_id, idempotency_key, request_digest)
        if existing is not None:
            return existing, False
    job_id = "job-" + uuid.uuid4().hex[:16]
    params = request.model_dump(mode="json", exclude={"cases", "models", "rubric"})
    try:
        with store.db.conn:
            store.db.table("jobs").insert(
                {
                    "id": job_id,
                    "key_id": key_id,
                    "idempotency_key": idempotency_key,
                    "request_digest": request_digest,
                    "rubric": request.rubric,
                    "models": json.dumps(models),
                    "params": json.dumps(params, sort_keys=True),
                    "status": "queued",
                    "n_cases": len(request.cases),
                    "n_done": 0,
                    "created_at": _now(),
                }
            )
            store.db.table("job_cases").insert_all(
                {
                    "job_id": job_id,
                    "position": i,
                    "case_id": case.id,
                    "json": case.model_dump_json(),
                }
                for i, case in enumerate(request.cases)
            )
    except sqlite3.IntegrityError:
        # Another request with the same idempotency key won the race: answer as it did.
        existing = _by_idempotency(store, key_id, idempotency_key or "", request_digest)
        if existing is None:
            raise
        return existing, False
    return get_job(store, job_id), True


def _by_idempotency(store: Store, key_id: str, idem: str, request_digest: str) -> Job | None:
    rows = list(
        store.db.query(
            "select * from jobs where key_id = ? and idempotency_key = ?", [key_id, idem]
        )
    )
    if not rows:
        return None
    if rows[0]["request_digest"] != request_digest:
        raise ConflictError(
            f"Idempotency-Key {idem!r} was used for a different request (job {rows[0]['id']}); "
            "use a new key for a new request"
        )
    return job_from_row(rows[0])


def job_cases(store: Store, job_id: str) -> list[Case]:
    """A job's cases, as submitted, in order."""
    rows = store.db.query("select json from job_cases where job_id = ? order by position", [job_id])
    return [Case.model_validate_json(r["json"]) for r in rows]


def job_judgment_ids(store: Store, job_id: str) -> list[str]:
    """Ids of the judgments a job produced or reused."""
    rows = store.db.query("select judgment_id from job_results where job_id = ?", [job_id])
    return [r["judgment_id"] for r in rows]


def run_job(db: Path, job_id: str, settings: JudgeSettings) -> Job:
    """Judge a job's cases (again, from the store where already judged); record the outcome."""
    from judge.providers import ModelParams
    from judge.rubrics import load_rubric
    from judge.runner import Outcome, Runner, plan

    with Store(db) as store:
        row = list(store.db.query("select * from jobs where id = ?", [job_id]))[0]
        params = json.loads(row["params"])
        models = json.loads(row["models"])
        with store.db.conn:
            store.db.table("jobs").update(
                job_id, {"status": "running", "started_at": _now(), "error": None}
            )
        try:
            rubric = load_rubric(row["rubric"])
            cases = job_cases(store, job_id)
            samples = int(params.get("samples", 1))
            temperature = params.get("temperature")
            if temperature is None:
                temperature = 0.7 if samples > 1 else 0.0
            model_params = ModelParams(
                temperature=temperature,
                max_tokens=int(params.get("max_tokens", DEFAULT_MAX_TOKENS)),
                api_base=settings.api_base,
            )
            steps = plan(
                cases, rubric, models, orders=params.get("orders", "both"), samples=samples
            )
            with store.db.conn:
                store.db.table("jobs").update(job_id, {"n_steps": len(steps), "n_done": 0})
            done = 0

            def progress(outcome: Outcome) -> None:
                nonlocal done
                done += 1
                with store.db.conn:
                    store.db.table("job_results").insert(
                        {"job_id": job_id, "judgment_id": outcome.judgment.id}, ignore=True
                    )
                    store.db.table("jobs").update(job_id, {"n_done": done})

            runner = Runner(
                store,
                rubric,
                model_params,
                token_budget=settings.token_budget,
                concurrency=settings.concurrency,
                on_done=progress,
                batch_id=job_id,
            )
            store.start_batch(
                job_id,
                rubric=rubric.ref,
                model=",".join(models),
                input=f"api job {job_id}",
                params=model_params.cache_params(),
            )
            summary = asyncio.run(runner.run(steps))
        except JudgeError as err:
            return _finish(store, job_id, "failed", Counter(), str(err))
        except Exception as err:  # noqa: BLE001 - the worker must record any failure, not die
            log.exception("job %s failed", job_id)
            return _finish(store, job_id, "failed", Counter(), f"internal error: {err!r}")
        counts: Counter[str] = Counter(summary.statuses)
        counts["cached"] = summary.cached
        counts["not_attempted"] = len(summary.errors)
        store.finish_batch(job_id, status="done", counts=counts)
        error = "; ".join(f"case {s.case.id}: {e}" for s, e in summary.errors[:5]) or None
        return _finish(store, job_id, "done", counts, error)


def _finish(store: Store, job_id: str, status: str, counts: Counter[str], error: str | None) -> Job:
    with store.db.conn:
        store.db.table("jobs").update(
            job_id,
            {
                "status": status,
                "counts": json.dumps(dict(counts)),
                "error": error,
                "finished_at": _now(),
            },
        )
    return get_job(store, job_id)


class JobManager:
    """Daemon worker threads running jobs from a queue (no state outside this object).

    Daemon threads: stopping the service mid-job loses nothing, because every finished judgment
    is already stored and the job is resumed at the next start.
    """

    def __init__(self, db: Path, settings: JudgeSettings, workers: int = 1) -> None:
        self.db = db
        self.settings = settings
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._work, name=f"judge-job-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        self._started = False

    def start(self) -> None:
        """Start the workers and queue every unfinished job (resume after a restart)."""
        if self._started:
            return
        self._started = True
        for thread in self._threads:
            thread.start()
        with Store(self.db) as store:
            rows = store.db.query(
                "select id from jobs where status in ('queued', 'running') order by created_at"
            )
            for row in rows:
                self._queue.put(row["id"])

    def submit(self, job_id: str) -> None:
        """Queue a job to run."""
        self._queue.put(job_id)

    def stop(self) -> None:
        """Ask the workers to stop after their current job."""
        for _ in self._threads:
            self._queue.put(None)

    def _work(self) -> None:
        while True:
            job_id = self._queue.get()
            if job_id is None:
                return
            try:
                run_job(self.db, job_id, self.settings)
            except Exception:  # noqa: BLE001 - keep the worker alive for the next job
                log.exception("job %s could not be run", job_id)
