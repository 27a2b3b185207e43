"""The typed records that flow through judge: cases, evidence, verdicts and judgments.

Everything read from a file, a request or a model's answer is validated into one of these
pydantic models with ``extra="forbid"``, so a misspelt field is an error, not a silent default.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from judge.base import Strict as Strict
from judge.defaults import ScoringKind

#: A judgment ends in exactly one of these. Only ``ok`` carries a verdict that may enter a
#: confusion matrix; the other three are counted and reported, never turned into pass or fail.
Status = Literal["ok", "abstain", "parse_error", "infra_error"]
STATUSES: tuple[Status, ...] = ("ok", "abstain", "parse_error", "infra_error")

#: The label a judge gives when the evidence does not decide the question. It is allowed by every
#: rubric and turns the judgment's status into ``abstain``.
ABSTAIN_LABEL = "cannot_determine"

CaseKind = Literal["agent_run", "pairwise"]
#: What a calibration card decided for one (case, judge).
Decision = Literal["auto_accept", "auto_reject", "auto_decide", "review"]
ReviewStatus = Literal["open", "adjudicate", "done"]
#: What a review item asks: a verdict's label (its scoring kind), or a failed run's first bad
#: decision (``fbd``: the reviewer names the critical step).
ReviewKind = Literal["binary", "pairwise", "fbd"]
#: The role of an API key (what it may do; the route table is judge/api/roles.py): ``admin``
#: (keys, cards, routing, gold export, every job), ``client`` (submits and reads its own jobs and
#: judgments), ``reviewer`` and ``adjudicator`` (the review queue and page only).
Role = Literal["admin", "client", "reviewer", "adjudicator"]
ROLES: tuple[Role, ...] = ("admin", "client", "reviewer", "adjudicator")
JobStatus = Literal["queued", "running", "done", "failed"]
#: What a trace turn may be, as imported or given in a case file.
TurnKind = Literal[
    "task",
    "diff",
    "message",
    "tool_call",
    "tool_result",
    "test_run",
    "error",
    "final_answer",
    "candidate",
    "system",
    "note",
]
#: What an evidence item may be: a turn's kind, or ``check`` for a deterministic check's firing,
#: which only the judge's own checks write (a case or trace can never supply one).
EvidenceKind = Literal[TurnKind, "check"]
Order = Literal["AB", "BA"]


class TraceTurn(Strict):
    """One turn of an agent's trace, as imported (before evidence selection)."""

    id: str
    role: str
    content: str
    step: int | None = None
    kind: TurnKind | None = None
    #: Where this turn came from in the source file (line, span id, JSON path), for audit.
    source: str | None = None


class Case(Strict):
    """What a judge is asked about: one agent run, or one pair of candidate answers."""

    id: str = Field(min_length=1)
    kind: CaseKind
    task: str
    diff: str | None = None
    trace: list[TraceTurn] = Field(default_factory=list)
    candidates: dict[str, str] | None = None
    #: The agent's model, so that a judge never grades runs of its own model family.
    agent_model: str | None = None
    #: Reporting only: never rendered into a prompt.
    slices: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _pairwise_has_candidates(self) -> Case:
        if self.kind == "pairwise" and (not self.candidates or set(self.candidates) != {"A", "B"}):
            raise ValueError("a pairwise case needs candidates with exactly the keys A and B")
        return self


class EvidenceItem(Strict):
    """One numbered piece of evidence shown to the judge. The judge must cite these ids."""

    id: str  # "E1", "E2", ... in the order shown
    kind: EvidenceKind
    #: The trace turn id (or "task", "diff", "candidate:A") this item was taken from.
    source: str
    role: str | None = None
    step: int | None = None
    text: str
    #: True when the middle of the text was cut (head and tail kept, with a visible marker).
    clipped: bool = False
    #: How many secrets were replaced by redaction markers.
    redactions: int = 0
    #: Reasons this item was flagged (e.g. "injection:ignore-instructions"); flagged items are
    #: still shown, delimited as data, and a flagged judgment is never auto-accepted.
    flags: list[str] = Field(default_factory=list)


