"""Request and response bodies of the HTTP API (pydantic, ``extra="forbid"``).

Shared by the server (``judge.api.app``) and the client (``judge.api.client``), so both validate the
same shapes. Pure pydantic: importing this module loads no web framework.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

import judge.judging
import judge.service
from judge.cases import bad_value, case_data
from judge.judging import OrdersOption
from judge.review import ItemView, PairAgreement, StepAgreement
from judge.routing import AuditStatus
from judge.types import (
    ApiKeyRecord,
    Case,
    JobStatus,
    Judgment,
    ReviewItem,
    ReviewLabel,
    Role,
    RoutingDecision,
    Strict,
)

__all__ = [
    "AgreementResponse",
    "AuditStatus",
    "CardDetail",
    "CardInfo",
    "CardUpload",
    "ErrorBody",
    "ErrorResponse",
    "ItemView",
    "Job",
    "JobList",
    "JobRequest",
    "JobResults",
    "JudgeRequest",
    "JudgeResponse",
    "KeyCreate",
    "KeyCreated",
    "KeyList",
    "LabelList",
    "LabelRequest",
    "LabelResponse",
    "PairAgreement",
    "QueueResponse",
    "ReviewItem",
    "ReviewLabel",
    "RouteRequest",
    "RouteResponse",
    "RoutingList",
    "StepAgreement",
    "WhoAmI",
]


#: Every request and response body: unknown fields are errors.
_Body = Strict


class ErrorBody(_Body):
    """What went wrong: a stable code and a message that says what to do."""

    code: str
    message: str
    #: Field-level problems of an invalid request, when there are several.
    details: list[dict[str, Any]] | None = None


class ErrorResponse(_Body):
    """Every error response has this shape."""

    error: ErrorBody


class WhoAmI(_Body):
    """The caller's key: its name (the reviewer name on labels) and role."""

    name: str
    role: str


class KeyCreate(_Body):
    """A new API key: who holds it (the reviewer name on labels) and its role."""

    name: str = Field(min_length=1, max_length=64)
    role: Role


class KeyCreated(_Body):
    """A created key: the plaintext ``key`` is shown this once (only its hash is stored)."""

    id: str
    name: str
    role: Role
    key: str


class KeyList(_Body):
    """Every key (ids, names, roles, dates; never a key or its hash)."""

    keys: list[ApiKeyRecord]


def _check_storable(value: Any, prefix: str = "") -> Any:
    """Refuse what JSON allows but cannot be stored or sent (a lone surrogate, a NUL, nesting
    deeper than judge.cases.MAX_DEPTH): a 422 naming the field, not a 500 mid-judgment."""
    problem = bad_value(value)
    if problem is not None:
        field, message = problem
        raise ValueError(f"{prefix}{field or '(case)'}: {message}")
    return value


def _as_case(value: Any) -> Any:
    """A gold record's Case fields (``judge.cases.case_data``, as ``judge run`` reads a line);
    anything else as it is, for the model to refuse."""
    return case_data(value) if isinstance(value, dict) else value


def _offered(name: str, **bounds: Any) -> Any:
    """A request field of the judging option ``name``: its default and description are
    ``judge.JudgeOptions``' (declared once there); ``bounds`` are the API's own limits."""
    offered = judge.judging.JudgeOptions.offered()[name]
    return Field(default=offered.default, description=offered.help, **bounds)


class JudgeOptions(_Body):
    """How to judge: rubric, judge models (enabled on the server), protocol and sampling.

    The judging fields are judge.service.CALLER_OPTIONS; :meth:`judging_params` gives them to
    ``JudgeSettings.options``, the one mapping of a request to ``judge.JudgeOptions``."""

    rubric: str = Field(default="agent-run-success", max_length=200, description="id or id@version")
    models: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=8,
        description="Judge models (a panel when several); default: the server's first model.",
    )
    orders: OrdersOption = _offered("orders")
    samples: int = _offered("samples", ge=1, le=10)
    temperature: float | None = _offered("temperature", ge=0.0, le=2.0)
    max_tokens: int = _offered("max_tokens", ge=16, le=4096)

    def judging_params(self) -> dict[str, Any]:
        """The caller's judging options (JSON): what a job stores as its parameters."""
        return self.model_dump(mode="json", include=set(judge.service.CALLER_OPTIONS))


class JudgeRequest(JudgeOptions):
    """Judge one case now (synchronously); optionally route the result with a stored card."""

    case: Case = Field(
        description="A case, or a gold record (a case with a label: gold/README.md) as `judge "
        "run` reads it; the label and provenance fields are not judged."
    )
    card: str | None = Field(default=None, max_length=80, description="A stored card digest.")

    @field_validator("case", mode="before")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return _as_case(_check_storable(value))


