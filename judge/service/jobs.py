"""Batch jobs: stored as submitted, judged by worker threads (``judge_cases``) under a lease.

A job's cases are kept in ``job_cases`` exactly as submitted, so a job can be re-run at any time:
the runner serves every judgment already stored from the store (same cache key), so resuming
after a crash or a restart pays only for what was not finished. Submitting with an
Idempotency-Key returns the job first created with that key (for the same API key) when the
request is the same, and refuses a different request.

The queue is the store itself, so several service replicas on one database share it: a worker
claims a job (``Store.claim_job``: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL) and holds it under
a lease that a heartbeat renews; a worker that dies stops renewing, and once its lease has
expired (within ``lease_s``, a minute by default) another worker, of any replica, claims the
job and resumes it from the store. Only the lease holder records a job's end.

Each replica also writes a heartbeat row (``Store.beat_replica``, every ``JUDGE_REPLICA_BEAT_S``,
2 s): a replica whose heartbeat is older than ``JUDGE_REPLICA_DEAD_S`` (10 s) is dead, and its
jobs are taken over at once, without waiting for their leases to end. A takeover is logged
(which replica takes which job from which, and how many of its judgments were already stored);
the job keeps its ``started_at``, records ``taken_over_at`` and counts its ``attempts``, and its
progress (``n_done``) counts the judgments stored by every worker, so it never goes back.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from judge.defaults import JOB_LEASE_S, REPLICA_BEAT_S, REPLICA_DEAD_S, env_seconds
from judge.digests import utcnow
from judge.errors import ConflictError, Failure, InputError, JudgeError, NotFoundError
from judge.judging import JudgeOptions, Outcome, Step, code_digest, judge_cases
from judge.judging.claims import dead_here, worker_name
from judge.providers import check_models
from judge.rubrics import load_rubric
from judge.store import DuplicateError, Store, StoreUnavailable
from judge.types import Case, JobRecord, Judgment

log = logging.getLogger("judge.service.jobs")

#: Finished states: a job in one of these is not resumed at start-up.
FINAL = frozenset({"done", "failed"})
#: Seconds between two looks at the queue for jobs submitted to other replicas.
POLL_S = 1.0
#: The judging options a caller of the API chooses (the request fields of ``POST /v1/judge``
#: and ``POST /v1/jobs``, the parameters a job stores); the server sets the others.
CALLER_OPTIONS = ("orders", "samples", "temperature", "max_tokens")


@dataclass(frozen=True)
class JudgeSettings:
    """What the server lets callers use, and how it calls models."""

    models: tuple[str, ...]
    api_base: str | None = None
    concurrency: int | None = None
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

    def options(self, params: Mapping[str, Any]) -> JudgeOptions:
        """The judging options of a request (``POST /v1/judge``, or a job's stored parameters):
        the caller's choice of :data:`CALLER_OPTIONS` (JudgeOptions' defaults for those not
        given) and the server's API base, token budget and concurrency. The one mapping of a
        request to JudgeOptions."""
        chosen = {name: params[name] for name in CALLER_OPTIONS if name in params}
        return JudgeOptions(
            **chosen,
            api_base=self.api_base,
            token_budget=self.token_budget,
            concurrency=self.concurrency,
        )


def get_job(store: Store, job_id: str, *, owner: str | None = None) -> JobRecord:
    """The job with this id; NotFoundError otherwise.

    ``owner``: the API key id asking; a job another key created is "not found" too, with the
    same message, so that job ids cannot be probed (None: any job, for admins and workers).
    """
    record = store.job(job_id)
    if record is None or (owner is not None and record.key_id != owner):
        raise NotFoundError(f"no job {job_id!r}")
    return record


def list_jobs(
    store: Store, *, owner: str | None = None, limit: int = 50, offset: int = 0
) -> list[JobRecord]:
    """Jobs, newest first: those API key ``owner`` created, or every job when None."""
    return store.jobs(key_id=owner, limit=limit, offset=offset)


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
        store.add_job(
            {
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
            },
            cases,
        )
    except DuplicateError:
        # Another request with the same idempotency key won the race: answer as it did.
        existing = _by_idempotency(store, key_id, idempotency_key or "", request_digest)
        if existing is None:
            raise
        return existing, False
    return get_job(store, job_id), True


def _by_idempotency(store: Store, key_id: str, idem: str, request_digest: str) -> JobRecord | None:
    record = store.job_by_idempotency_key(key_id, idem)
    if record is None:
        return None
    if record.request_digest != request_digest:
        raise ConflictError(
            f"Idempotency-Key {idem!r} was used for a different request (job {record.id}); "
            "use a new key for a new request"
        )
    return record


def resume_job(store: Store, job_id: str, *, owner: str | None = None) -> JobRecord:
    """Queue a finished or failed job again (ConflictError while it is queued or running;
    NotFoundError for a job ``owner`` did not create, as in :func:`get_job`)."""
    get_job(store, job_id, owner=owner)
    if not store.requeue_job(job_id):
        raise ConflictError(f"job {job_id} is {get_job(store, job_id).status} already")
    return get_job(store, job_id)


def job_judgments(store: Store, job_id: str, *, owner: str | None = None) -> list[Judgment]:
    """The judgments a job produced or reused (NotFoundError for an unknown job, or one
    ``owner`` did not create)."""
    get_job(store, job_id, owner=owner)
    return store.judgments_by_id(store.job_judgment_ids(job_id))


class _Heartbeat:
    """Renews a job's lease every third of ``lease_s`` until stopped, in its own thread."""

    def __init__(self, db: str | Path, job_id: str, owner: str, lease_s: float) -> None:
        self.db, self.job_id, self.owner, self.lease_s = db, job_id, owner, lease_s
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._beat, name=f"lease-{job_id}", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                with Store(self.db) as store:
                    if not store.renew_job_lease(self.job_id, self.owner, self.lease_s):
                        self.lost = True
                        log.warning("job %s: lease lost by %s", self.job_id, self.owner)
                        return
            except Failure as err:  # the database is away: try again at the next beat
                log.warning("job %s: lease not renewed: %s", self.job_id, err)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def run_job(
    db: str | Path,
    job_id: str,
    settings: JudgeSettings,
    *,
    owner: str | None = None,
    lease_s: float | None = None,
) -> JobRecord:
    """Judge a job's cases (again, from the store where already judged); record the outcome.

    ``owner``: the worker that claimed the job (``Store.claim_job``); its lease is renewed
    while the job runs and only it records the end. Without one, the job is claimed here
    (ConflictError when another worker holds an unexpired lease on it)."""
    lease = lease_s or env_seconds("JUDGE_JOB_LEASE_S", JOB_LEASE_S)
    with Store(db) as store:
        record = get_job(store, job_id)
        if owner is None:
            owner = worker_name()
            if not _claim_this(store, job_id, owner, lease):
                raise ConflictError(f"job {job_id} is being run by another worker")
        planned = 0

        def started(steps: list[Step]) -> None:
            # Called again with the masked checks of cases with suspect evidence.
            nonlocal planned
            planned += len(steps)
            store.update_job(job_id, n_steps=planned)

        def progress(outcome: Outcome) -> None:
            # Progress is what is stored, by this worker or one before it: never goes back.
            store.add_job_result(job_id, outcome.judgment.id)

        with _Heartbeat(db, job_id, owner, lease):
            try:
                summary = judge_cases(
                    store,
                    store.job_cases(job_id),
                    rubric=record.rubric,
                    models=record.models,
                    options=settings.options(record.params),
                    on_start=started,
                    on_done=progress,
                    batch_id=job_id,
                    source=f"api job {job_id}",
                )
            except StoreUnavailable:
                # The database went away: the job keeps its lease until it expires, then a
                # worker (this one or another) resumes it from what was stored.
                raise
            except JudgeError as err:
                return _finish(store, job_id, owner, "failed", Counter(), str(err))
            except Exception as err:  # noqa: BLE001 - the worker must record any failure
                log.exception("job %s failed", job_id)
                return _finish(
                    store, job_id, owner, "failed", Counter(), f"internal error: {err!r}"
                )
        counts: Counter[str] = Counter(summary.statuses)
        counts["cached"] = summary.cached
        counts["not_attempted"] = len(summary.errors)
        error = "; ".join(f"case {s.case.id}: {e}" for s, e in summary.errors[:5]) or None
        return _finish(store, job_id, owner, "done", counts, error)


