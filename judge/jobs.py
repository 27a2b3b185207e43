"""Batch jobs: stored as submitted, judged by daemon worker threads (``judge_cases``).

A job's cases are kept in ``job_cases`` exactly as submitted, so a job can be re-run at any time:
the runner serves every judgment already stored from the store (same cache key), so resuming
after a crash or a restart pays only for what was not finished. Unfinished jobs are resumed when
the service starts. Submitting with an Idempotency-Key returns the job first created with that
key (for the same API key) when the request is the same, and refuses a different request.
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.defaults import DEFAULT_MAX_TOKENS
from judge.digests import now_iso
from judge.errors import ConflictError, InputError, JudgeError, NotFoundError
from judge.judging import JudgeOptions, Outcome, Step, judge_cases
from judge.providers import check_models
from judge.rubrics import load_rubric
from judge.store import DuplicateError, Store
from judge.types import Case, JobRecord, Judgment

log = logging.getLogger("judge.jobs")

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
        """The models of a request, refused unless enabled on this server and callable (known
        provider, credentials in the server's environment: checked at submit time, so that a
        job is never queued to fail in the worker)."""
        if not asked:
            chosen = [self.models[0]]
        else:
            for model in asked:
                if model not in self.models:
                    raise InputError(
                        f"model {model!r} is not enabled on this server",
                        field="models",
                        hint=f"use one of: {', '.join(self.models)} (judge serve --model ...)",
                    )
            chosen = list(dict.fromkeys(asked))
        check_models(chosen, api_base=self.api_base)
        return chosen

    def options(self, params: dict[str, Any]) -> JudgeOptions:
        """Judging options from a request's parameters and the server's settings."""
        return JudgeOptions(
            orders=params.get("orders", "both"),
            samples=int(params.get("samples", 1)),
            temperature=params.get("temperature"),
            max_tokens=int(params.get("max_tokens", DEFAULT_MAX_TOKENS)),
            api_base=self.api_base,
            token_budget=self.token_budget,
            concurrency=self.concurrency,
        )


def get_job(store: Store, job_id: str) -> JobRecord:
    """The job with this id; NotFoundError otherwise."""
    record = store.job(job_id)
    if record is None:
        raise NotFoundError(f"no job {job_id!r}")
    return record


def create_job(
    store: Store,
    *,
    cases: Sequence[Case],
    rubric: str,
    models: list[str],
    params: dict[str, Any],
    request_digest: str,
    key_id: str,
    idempotency_key: str | None,
) -> tuple[JobRecord, bool]:
    """Store a new job (queued); return it and whether it was created now.

    With an idempotency key already used by this API key: the same request (same digest)
    returns the existing job (created False); a different request raises ConflictError.
    """
    load_rubric(rubric)  # an unknown rubric fails now, not in the worker
    if idempotency_key is not None:
        existing = _by_idempotency(store, key_id, idempotency_key, request_digest)
        if existing is not None:
            return existing, False
    job_id = "job-" + uuid.uuid4().hex[:16]
    try:
        store.add_job({
            "id": job_id,
            "key_id": key_id,
            "idempotency_key": idempotency_key,
            "request_digest": request_digest,
            "rubric": rubric,
            "models": models,
            "params": params,
            "status": "queued",
            "n_cases": len(cases),
            "n_done": 0,
        }, cases)
    except DuplicateError:
        # Another request with the same idempotency key won the race: answer as it did.
        existing = _by_idempotency(store, key_id, idempotency_key or "", request_digest)
        if existing is None:
            raise
        return existing, False
    return get_job(store, job_id), True


def _by_idempotency(
    store: Store, key_id: str, idem: str, request_digest: str
) -> JobRecord | None:
    record = store.job_by_idempotency_key(key_id, idem)
    if record is None:
        return None
    if record.request_digest != request_digest:
        raise ConflictError(
            f"Idempotency-Key {idem!r} was used for a different request (job {record.id}); "
            "use a new key for a new request"
        )
    return record


def resume_job(store: Store, job_id: str) -> JobRecord:
    """Queue a finished or failed job again (ConflictError while it is queued or running)."""
    state = get_job(store, job_id)
    if state.status in ("queued", "running"):
        raise ConflictError(f"job {job_id} is {state.status} already")
    store.update_job(job_id, status="queued", finished_at=None)
    return get_job(store, job_id)


def job_judgments(store: Store, job_id: str) -> list[Judgment]:
    """The judgments a job produced or reused (NotFoundError for an unknown job)."""
    get_job(store, job_id)
    return store.judgments_by_id(store.job_judgment_ids(job_id))


def run_job(db: str | Path, job_id: str, settings: JudgeSettings) -> JobRecord:
    """Judge a job's cases (again, from the store where already judged); record the outcome."""
    with Store(db) as store:
        record = get_job(store, job_id)
        store.update_job(job_id, status="running", started_at=now_iso(), error=None)
        done = 0

        def started(steps: list[Step]) -> None:
            store.update_job(job_id, n_steps=len(steps), n_done=0)

        def progress(outcome: Outcome) -> None:
            nonlocal done
            done += 1
            store.add_job_result(job_id, outcome.judgment.id, done)

        try:
            summary = judge_cases(
                store, store.job_cases(job_id), rubric=record.rubric, models=record.models,
                options=settings.options(record.params), on_start=started, on_done=progress,
                batch_id=job_id, source=f"api job {job_id}",
            )
        except JudgeError as err:
            return _finish(store, job_id, "failed", Counter(), str(err))
        except Exception as err:  # noqa: BLE001 - the worker must record any failure, not die
            log.exception("job %s failed", job_id)
            return _finish(store, job_id, "failed", Counter(), f"internal error: {err!r}")
        counts: Counter[str] = Counter(summary.statuses)
        counts["cached"] = summary.cached
        counts["not_attempted"] = len(summary.errors)
        error = "; ".join(f"case {s.case.id}: {e}" for s, e in summary.errors[:5]) or None
        return _finish(store, job_id, "done", counts, error)


def _finish(
    store: Store, job_id: str, status: str, counts: Counter[str], error: str | None
) -> JobRecord:
    store.update_job(job_id, status=status, counts=dict(counts), error=error,
                     finished_at=now_iso())
    return get_job(store, job_id)


class JobManager:
    """Daemon worker threads running jobs from a queue (no state outside this object).

    Daemon threads: stopping the service mid-job loses nothing, because every finished judgment
    is already stored and the job is resumed at the next start.
    """

    def __init__(self, db: str | Path, settings: JudgeSettings, workers: int = 1) -> None:
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
            for job_id in store.unfinished_jobs():
                self._queue.put(job_id)

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
