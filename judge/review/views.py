"""What the review page shows for an item: the case, the evidence the judge saw (cited items
first), the diff by line, the candidates in the item's display order, and the judges' verdicts
(never on blind items)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from judge import kinds
from judge.errors import JudgeError, NotFoundError
from judge.evidence import select_evidence
from judge.redact import redact
from judge.review.queue import blinded, display_swapped, get_item, labels, to_shown
from judge.routing.reasons import REASONS
from judge.rubrics import load_rubric
from judge.store import Store
from judge.types import Case, Judgment, ReviewItem, ReviewLabel, Role


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DiffLine(_Model):
    """One line of a unified diff with its kind, for colouring."""

    kind: Literal["add", "del", "hunk", "file", "ctx"]
    text: str


class EvidenceView(_Model):
    """One evidence item as shown to the judge (redacted, possibly clipped)."""

    id: str
    kind: str
    source: str
    role: str | None
    text: str
    clipped: bool
    flags: list[str]
    #: Cited by a judge (always False on blind items).
    cited: bool


class VerdictView(_Model):
    """One judgment of the item (never shown on blind items)."""

    judgment_id: str
    model: str
    order: str | None
    sample: int
    status: str
    #: The label in the frame the reviewer sees.
    label: str | None
    confidence: float | None
    rationale: str
    cited: list[str]
    error: str | None


class CandidateView(_Model):
    """A pairwise candidate under the letter the reviewer sees."""

    shown: str
    canonical: str
    text: str


class ItemView(_Model):
    """Everything the review page shows for one item."""

    item: ReviewItem
    blind: bool
    task: str
    diff: list[DiffLine] | None
    candidates: list[CandidateView]
    evidence: list[EvidenceView]
    evidence_note: str | None
    verdicts: list[VerdictView]
    agent_model: str | None
    reason_text: str | None
    #: Labels the reviewer may give, in the shown frame.
    choices: list[str]
    #: Earlier labels: shown only to an adjudicator (reviewers label independently).
    earlier_labels: list[ReviewLabel]


def diff_lines(diff: str) -> list[DiffLine]:
    """Classify each line of a unified diff (file headers, hunks, additions, deletions)."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ")):
            kind: Literal["add", "del", "hunk", "file", "ctx"] = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append(DiffLine(kind=kind, text=line))
    return out


def _judgments_of(store: Store, item: ReviewItem) -> list[Judgment]:
    return store.judgments_by_id(store.decision_judgment_ids(item.routing_id))


def _evidence(
    case: Case, judgments: Sequence[Judgment], cited: set[str], blind: bool
) -> tuple[list[EvidenceView], str | None]:
    visible: Sequence[str] = kinds.for_case(case.kind).visible
    budget = judgments[0].provenance.token_budget if judgments else 4000
    if judgments:
        try:
            p = judgments[0].provenance
            visible = load_rubric(f"{p.rubric_id}@{p.rubric_version}").spec.evidence_visible
        except JudgeError:
            pass  # a rubric unknown here: fall back to the kind's usual parts
    try:
        chosen = select_evidence(case, visible=visible, token_budget=budget)
    except JudgeError as err:
        return [], f"evidence could not be rebuilt: {err}"
    note = None
    digests = {j.provenance.evidence_digest for j in judgments}
    if judgments and chosen.digest not in digests:
        note = "the evidence rebuilt here differs from what the judge saw (selector changed)"
    views = [
        EvidenceView(
            id=e.id,
            kind=e.kind,
            source=e.source,
            role=e.role,
            text=e.text,
            clipped=e.clipped,
            flags=list(e.flags),
            cited=(e.id in cited and not blind),
        )
        for e in chosen.items
        # Pairwise candidates are shown on their own, in the item's display order.
        if e.kind != "candidate"
    ]
    if not blind:
        views.sort(key=lambda v: not v.cited)
    return views, note


def item_view(
    store: Store,
    item_id: str,
    *,
    force_blind: bool = False,
    viewer_role: Role = "reviewer",
) -> ItemView:
    """The page's view of a review item (NotFoundError for an unknown item)."""
    item = get_item(store, item_id)
    case = store.get_case(item.case_id)
    if case is None:
        raise NotFoundError(f"review item {item_id}: its case {item.case_id!r} is not stored")
    blind = item.blind or force_blind
    judgments = _judgments_of(store, item)
    cited = {c for j in judgments if j.verdict for c in j.verdict.cited}
    evidence, note = _evidence(case, judgments, cited, blind)
    candidates: list[CandidateView] = []
    if case.candidates:
        order = ["B", "A"] if display_swapped(item.id) else ["A", "B"]
        candidates = [
            CandidateView(shown=shown, canonical=canon, text=redact(case.candidates[canon])[0])
            for shown, canon in zip(("A", "B"), order, strict=True)
        ]
    verdicts = [] if blind else [_verdict_view(item, j) for j in judgments]
    # The label names are the same in both frames; only their meaning swaps with the order.
    choices = list(kinds.kind(item.kind).review_labels)
    earlier = (
        labels(store, item_id=item_id)
        if (viewer_role == "adjudicator" and item.status == "adjudicate")
        else []
    )
    return ItemView(
        item=blinded(item) if blind else item,
        blind=blind,
        task=redact(case.task)[0],
        diff=diff_lines(redact(case.diff)[0]) if case.diff else None,
        candidates=candidates,
        evidence=evidence,
        evidence_note=note,
        verdicts=verdicts,
        agent_model=None if blind else case.agent_model,
        reason_text=None
        if blind
        else (
            REASONS.get(item.reason, "sampled to audit an automatic decision")
            + (f": {item.detail}" if item.detail else "")
        ),
        choices=choices,
        earlier_labels=[x.model_copy(update={"label": to_shown(item, x.label)}) for x in earlier],
    )


def _verdict_view(item: ReviewItem, j: Judgment) -> VerdictView:
    v = j.verdict
    return VerdictView(
        judgment_id=j.id,
        model=j.provenance.model,
        order=j.provenance.order,
        sample=j.provenance.sample,
        status=j.status,
        label=to_shown(item, v.label) if v else None,
        confidence=v.confidence if v else None,
        rationale=v.rationale if v else "",
        cited=list(v.cited) if v else [],
        error=j.error,
    )

