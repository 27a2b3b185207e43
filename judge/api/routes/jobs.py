"""``/v1/jobs``: batches of cases judged in the background, resumable, idempotent."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse

import judge.judging
import judge.service
from judge.api import schemas as s
from judge.api.deps import Caller, Config, Db, Limit, Offset, Route, job_owner, resource
from judge.digests import digest
from judge.types import JobRecord


def job_view(record: JobRecord) -> s.Job:
    """The API view of a stored job (who submitted it, and how, stays out)."""
    return s.Job.model_validate(
        record.model_dump(exclude={"key_id", "idempotency_key", "request_digest", "params"})
    )


def submit_job(
    body: s.JobRequest,
    request: Request,
    caller: Caller,
    store: Db,
    config: Config,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> Any:
    """Queue a batch of cases; the same Idempotency-Key and body return the same job."""
    models = config.settings().pick_models(body.models)
    judge.judging.check_case_ids(store, body.cases)
    record, created = judge.service.create_job(
        store,
        cases=body.cases,
        rubric=body.rubric,
        models=models,
        params=body.judging_params(),
        request_digest=digest(body.model_dump(mode="json")),
        key_id=caller.key_id,
        idempotency_key=idempotency_key,
    )
    job = job_view(record)
    if created:
        request.app.state.jobs.submit(job.id)
        return job
    return JSONResponse(
        job.model_dump(mode="json"), status_code=200, headers={"Idempotent-Replayed": "true"}
    )


def jobs(caller: Caller, store: Db, limit: Limit = 50, offset: Offset = 0) -> s.JobList:
    """Jobs, newest first: the caller's own (every job for an admin key)."""
    found = judge.service.list_jobs(store, owner=job_owner(caller), limit=limit, offset=offset)
    return s.JobList(jobs=[job_view(r) for r in found])


def job(job_id: str, caller: Caller, store: Db) -> s.Job:
    """A job's state and progress (404 for a job another key created, unless admin)."""
    return job_view(judge.service.get_job(store, job_id, owner=job_owner(caller)))


def job_results(
    job_id: str, caller: Caller, store: Db, limit: Limit = 100, offset: Offset = 0
) -> s.JobResults:
    """A page of the judgments a job produced (or found already stored)."""
    state = judge.service.get_job(store, job_id, owner=job_owner(caller))
    ids = store.job_judgment_ids(job_id)
    found = store.judgments_by_id(ids[offset : offset + limit])
    found.sort(
        key=lambda j: (j.case_id, j.provenance.model, j.provenance.order or "", j.provenance.sample)
    )
    return s.JobResults(
        job_id=job_id, status=state.status, total=len(ids), offset=offset, judgments=found
    )


def resume_job(job_id: str, request: Request, caller: Caller, store: Db) -> s.Job:
    """Run a finished or failed job again: stored judgments are reused, not paid again."""
    record = judge.service.resume_job(store, job_id, owner=job_owner(caller))
    request.app.state.jobs.submit(job_id)
    return job_view(record)


def router() -> APIRouter:
    """The job routes."""
    replayed = {200: {"model": s.Job, "description": "Replayed (same key)"}}
    return resource(
        "judging",
        Route("POST", "/jobs", submit_job, s.Job, status=202, errors=(409,), responses=replayed),
        Route("GET", "/jobs", jobs, s.JobList),
        Route("GET", "/jobs/{job_id}", job, s.Job, errors=(404,)),
        Route("GET", "/jobs/{job_id}/results", job_results, s.JobResults, errors=(404,)),
        Route("POST", "/jobs/{job_id}/resume", resume_job, s.Job, status=202, errors=(404, 409)),
    )
