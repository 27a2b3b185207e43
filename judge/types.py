"""The typed records that flow through judge: cases, evidence, verdicts and judgments.

Everything read from a file, a request or a model's answer is validated into one of these
pydantic models with ``extra="forbid"``, so a misspelt field is an error, not a silent default.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: A judgment ends in exactly one of these. Only ``ok`` carries a verdict that may enter a
#: confusion matrix; the other three are counted and reported, never turned into pass or fail.
Status = Literal["ok", "abstain", "parse_error", "infra_error"]
STATUSES: tuple[Status, ...] = ("ok", "abstain", "parse_error", "infra_error")

#: The label a judge gives when the evidence does not decide the question. It is allowed by every
#: rubric and turns the judgment's status into ``abstain``.
ABSTAIN_LABEL = "cannot_determine"

CaseKind = Literal["agent_run", "pairwise"]
EvidenceKind = Literal[
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
Order = Literal["AB", "BA"]


class Strict(BaseModel):
    """Base for every record: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


class TraceTurn(Strict):
    """One turn of an agent's trace, as imported (before evidence selection)."""

    id: str
    role: str
    content: str
    step: int | None = None
    kind: EvidenceKind | None = None
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
        if self.kind == "pairwise" and (
            not self.candidates or set(self.candidates) != {"A", "B"}
        ):
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


class CriterionVerdict(Strict):
    """The verdict on one criterion of a multi-criterion rubric."""

    id: str
    label: str
    hard_gate: bool = False
    cited: list[str] = Field(default_factory=list)
    rationale: str = ""


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


class Usage(Strict):
    """Tokens, cost and time of the provider calls behind one judgment."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    attempts: int = 0


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