def _claim_this(store: Store, job_id: str, owner: str, lease_s: float) -> bool:
    """Claim one given job (a direct ``run_job`` call), queueing it again if it had ended."""
    if get_job(store, job_id).status in FINAL:
        store.requeue_job(job_id)
    return store.claim_job(owner, lease_s, job_id=job_id) == job_id


def _finish(
    store: Store, job_id: str, owner: str, status: str, counts: Counter[str], error: str | None
) -> JobRecord:
    if not store.finish_job(job_id, owner, status=status, counts=dict(counts), error=error):
        log.warning("job %s ended here but its lease had passed to another worker", job_id)
    return get_job(store, job_id)


class JobManager:
    """Worker threads that claim jobs from the store and run them under a lease.

    Every replica sharing the store runs one; a job is claimed by exactly one worker of one
    replica. ``submit`` wakes a local worker at once; jobs submitted to other replicas are found
    by polling every ``poll_s`` seconds. Daemon threads: stopping the service mid-job loses
    nothing, because every finished judgment is already stored, and the job is resumed once its
    lease has expired (by this replica when it starts again, or by another)."""

    def __init__(
        self,
        db: str | Path,
        settings: JudgeSettings,
        workers: int = 1,
        *,
        lease_s: float | None = None,
        poll_s: float | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.lease_s = lease_s or env_seconds("JUDGE_JOB_LEASE_S", JOB_LEASE_S)
        self.poll_s = poll_s or env_seconds("JUDGE_JOB_POLL_S", POLL_S)
        self.beat_s = env_seconds("JUDGE_REPLICA_BEAT_S", REPLICA_BEAT_S)
        self.dead_s = env_seconds("JUDGE_REPLICA_DEAD_S", REPLICA_DEAD_S)
        #: This replica's name in the jobs' lease columns and in the replicas table.
        self.owner = worker_name()
        self._beat = threading.Thread(target=self._beat_loop, name="judge-replica", daemon=True)
        self._wake = threading.Condition()
        self._pending = 0
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"judge-job-{i}", daemon=True)
            for i in range(max(1, workers))
        ]
        self._started = False

    def start(self) -> None:
        """Start the workers: they claim unfinished jobs (after a restart) and new ones."""
        # The code digest parses the judge's sources with ast.parse, which CPython 3.11 cannot
        # run in two threads at once ("AST constructor recursion depth mismatch", seen when
        # job workers and request threads started judging together): computed before them.
        code_digest()
        if self._started:
            return
        self._started = True
        try:
            with Store(self.db) as store:
                store.register_replica(self.owner, self.owner.rsplit(":", 1)[0])
                for row in store.job_leases():
                    # A job whose worker was a process of this machine that is gone (this
                    # service, restarted) is resumed now, not when its lease expires.
                    owner = row["lease_owner"]
                    if row["status"] == "running" and owner and dead_here(owner.split("/")[0]):
                        store.expire_job_lease(row["id"], owner)
        except Failure as err:
            log.warning("leases of dead workers not checked: %s", err)
        self._beat.start()
        for thread in self._threads:
            thread.start()

    def _beat_loop(self) -> None:
        """This replica's heartbeat: its row in the replicas table, every ``beat_s``."""
        beats = 0
        while not self._stopping.wait(self.beat_s):
            try:
                with Store(self.db) as store:
                    if not store.beat_replica(self.owner):
                        store.register_replica(self.owner, self.owner.rsplit(":", 1)[0])
                    beats += 1
                    if beats % 1000 == 1:  # now and then: rows of replicas long gone
                        store.forget_replicas(_ago(max(3600.0, 10 * self.dead_s)))
            except Exception as err:  # noqa: BLE001 - the database may be away: beat again
                log.warning("replica heartbeat not written: %s", err)

    def submit(self, job_id: str) -> None:
        """A job was queued: wake a worker to claim it."""
        with self._wake:
            self._pending += 1
            self._wake.notify()

    def stop(self) -> None:
        """Ask the workers to stop after their current job; this replica's heartbeat stops
        and its row says so, so that other replicas take over what it leaves at once."""
        self._stopping.set()
        with self._wake:
            self._wake.notify_all()
        if self._started:
            try:
                with Store(self.db) as store:
                    store.stop_replica(self.owner)
            except Exception as err:  # noqa: BLE001 - its heartbeat lapses on its own
                log.warning("replica not marked stopped: %s", err)

    def _work(self, index: int) -> None:
        owner = f"{self.owner}/{index}"
        while not self._stopping.is_set():
            job_id = None
            try:
                with Store(self.db) as store:
                    job_id = store.claim_job(owner, self.lease_s, dead_after_s=self.dead_s)
                    if job_id is not None:
                        _log_takeover(store, job_id, owner)
            except Exception:  # noqa: BLE001 - the database may be away: look again later
                log.exception("no job could be claimed")
            if job_id is None:
                with self._wake:
                    if self._pending == 0 and not self._stopping.is_set():
                        self._wake.wait(self.poll_s)
                    self._pending = max(0, self._pending - 1)
                continue
            try:
                run_job(self.db, job_id, self.settings, owner=owner, lease_s=self.lease_s)
            except Exception:  # noqa: BLE001 - keep the worker alive for the next job
                log.exception("job %s could not be run", job_id)


def _ago(seconds: float) -> str:
    return (utcnow() - timedelta(seconds=seconds)).isoformat(timespec="microseconds")


def _log_takeover(store: Store, job_id: str, owner: str) -> None:
    """Say so when a claim took a job over from another worker (which, and how far it got)."""
    row = next((r for r in store.job_leases() if r["id"] == job_id), None)
    if row is None or not row["taken_over_from"] or (row["attempts"] or 0) < 2:
        return
    taken = datetime.fromisoformat(row["taken_over_at"]) if row["taken_over_at"] else None
    if taken is None or (utcnow() - taken).total_seconds() > 60:
        return  # an earlier takeover: this claim followed a requeue
    log.warning(
        "job %s taken over by %s from %s (its replica's heartbeat stopped or its lease "
        "expired); %d judgment(s) of %s already stored are served from the store; attempt %d",
        job_id,
        owner,
        row["taken_over_from"],
        store.job_result_count(job_id),
        row["n_steps"] if row.get("n_steps") is not None else "?",
        row["attempts"],
    )