class JudgeResponse(_Body):
    """The judgments of one case, and its routing decision when a card was given."""

    judgments: list[Judgment]
    routing: list[RoutingDecision] = Field(default_factory=list)
    #: The masked checks of a case with suspect evidence (judge.judging.masking): judged again
    #: with that evidence withheld, for routing; not verdicts on the case.
    checks: list[Judgment] = Field(default_factory=list)
    #: Steps that could not be attempted (e.g. a case the rubric cannot render).
    errors: list[str] = Field(default_factory=list)


class JobRequest(JudgeOptions):
    """A batch of cases to judge in the background."""

    cases: list[Case] = Field(
        min_length=1,
        max_length=10_000,
        description="Cases, or gold records (cases with a label: gold/README.md), as the lines "
        "`judge run` reads; the label and provenance fields are not judged.",
    )

    @field_validator("cases", mode="before")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        if isinstance(value, list):
            for index, item in enumerate(value):
                _check_storable(item, f"{index}.")
            return [_as_case(item) for item in value]
        return value


class Job(_Body):
    """A batch job's state. Judgments are stored as they finish; a job resumes where it stopped."""

    id: str
    status: JobStatus
    rubric: str
    models: list[str]
    n_cases: int
    n_steps: int | None
    n_done: int
    counts: dict[str, int]
    error: str | None
    created_at: datetime
    #: When a worker first started the job (kept when another worker takes it over).
    started_at: datetime | None
    finished_at: datetime | None
    #: Claims of the job by a worker: 2 or more when it was taken over (or resumed).
    attempts: int | None = None
    #: When a worker last took the job over from a dead one (its progress, ``n_done``, counts
    #: the judgments stored by every worker: it does not go back).
    taken_over_at: datetime | None = None


class JobList(_Body):
    """Jobs, newest first."""

    jobs: list[Job]


class JobResults(_Body):
    """A page of a job's judgments. The masked checks of cases with suspect evidence are among
    them (``provenance.masked_from`` names the case they check; routing needs them): they are
    not verdicts on a case of their own."""

    job_id: str
    status: JobStatus
    total: int
    offset: int
    judgments: list[Judgment]


class CardUpload(_Body):
    """A calibration card as written by ``judge calibrate`` (YAML text)."""

    yaml: str = Field(min_length=1)


class CardInfo(_Body):
    """A stored card's bindings and state."""

    digest: str
    model: str
    rubric_id: str | None
    rubric_version: int | None
    kind: str
    created_at: datetime
    expires_at: datetime
    stale: bool
    stale_reason: str | None


class CardDetail(CardInfo):
    """A stored card with its YAML."""

    yaml: str


class RouteRequest(_Body):
    """Apply a stored card to the store's judgments (or one job's)."""

    card: str = Field(max_length=80, description="The card digest (sha256:... or its hex).")
    job_id: str | None = Field(default=None, max_length=80)
    audit_fraction: float = Field(default=0.05, ge=0.0, le=1.0)
    double_fraction: float = Field(default=0.0, ge=0.0, le=1.0)
    seed: int = Field(default=0, ge=0, le=2**31)
    blind: bool = False


class RouteResponse(_Body):
    """What routing decided: counts by decision and reason, and each decision."""

    card_digest: str
    counts: dict[str, int]
    reasons: dict[str, int]
    enqueued: int
    audited: int
    decisions: list[RoutingDecision]


class RoutingList(_Body):
    """Stored routing decisions."""

    decisions: list[RoutingDecision]


class QueueResponse(_Body):
    """Review items awaiting a label, in priority order."""

    items: list[ReviewItem]


class LabelRequest(_Body):
    """A reviewer's label in the canonical frame (pass / fail / cannot_determine, or A / B /
    tie / cannot_determine for pairwise items; located / no_single_step / cannot_determine for
    first-bad-decision items, located with the critical ``step``, 0-based) with an optional
    note."""

    label: str = Field(min_length=1, max_length=32)
    note: str = Field(default="", max_length=4000)
    step: int | None = Field(default=None, ge=0)


class LabelResponse(_Body):
    """The item's state after the label, and the card's audit state when it was an audit."""

    item: ReviewItem
    audit: AuditStatus | None = None


class LabelList(_Body):
    """Labels given."""

    labels: list[ReviewLabel]


class AgreementResponse(_Body):
    """Inter-reviewer agreement per reviewer pair; on first-bad-decision items, agreement on
    the critical step between people and of each judge with people."""

    pairs: list[PairAgreement]
    steps: list[StepAgreement] = []