#: What a deterministic check found on one case: ``unknown`` when its inputs do not settle it
#: (no diff, a diff that does not parse, a binary hunk), never ``pass`` by default.
CheckStatus = Literal["pass", "fail", "unknown"]


class CheckResult(Strict):
    """One deterministic check's outcome on one case (judge/checks/): versioned code, no model.

    ``hard`` checks (measured precision at least 0.95 on their suites) decide their criterion
    when they fail; every other firing is evidence for the judge and sends the run to review.
    ``evidence`` names what the outcome rests on: evidence ids (``E7``) or diff hunks
    (``diff:tests/test_x.py@@-10,7+10,6``)."""

    id: str
    version: int
    status: CheckStatus
    hard: bool = False
    #: The rubric criterion this check speaks to (e.g. ``environment_integrity``), if any.
    criterion: str | None = None
    evidence: list[str] = Field(default_factory=list)
    reason: str = ""


def check_ref(check: CheckResult) -> str:
    """``check:<id>@<version>``: how a verdict names the check that decided it."""
    return f"check:{check.id}@{check.version}"


#: Verdict fields written only when set (stored judgments, cards and exports keep their bytes).
_UNSET_WHEN_EMPTY = ("diagnosis", "decided_by", "checks")


def _drop_unset(data: Any) -> Any:
    if isinstance(data, dict):
        for name in _UNSET_WHEN_EMPTY:
            if name in data and data[name] in (None, []):
                del data[name]
    return data


class CriterionVerdict(Strict):
    """The verdict on one criterion of a multi-criterion rubric."""

    id: str
    label: str
    hard_gate: bool = False
    cited: list[str] = Field(default_factory=list)
    rationale: str = ""
    #: The layer that decided this criterion: ``check:<id>@<version>`` when a hard check did
    #: (no model was asked), None when the model did.
    decided_by: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _drop_unset(handler(self))


#: Who owns a first bad decision (the component or party whose decision it was).
Owner = Literal["model", "harness", "tool", "environment", "task", "user"]
OWNERS: tuple[Owner, ...] = ("model", "harness", "tool", "environment", "task", "user")
#: A first bad decision stays tentative until a person confirms it (the review page) or a
#: recorded replay from that step recovers the run; nothing else confirms it.
FbdStatus = Literal["tentative", "confirmed"]


class StepClaim(Strict):
    """One step the diagnosis rests on: its 0-based index, evidence id and what it shows."""

    step: int
    id: str
    text: str = ""


class CandidateVerdict(Strict):
    """A step a deterministic check proposed, and what the judge said of it."""

    step: int
    invariant: str
    check: str
    reason: str
    #: confirmed, rejected, or unjudged (the judge did not answer for it).
    judged: Literal["confirmed", "rejected", "unjudged"] = "unjudged"


class Diagnosis(Strict):
    """A first-bad-decision report (an ``fbd`` rubric's answer, in step indexes)."""

    #: The evidence id and 0-based step of the critical step; None when the judge named none.
    critical_step: str | None = None
    step_index: int | None = None
    decision: str = ""
    symptom: StepClaim | None = None
    information_available: list[StepClaim] = Field(default_factory=list)
    #: An id of the rubric's invariant catalogue, or "other" (then ``invariant_note`` says it).
    violated_invariant: str | None = None
    invariant_note: str = ""
    causal_chain: list[StepClaim] = Field(default_factory=list)
    counterfactual: str = ""
    recoverable_at_step: int | None = None
    owner: Owner | None = None
    confidence: Literal["low", "medium", "high"] | None = None
    minimal_fix: str = ""
    candidates: list[CandidateVerdict] = Field(default_factory=list)
    #: Cited ids that name no step shown (made up, or the task where a step was asked for).
    invalid_steps: list[str] = Field(default_factory=list)


