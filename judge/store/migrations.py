"""Append-only schema migrations of the judge store, the same on every backend.

Each migration is a numbered function registered in order; a store records which ones ran in
``_migrations``. Published migrations are never edited: a schema change is a new function. A
migration describes tables and indexes through :class:`Schema`; each backend turns that into
its own DDL (SQLite through sqlite-utils, as every store so far was made; PostgreSQL through
generated statements), so one list of migrations serves both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Table:
    """A table a migration creates: typed columns (str, int or float), its primary key (one
    column or several), the columns that may not be null, and column defaults."""

    name: str
    columns: Mapping[str, type]
    pk: str | tuple[str, ...]
    not_null: frozenset[str] = frozenset()
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def keys(self) -> tuple[str, ...]:
        """The primary key's columns."""
        return (self.pk,) if isinstance(self.pk, str) else tuple(self.pk)


class Schema(ABC):
    """What a migration may do to a store; each backend writes it as its own DDL."""

    def create_table(
        self,
        name: str,
        columns: Mapping[str, type],
        *,
        pk: str | tuple[str, ...],
        not_null: set[str] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        """Create a table with these typed columns (str, int or float) and primary key."""
        self.make_table(
            Table(name, dict(columns), pk, frozenset(not_null or ()), dict(defaults or {}))
        )

    @abstractmethod
    def make_table(self, table: Table) -> None:
        """Write the DDL that creates ``table``."""

    @abstractmethod
    def create_index(self, table: str, columns: Sequence[str], *, unique: bool = False) -> None:
        """Create an index named ``idx_<table>_<columns>``."""

    @abstractmethod
    def add_column(self, table: str, name: str, kind: type) -> None:
        """Add a nullable column of type str, int or float to an existing table."""


Migration = Callable[[Schema], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration; its name is its identity."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def index_name(table: str, columns: Sequence[str]) -> str:
    """The name sqlite-utils gives an index, used by every backend."""
    return f"idx_{table}_{'_'.join(columns)}"


@migration
def m001_judgments(s: Schema) -> None:
    """One row per judgment, keyed by the cache key; the full Judgment JSON kept for audit."""
    s.create_table(
        "judgments",
        {
            "id": str,
            "cache_key": str,
            "case_id": str,
            "status": str,
            "label": str,
            "confidence": float,
            "rubric_id": str,
            "rubric_version": int,
            "rubric_digest": str,
            "model": str,
            "order": str,
            "sample": int,
            "prompt_digest": str,
            "evidence_digest": str,
            "selector_version": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cost_usd": float,
            "latency_s": float,
            "batch_id": str,
            "created_at": str,
            "json": str,
        },
        pk="id",
        not_null={"cache_key", "case_id", "status", "model", "rubric_id", "json"},
    )
    s.create_index("judgments", ["cache_key"], unique=True)
    s.create_index("judgments", ["case_id"])
    s.create_index("judgments", ["rubric_id", "model"])


@migration
def m002_calls(s: Schema) -> None:
    """Every provider call attempt, append-only: what was paid for, and what failed."""
    s.create_table(
        "calls",
        {
            "id": int,
            "cache_key": str,
            "model": str,
            "attempt": int,
            "outcome": str,  # ok | parse_error | infra_error
            "error": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cost_usd": float,
            "latency_s": float,
            "created_at": str,
        },
        pk="id",
    )
    s.create_index("calls", ["cache_key"])


@migration
def m003_cases(s: Schema) -> None:
    """The cases judged (as validated), so judgments can be shown and reviewed later."""
    s.create_table(
        "cases", {"id": str, "kind": str, "digest": str, "json": str, "created_at": str}, pk="id"
    )


@migration
def m004_batches(s: Schema) -> None:
    """Batches (a `judge run` or an API job): what was asked and how it ended."""
    s.create_table(
        "batches",
        {
            "id": str,
            "created_at": str,
            "finished_at": str,
            "rubric": str,
            "model": str,
            "input": str,
            "params": str,
            "status": str,
            "counts": str,
        },
        pk="id",
    )


@migration
def m005_routing(s: Schema) -> None:
    """Calibration cards used for routing, and the routing decision of each (case, judge, card)."""
    s.create_table(
        "cards",
        {
            "digest": str,
            "model": str,
            "rubric_id": str,
            "rubric_version": int,
            "rubric_digest": str,
            "selector_version": str,
            "kind": str,
            "created_at": str,
            "expires_at": str,
            "added_at": str,
            "yaml": str,
            # Set when audit labels push a band's live error bound above the card's alpha.
            "stale": int,
            "stale_reason": str,
            "stale_at": str,
        },
        pk="digest",
        not_null={"yaml", "model"},
        defaults={"stale": 0},
    )
    s.create_table(
        "routing_decisions",
        {
            "id": str,
            "card_digest": str,
            "case_id": str,
            "model": str,
            "rubric_id": str,
            "rubric_version": int,
            "kind": str,
            "decision": str,  # auto_accept | auto_reject | auto_decide | review
            "label": str,  # the label decided automatically; null for review
            "reason": str,
            "detail": str,
            "band": str,
            "score": float,
            "raw_score": float,
            "slice": str,
            "n_judgments": int,
            "judgment_ids": str,
            "audit": int,
            "routed_at": str,
        },
        pk="id",
        not_null={"card_digest", "case_id", "model", "decision", "reason"},
    )
    s.create_index("routing_decisions", ["card_digest", "decision"])
    s.create_index("routing_decisions", ["case_id"])


@migration
def m006_review(s: Schema) -> None:
    """The human review queue and the labels reviewers give."""
    s.create_table(
        "review_items",
        {
            "id": str,
            "routing_id": str,
            "card_digest": str,
            "case_id": str,
            "model": str,
            "rubric_id": str,
            "kind": str,  # binary | pairwise
            "reason": str,
            "detail": str,
            "audit": int,
            "band": str,
            "auto_label": str,
            "score": float,
            "priority": float,
            "required_labels": int,
            "blind": int,
            "status": str,  # open | adjudicate | done
            "final_label": str,
            "created_at": str,
            "closed_at": str,
        },
        pk="id",
        not_null={"case_id", "kind", "status", "required_labels"},
    )
    s.create_index("review_items", ["status", "priority"])
    s.create_table(
        "review_labels",
        {
            "id": int,
            "item_id": str,
            "reviewer": str,
            "role": str,  # reviewer | adjudicator
            "label": str,
            "note": str,
            "created_at": str,
        },
        pk="id",
        not_null={"item_id", "reviewer", "role", "label", "created_at"},
    )
    s.create_index("review_labels", ["item_id", "reviewer"], unique=True)


@migration
def m007_access(s: Schema) -> None:
    """API keys (only a salted hash is kept) and review-page sessions (hashed tokens)."""
    s.create_table(
        "api_keys",
        {
            "id": str,
            "name": str,
            "role": str,  # reviewer | adjudicator
            "salt": str,
            "hash": str,
            "created_at": str,
            "revoked_at": str,
            "last_used_at": str,
        },
        pk="id",
        not_null={"name", "role", "salt", "hash", "created_at"},
    )
    s.create_index("api_keys", ["name"], unique=True)
    s.create_table(
        "sessions",
        {"token_hash": str, "key_id": str, "created_at": str, "expires_at": str},
        pk="token_hash",
        not_null={"key_id", "expires_at"},
    )


@migration
def m008_jobs(s: Schema) -> None:
    """API jobs (a batch of cases to judge), their cases as submitted, and their judgments."""
    s.create_table(
        "jobs",
        {
            "id": str,
            "key_id": str,
            "idempotency_key": str,
            "request_digest": str,
            "rubric": str,
            "models": str,
            "params": str,
            "status": str,  # queued | running | done | failed
            "n_cases": int,
            "n_steps": int,
            "n_done": int,
            "counts": str,
            "error": str,
            "created_at": str,
            "started_at": str,
            "finished_at": str,
        },
        pk="id",
        not_null={"status", "rubric", "models", "request_digest"},
    )
    # Null idempotency keys do not collide (SQLite treats NULLs as distinct in unique indexes).
    s.create_index("jobs", ["key_id", "idempotency_key"], unique=True)
    s.create_table(
        "job_cases",
        {"job_id": str, "position": int, "case_id": str, "json": str},
        pk=("job_id", "position"),
    )
    s.create_table("job_results", {"job_id": str, "judgment_id": str}, pk=("job_id", "judgment_id"))


@migration
def m009_step_keys(s: Schema) -> None:
    """Which cache key a planned step's inputs led to, so that re-running a finished batch
    finds its judgments without selecting evidence and rendering prompts again."""
    s.create_table(
        "step_keys",
        {"step_key": str, "cache_key": str, "created_at": str},
        pk="step_key",
        not_null={"cache_key"},
    )
    s.create_index("step_keys", ["cache_key"])


@migration
def m010_label_plans(s: Schema) -> None:
    """Label plans: the runs drawn for people to label and every run's inclusion probability
    (the plan itself as JSON), keyed by the set of runs they were drawn from."""
    s.create_table(
        "label_plans",
        {
            "id": str,
            "runs_digest": str,
            "runset": str,
            "design": str,  # uniform | active
            "seed": int,
            "budget": int,
            "n_runs": int,
            "n_chosen": int,
            "created_at": str,
            "json": str,
        },
        pk="id",
        not_null={"runs_digest", "design", "json"},
    )
    s.create_index("label_plans", ["runs_digest"])


@migration
def m011_shared_deployment(s: Schema) -> None:
    """What several processes on one database share: job leases (a job is run by the one
    worker holding its unexpired lease, renewed by a heartbeat), claims on cache keys (one
    worker pays for a call while others wait for its judgment) and per-key rate buckets."""
    s.add_column("jobs", "lease_owner", str)
    s.add_column("jobs", "lease_until", str)
    # How many times a worker claimed the job (more than once: resumed after a dead worker).
    s.add_column("jobs", "attempts", int)
    s.add_column("jobs", "finished_by", str)
    s.create_index("jobs", ["status", "lease_until"])
    s.create_table(
        "call_claims",
        {"cache_key": str, "owner": str, "expires_at": str},
        pk="cache_key",
        not_null={"owner", "expires_at"},
    )
    s.create_table(
        "rate_buckets",
        {"key_id": str, "tokens": float, "stamp": float},
        pk="key_id",
        not_null={"tokens", "stamp"},
    )


@migration
def m012_exports(s: Schema) -> None:
    """The export ledger: what was sent to each destination (a platform target), one row per
    verdict key (case, rubric, judge model) with the digest of what was sent, so that an export
    run again sends only what is new or changed, and an interrupted one only the rest."""
    s.create_table(
        "exports",
        {
            "destination": str,
            "verdict_key": str,
            "digest": str,
            "case_id": str,
            "rubric_id": str,
            "model": str,
            "exported_at": str,
        },
        pk=("destination", "verdict_key"),
        not_null={"digest"},
    )


@migration
def m013_replicas(s: Schema) -> None:
    """What replicas of the service share besides jobs: the secrets that sign their forms
    (any replica checks a form another served; the newest signs, older ones are accepted for
    a grace period after a rotation), a heartbeat row per replica (a replica whose heartbeat
    stopped is dead: its jobs are taken over before their leases run out), and when and from
    whom a job was taken over."""
    s.create_table(
        "signing_secrets",
        {"id": str, "secret": str, "created_at": str},
        pk="id",
        not_null={"secret", "created_at"},
    )
    s.create_table(
        "replicas",
        {
            "name": str,  # host:pid:random, the prefix of its workers' lease owners
            "process": str,  # host:pid
            "started_at": str,
            "seen_at": str,
            "stopped_at": str,
        },
        pk="name",
        not_null={"process", "started_at", "seen_at"},
    )
    s.create_index("replicas", ["process"])
    s.add_column("jobs", "taken_over_at", str)
    s.add_column("jobs", "taken_over_from", str)


@migration
def m014_drift_checks(s: Schema) -> None:
    """Drift checks: an anchor set re-judged on demand, one row per check, with the control
    charts' values at that check (``judge.probes.drift``); the full record is kept as JSON."""
    s.create_table(
        "drift_checks",
        {
            "id": str,
            "card_digest": str,
            "anchor_digest": str,
            "model": str,
            "rubric": str,
            "checked_at": str,
            "n": int,
            "n_scored": int,
            "p_pass_mean": float,
            "agreement": float,
            "alarm": int,
            "json": str,
        },
        pk="id",
        not_null={"card_digest", "anchor_digest", "model", "checked_at", "json"},
    )
    s.create_index("drift_checks", ["card_digest", "anchor_digest"])


@migration
def m015_fbd_review(s: Schema) -> None:
    """First-bad-decision review: a review item of kind ``fbd`` answers a diagnosis, not a
    routing decision, so it keeps the judgments it answers (a JSON list), the step the judge
    proposed and the certified step set (a JSON list, when a card gave one); a label on it
    names a step, and a finished item its final step. Every step is 0-based in the run's trace."""
    s.add_column("review_items", "judgment_ids", str)
    s.add_column("review_items", "proposed_step", int)
    s.add_column("review_items", "step_set", str)
    s.add_column("review_items", "final_step", int)
    s.add_column("review_labels", "step", int)


@migration
def m016_failure_clusters(s: Schema) -> None:
    """Failure clusters (``judge failures``): one row per cluster, active or retired (merged
    into another), with its definition and the full record as JSON (condition, members,
    lineage of people's merges, splits and renames)."""
    s.create_table(
        "failure_clusters",
        {
            "cluster_id": str,
            "status": str,
            "definition": str,
            "updated_at": str,
            "json": str,
        },
        pk="cluster_id",
        not_null={"status", "updated_at", "json"},
    )
    s.create_index("failure_clusters", ["status"])
