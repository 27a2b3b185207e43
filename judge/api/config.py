"""How the service runs: one immutable configuration, kept on the app's state."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from judge.defaults import DEFAULT_MODEL
from judge.service import JudgeSettings

MB = 1024 * 1024


@dataclass(frozen=True)
class ServiceConfig:
    """How the service runs. ``models``: judge models callers may use (the first is default)."""

    #: The store: a SQLite path or a database URL.
    db: str | Path
    models: tuple[str, ...] = (DEFAULT_MODEL,)
    api_base: str | None = None
    max_body_bytes: int = 5 * MB
    #: Requests per second per key (token bucket refill) and the bucket size; rate 0: no limit.
    rate_per_s: float = 10.0
    burst: int = 60
    #: Force blind review for every item (items routed with --blind are blind anyway).
    blind: bool = False
    job_workers: int = 1
    #: Seconds a replica's claim on a job lasts without a heartbeat, and between two looks at
    #: the shared queue (None: JUDGE_JOB_LEASE_S / JUDGE_JOB_POLL_S, else 60 s and 1 s).
    job_lease_s: float | None = None
    job_poll_s: float | None = None
    #: Judgments in flight per job (None: JudgeOptions' choice, 1 for the embedded model).
    concurrency: int | None = None
    audit_fraction: float = 0.05
    session_hours: float = 12.0
    #: Origins (``https://judge.example.org``) besides the service's own (its Host header) from
    #: which the review page's forms may be posted: e.g. the public origin behind a TLS proxy.
    trusted_origins: tuple[str, ...] = ()
    #: Addresses or CIDRs of the proxies in front of the service (``127.0.0.1``,
    #: ``10.0.0.0/8``): only from these are X-Forwarded-* and Forwarded headers read (client
    #: address, scheme, host and port); from any other peer they are dropped.
    trusted_proxies: tuple[str, ...] = ()
    #: The origin the review page is served from (``https://judge.example.org``), whatever
    #: Host header the proxy sends: page forms posted from it are accepted.
    public_url: str | None = None

    def page_origins(self) -> tuple[str, ...]:
        """Origins besides the request's own from which page forms are accepted."""
        return (*self.trusted_origins, *([self.public_url] if self.public_url else []))

    def settings(self) -> JudgeSettings:
        """What callers may use and how models are called."""
        return JudgeSettings(
            models=self.models, api_base=self.api_base, concurrency=self.concurrency
        )