class Verdict(Strict):
    """What the judge concluded, in the case's canonical frame."""

    label: str
    #: The label in the frame the judge saw (differs from ``label`` for pairwise order BA).
    label_shown: str | None = None
    #: Probability of every label (abstain included) from the verdict-token distribution;
    #: None where the provider returns no probabilities. Canonical frame.
    label_probs: dict[str, float] | None = None
    #: The confidence used for routing, derived from ``label_probs`` (not self-reported).
    confidence: float | None = None
    cited: list[str] = Field(default_factory=list)
    #: Cited ids that were not among the evidence shown.
    invalid_citations: list[str] = Field(default_factory=list)
    rationale: str = ""
    criteria: list[CriterionVerdict] = Field(default_factory=list)
    failed_hard_gates: list[str] = Field(default_factory=list)
    #: The first-bad-decision report of an ``fbd`` rubric (written only when set, so every
    #: other verdict is stored as before).
    diagnosis: Diagnosis | None = None
    #: The layer that decided the label: ``check:<id>@<version>`` when a hard check failed
    #: the run (the composite verdict, judge.judging.composite), None when the model did.
    #: Calibration cards apply only to verdicts the model decided.
    decided_by: str | None = None
    #: The checks that fired on the case (status ``fail``, hard and soft), shown to the judge
    #: as numbered evidence; written only when there are some.
    checks: list[CheckResult] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _drop_unset(handler(self))

    @property
    def uncited(self) -> bool:
        """The verdict cites no evidence id that was shown (none at all, or only ids that were
        not shown), neither overall nor for any criterion. An abstention is not uncited: it
        says that the evidence cannot decide. Read from what is stored, so judgments stored
        before citations were enforced are judged by the same rule."""
        return (
            self.label != ABSTAIN_LABEL
            and not self.cited
            and not any(c.cited for c in self.criteria)
        )


class Usage(Strict):
    """Tokens, cost and time of the provider calls behind one judgment."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    attempts: int = 0


#: What a facts-only copy of a case (``judge.judging.facts``) names as withheld: all the
#: untrusted free text of its run, reduced to facts written by code.
FACTS_ONLY = "facts-only"


class Provenance(Strict):
    """Everything needed to reproduce, audit and cache a judgment."""

    rubric_id: str
    rubric_version: int
    rubric_digest: str
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    prompt_digest: str
    evidence_digest: str
    selector_version: str
    token_budget: int
    order: Order | None = None
    sample: int = 0
    #: Which of the rubric's prompt variants was used (0 when it has none).
    variant: int = 0
    evidence_ids: list[str] = Field(default_factory=list)
    flagged_evidence: list[str] = Field(default_factory=list)
    judge_version: str
    #: Unflagged evidence that reads a little like instructions to the judge (a suspicion score
    #: below the flag threshold), id -> source (a turn id, or "diff"): the case is judged again
    #: with these items masked.
    suspect_evidence: dict[str, str] = Field(default_factory=dict)
    #: Set on such a masked re-judgment: the case it masks, and the items it withheld. A masked
    #: judgment is a check on its case's verdict, never a verdict of its own (left out of
    #: scores, metrics and run-set rates).
    masked_from: str | None = None
    masked_evidence: list[str] = Field(default_factory=list)

    @property
    def facts_check(self) -> bool:
        """True on the judgment of a case's facts-only copy (``judge.judging.facts``): a check
        whose ``masked_evidence`` is ``[FACTS_ONLY]``, since it withheld every untrusted text."""
        return self.masked_from is not None and FACTS_ONLY in self.masked_evidence


class Judgment(Strict):
    """One judge's answer about one case, complete or saying why not."""

    id: str
    case_id: str
    cache_key: str
    status: Status
    verdict: Verdict | None = None
    #: Why there is no verdict (parse_error, infra_error), with the provider's words.
    error: str | None = None
    provenance: Provenance
    usage: Usage = Field(default_factory=Usage)
    raw_output: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @model_validator(mode="after")
    def _status_matches_verdict(self) -> Judgment:
        if self.status == "ok" and self.verdict is None:
            raise ValueError("status ok needs a verdict")
        if self.status in ("parse_error", "infra_error"):
            if self.verdict is not None:
                raise ValueError(f"status {self.status} must not carry a verdict")
            if not self.error:
                raise ValueError(f"status {self.status} needs an error message")
        return self


