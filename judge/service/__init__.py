"""The shared service's own state: API keys, sessions and rate buckets (``access``), judging
jobs that replicas claim under leases (``jobs``), and the secret that signs the page's forms
(``signing``). The HTTP routes and ``judge keys`` /
``judge serve`` call these."""

from judge.service.access import (
    SESSION_PROBLEMS,
    Principal,
    create_key,
    create_session,
    end_session,
    list_keys,
    revoke_key,
    session_problem,
    take_rate_token,
    verify_key,
    verify_session,
)
from judge.service.jobs import (
    CALLER_OPTIONS,
    JobManager,
    JudgeSettings,
    create_job,
    get_job,
    job_judgments,
    list_jobs,
    resume_job,
)
from judge.service.signing import SharedSecret, rotate_secret

__all__ = [
    "CALLER_OPTIONS",
    "SESSION_PROBLEMS",
    "JobManager",
    "JudgeSettings",
    "Principal",
    "create_job",
    "create_key",
    "create_session",
    "end_session",
    "get_job",
    "job_judgments",
    "list_jobs",
    "list_keys",
    "resume_job",
    "revoke_key",
    "rotate_secret",
    "session_problem",
    "SharedSecret",
    "take_rate_token",
    "verify_key",
    "verify_session",
]