# --- Records kept by the store beside judgments -------------------------------------------------


class RoutingDecision(Strict):
    """What a card decided for one (case, judge model), and why."""

    id: str
    card_digest: str
    case_id: str
    model: str
    rubric_id: str
    rubric_version: int
    kind: ScoringKind
    decision: Decision
    #: The label decided without a human (pass, fail, A, B, tie); None for review.
    label: str | None = None
    #: A key of judge.routing.REASONS.
    reason: str
    detail: str
    #: The band that decided (accept, reject, decide), if any.
    band: str | None = None
    #: The pooled score after the card's calibrator (P(pass) or P(A)), if any.
    score: float | None = None
    raw_score: float | None = None
    #: The slice value whose thresholds applied (per-slice cards), or the cascade stage.
    slice: str | None = None
    judgment_ids: list[str]
    #: Also sent to the review queue as an audit of an automatic decision.
    audit: bool = False
    routed_at: datetime


class ReviewItem(Strict):
    """One item of the review queue."""

    id: str
    routing_id: str | None
    card_digest: str | None
    case_id: str
    model: str | None
    rubric_id: str | None
    kind: ReviewKind
    reason: str
    detail: str | None
    audit: bool
    band: str | None
    auto_label: str | None
    score: float | None
    priority: float
    required_labels: int
    blind: bool
    status: ReviewStatus
    final_label: str | None
    created_at: datetime
    closed_at: datetime | None
    #: Labels given so far by reviewers (adjudication not counted).
    n_labels: int = 0
    #: An ``fbd`` item answers a diagnosis, not a routing decision: the judgments it answers,
    #: the step the judge proposed, the step set a card certified (when one did), and the step
    #: people settled on (0-based steps of the run's trace). Empty on other kinds.
    judgment_ids: list[str] = Field(default_factory=list)
    proposed_step: int | None = None
    step_set: list[int] | None = None
    final_step: int | None = None


class ReviewLabel(Strict):
    """A label given by a reviewer or an adjudicator."""

    id: int
    item_id: str
    reviewer: str
    role: Role
    label: str
    note: str
    created_at: datetime
    #: The critical step a label on an ``fbd`` item names (0-based; only with ``located``).
    step: int | None = None


class CardRecord(Strict):
    """A stored calibration card's summary (its YAML is kept beside it)."""

    digest: str
    model: str
    rubric_id: str | None
    rubric_version: int | None
    rubric_digest: str | None
    selector_version: str | None
    kind: ScoringKind
    created_at: datetime
    expires_at: datetime
    added_at: datetime
    stale: bool = False
    stale_reason: str | None = None
    stale_at: datetime | None = None


class JobRecord(Strict):
    """An API job as stored: a batch of cases to judge, who asked, and how far it got."""

    id: str
    key_id: str | None
    idempotency_key: str | None
    request_digest: str
    rubric: str
    models: list[str]
    params: dict[str, Any]
    status: JobStatus
    n_cases: int
    n_steps: int | None = None
    n_done: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    error: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    #: How many times a worker claimed the job (2 or more: it was resumed by another worker).
    attempts: int | None = None
    #: When a worker last took the job over from one that died (its lease expired, or its
    #: replica's heartbeat stopped).
    taken_over_at: datetime | None = None


class ApiKeyRecord(Strict):
    """An API key as listed (never its hash)."""

    id: str
    name: str
    role: Role
    created_at: datetime
    revoked_at: datetime | None = None
