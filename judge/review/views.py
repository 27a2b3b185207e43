"""What the review page shows for an item: the case, the evidence the judge saw (cited items
first; the task and the diff once, under their evidence ids), tool calls with their arguments
pretty-printed, the diff by line with line numbers (and paired side by side), the candidates in
the item's display order, and the judges' verdicts labelled by prompt variant and answer order
(never on blind items). A first-bad-decision item shows every step of the run as a timeline
instead of the evidence, with the diagnosis beside it (``judge.review.fbd``)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from judge import kinds
from judge.errors import JudgeError, NotFoundError
from judge.evidence import select_evidence
from judge.review.blindness import ReviewerQueue
from judge.review.fbd import FBD_REASONS, FbdView, fbd_view
from judge.review.firings import FiringView, firing_views, with_firings
from judge.review.queue import (
    blinded,
    display_swapped,
    get_item,
    item_judgment_ids,
    labels,
    to_shown,
)
from judge.routing.reasons import REASONS
from judge.rubrics import load_rubric
from judge.safety.redact import redact
from judge.store import Store
from judge.types import Case, Judgment, ReviewItem, ReviewLabel, Role, Strict


class DiffLine(Strict):
    """One line of a unified diff with its kind, for colouring, and its line numbers in the
    old and the new file (None where the line is not in that file)."""

    kind: Literal["add", "del", "hunk", "file", "ctx"]
    text: str
    old: int | None = None
    new: int | None = None


class DiffRow(Strict):
    """One row of the side-by-side diff: the old line (left) and the new line (right); a
    deletion is paired with the addition that replaced it."""

    kind: Literal["pair", "hunk", "file"]
    left: DiffLine | None
    right: DiffLine | None


class ToolArg(Strict):
    """One argument of a tool call, as a reviewer reads it: strings as they are (real quotes
    and line breaks), other values as indented JSON."""

    name: str
    value: str


class EvidenceView(Strict):
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
    #: A tool call read as ``[Tool] {json arguments}``: the tool and its arguments.
    tool: str | None = None
    args: list[ToolArg] = []
    #: "task" when this turn repeats the task word for word (shown once, as the task).
    same_as: str | None = None


class VerdictView(Strict):
    """One judgment of the item (never shown on blind items)."""

    judgment_id: str
    model: str
    order: str | None
    sample: int
    status: str
    #: The label in the frame the reviewer sees.
    label: str | None
    #: The probability of that label from the model's token distribution; None when the
    #: provider returned no log-probabilities.
    confidence: float | None
    rationale: str
    cited: list[str]
    error: str | None
    #: Ids the judge cited that it was not shown.
    invalid_citations: list[str] = []
    #: The verdict cites no evidence id shown (``Verdict.uncited``): the page says so.
    uncited: bool = False
    #: Which of the rubric's prompt variants asked (0-based), of how many, and its wording.
    variant: int = 0
    n_variants: int = 1
    variant_text: str | None = None


class CandidateView(Strict):
    """A pairwise candidate under the letter the reviewer sees."""

    shown: str
    canonical: str
    text: str


class ItemView(Strict):
    """Everything the review page shows for one item."""

    item: ReviewItem
    blind: bool
    task: str
    diff: list[DiffLine] | None
    candidates: list[CandidateView]
    #: The evidence other than the task and the diff (those are shown once, on their own).
    evidence: list[EvidenceView]
    evidence_note: str | None
    verdicts: list[VerdictView]
    agent_model: str | None
    reason_text: str | None
    #: Labels the reviewer may give, in the shown frame.
    choices: list[str]
    #: Earlier labels: shown only to an adjudicator (reviewers label independently).
    earlier_labels: list[ReviewLabel]
    #: The evidence ids under which the judge saw the task and the diff, and whether a judge
    #: cited them (never on blind items).
    task_id: str | None = None
    task_cited: bool = False
    diff_id: str | None = None
    diff_cited: bool = False
    #: The diff paired side by side.
    diff_rows: list[DiffRow] | None = None
    #: Digits of the diff's longest line number (the page sizes its number columns by it).
    diff_digits: int = 1
    #: The blind item of the same case that still awaits this reviewer's label, and so hides
    #: the judge here too (``judge.review.blindness``); None when there is none.
    blind_item: str | None = None
    #: A first-bad-decision item: the run's steps as a timeline, the diagnosis beside it.
    fbd: FbdView | None = None
    #: The deterministic checks that fired on the run, with the hunks they rest on (never on
    #: blind items: a hard check's decision is a verdict).
    firings: list[FiringView] = Field(default_factory=list)


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def diff_lines(diff: str) -> list[DiffLine]:
    """Classify each line of a unified diff (file headers, hunks, additions, deletions) and
    number it in the old and the new file."""
    out = []
    old = new = 0
    in_hunk = False
    lines = diff.splitlines()
    for i, line in enumerate(lines):
        hunk = _HUNK.match(line)
        following = lines[i + 1] if i + 1 < len(lines) else ""
        # A file header: "diff ...", or "--- a" followed by "+++ b" (then "+++ b" itself).
        header = (
            line.startswith("diff ")
            or (line.startswith("--- ") and following.startswith("+++ "))
            or (line.startswith("+++ ") and i > 0 and lines[i - 1].startswith("--- "))
        )
        if hunk:
            old, new, in_hunk = int(hunk.group(1)), int(hunk.group(2)), True
            out.append(DiffLine(kind="hunk", text=line))
        elif header or (
            not in_hunk
            and line.startswith(("index ", "new file", "deleted file", "similarity", "rename"))
        ):
            in_hunk = False
            out.append(DiffLine(kind="file", text=line))
        elif line.startswith("+"):
            out.append(DiffLine(kind="add", text=line, new=new if in_hunk else None))
            new += 1
        elif line.startswith("-"):
            out.append(DiffLine(kind="del", text=line, old=old if in_hunk else None))
            old += 1
        else:
            numbered = in_hunk and not line.startswith("\\")  # "\ No newline at end of file"
            out.append(
                DiffLine(
                    kind="ctx",
                    text=line,
                    old=old if numbered else None,
                    new=new if numbered else None,
                )
            )
            if numbered:
                old, new = old + 1, new + 1
    return out


def side_by_side(lines: Sequence[DiffLine]) -> list[DiffRow]:
    """The diff as rows of (old, new): context on both sides, each run of deletions paired
    line by line with the run of additions that follows it."""
    rows: list[DiffRow] = []
    dels: list[DiffLine] = []
    adds: list[DiffLine] = []

    def flush() -> None:
        for i in range(max(len(dels), len(adds))):
            rows.append(
                DiffRow(
                    kind="pair",
                    left=dels[i] if i < len(dels) else None,
                    right=adds[i] if i < len(adds) else None,
                )
            )
        dels.clear()
        adds.clear()

    for line in lines:
        if line.kind == "del":
            if adds:
                flush()
            dels.append(line)
        elif line.kind == "add":
            adds.append(line)
        else:
            flush()
            if line.kind == "ctx":
                rows.append(DiffRow(kind="pair", left=line, right=line))
            else:
                rows.append(DiffRow(kind=line.kind, left=line, right=None))
    flush()
    return rows


_TOOL_CALL = re.compile(r"\A\[([^\]\n]{1,80})\] (\{.*\})\s*\Z", re.DOTALL)


def tool_arguments(text: str) -> tuple[str, list[ToolArg]] | None:
    """(tool, arguments) of a tool call written ``[Tool] {json}`` (as the importers write
    them); None for any other text, or arguments that are not a JSON object."""
    found = _TOOL_CALL.match(text)
    if not found:
        return None
    try:
        args: Any = json.loads(found.group(2))
    except ValueError:
        return None
    if not isinstance(args, dict):
        return None
    out = [
        ToolArg(
            name=str(k),
            value=v if isinstance(v, str) else json.dumps(v, indent=2, ensure_ascii=False),
        )
        for k, v in args.items()
    ]
    return found.group(1), out


def _judgments_of(store: Store, item: ReviewItem) -> list[Judgment]:
    return store.judgments_by_id(item_judgment_ids(store, item))


def _evidence(
    case: Case, judgments: Sequence[Judgment], cited: set[str], blind: bool, task: str
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
        selected = select_evidence(case, visible=visible, token_budget=budget)
        chosen = with_firings(selected, judgments)
    except JudgeError as err:
        return [], f"evidence could not be rebuilt: {err}"
    note = None
    digests = {j.provenance.evidence_digest for j in judgments}
    if judgments and chosen.digest not in digests:
        note = "the evidence rebuilt here differs from what the judge saw (selector changed)"
    views = []
    for e in chosen.items:
        if e.kind == "candidate":
            continue  # pairwise candidates are shown on their own, in the display order
        call = tool_arguments(e.text) if e.kind == "tool_call" else None
        views.append(
            EvidenceView(
                id=e.id,
                kind=e.kind,
                source=e.source,
                role=e.role,
                text=e.text,
                clipped=e.clipped,
                flags=list(e.flags),
                cited=(e.id in cited and not blind),
                tool=call[0] if call else None,
                args=call[1] if call else [],
                same_as="task"
                if e.kind not in ("task", "diff")
                and task.strip()
                and e.text.strip() == task.strip()
                else None,
            )
        )
    if not blind:
        views.sort(key=lambda v: not v.cited)
    return views, note


def item_view(
    store: Store,
    item_id: str,
    *,
    force_blind: bool = False,
    viewer_role: Role = "reviewer",
    viewer: ReviewerQueue | None = None,
) -> ItemView:
    """The page's view of a review item (NotFoundError for an unknown item).

    With ``viewer`` (the queue of the reviewer looking), the item is blind also when another
    item of its case is blind and awaits that reviewer's label (``judge.review.blindness``).
    """
    item = get_item(store, item_id)
    case = store.get_case(item.case_id)
    if case is None:
        raise NotFoundError(f"review item {item_id}: its case {item.case_id!r} is not stored")
    blind = item.blind or force_blind or (viewer is not None and viewer.blind(item))
    # Blind only because of another item of the case: name it (label it and the judge shows).
    own = item.blind or force_blind or (viewer is not None and viewer.force_blind)
    blocking = viewer.blocking(item) if viewer is not None and not own else None
    judgments = _judgments_of(store, item)
    cited = {c for j in judgments if j.verdict for c in j.verdict.cited}
    task = redact(case.task)[0]
    fbd = None
    evidence: list[EvidenceView] = []
    note: str | None = None
    if kinds.kind(item.kind).steps:  # every step is on the timeline: no evidence selection
        fbd = fbd_view(item, case, judgments, blind)
    else:
        evidence, note = _evidence(case, judgments, cited, blind, task)
    # The task and the diff are shown once, on their own, under their evidence ids.
    task_item = next((e for e in evidence if e.kind == "task"), None)
    diff_item = next((e for e in evidence if e.kind == "diff"), None)
    # The label names are the same in both frames; only their meaning swaps with the order.
    earlier = (
        labels(store, item_id=item_id)
        if (viewer_role == "adjudicator" and item.status == "adjudicate")
        else []
    )
    return ItemView(
        item=blinded(item) if blind else item,
        blind=blind,
        task=task,
        candidates=_candidates(item, case),
        evidence=[e for e in evidence if e.kind not in ("task", "diff")],
        evidence_note=note,
        verdicts=[] if blind else _verdict_views(item, judgments),
        agent_model=None if blind else case.agent_model,
        reason_text=None if blind else reason_text(item),
        choices=list(kinds.kind(item.kind).review_labels),
        earlier_labels=[x.model_copy(update={"label": to_shown(item, x.label)}) for x in earlier],
        task_id=task_item.id if task_item else None,
        task_cited=bool(task_item and task_item.cited),
        diff_id=diff_item.id if diff_item else None,
        diff_cited=bool(diff_item and diff_item.cited),
        blind_item=blocking,
        fbd=fbd,
        firings=[] if blind else firing_views(case.diff, judgments),
        **_diff_fields(case),
    )


def _candidates(item: ReviewItem, case: Case) -> list[CandidateView]:
    """A pair's candidates in the item's display order (none for an agent run)."""
    if not case.candidates:
        return []
    order = ["B", "A"] if display_swapped(item.id) else ["A", "B"]
    return [
        CandidateView(shown=shown, canonical=canon, text=redact(case.candidates[canon])[0])
        for shown, canon in zip(("A", "B"), order, strict=True)
    ]


def _verdict_views(item: ReviewItem, judgments: Sequence[Judgment]) -> list[VerdictView]:
    """The judges' verdicts, by model, prompt variant, answer order and sample."""
    variants = _variant_texts(judgments)
    return sorted(
        (_verdict_view(item, j, variants) for j in judgments),
        key=lambda v: (v.model, v.variant, v.order or "", v.sample),
    )


def _diff_fields(case: Case) -> dict[str, Any]:
    """The run's diff by line, side by side, and the width of its line-number columns."""
    diff = diff_lines(redact(case.diff)[0]) if case.diff else None
    return {
        "diff": diff,
        "diff_rows": side_by_side(diff) if diff else None,
        "diff_digits": len(
            str(max((n for d in diff or [] for n in (d.old, d.new) if n), default=0))
        ),
    }


def reason_text(item: ReviewItem) -> str:
    """Why a person sees the item, in words, each thing said once: the reason's meaning, then
    the routing detail in brackets (an audit: the automatic decision it checks)."""
    if item.audit:
        checked = (item.detail or "").removeprefix("audit of ").strip()
        text = "a sample of the card's automatic decisions, checked by people"
        return f"{text}: {checked}" if checked else text
    text = FBD_REASONS.get(item.reason) or REASONS.get(item.reason, item.reason.replace("_", " "))
    return f"{text} ({item.detail})" if item.detail else text


def _variant_texts(judgments: Sequence[Judgment]) -> list[str]:
    """The wording of each prompt variant of the judgments' rubric (empty when unknown)."""
    if not judgments:
        return []
    p = judgments[0].provenance
    try:
        return list(load_rubric(f"{p.rubric_id}@{p.rubric_version}").spec.variants)
    except JudgeError:
        return []


def _first_sentence(text: str, limit: int = 90) -> str:
    first = re.split(r"(?<=[?.!])\s", " ".join(text.split()), maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "\u2026"


def _verdict_view(item: ReviewItem, j: Judgment, variants: Sequence[str]) -> VerdictView:
    v = j.verdict
    variant = j.provenance.variant
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
        invalid_citations=list(v.invalid_citations) if v else [],
        uncited=bool(v and j.status == "ok" and v.uncited),
        variant=variant,
        n_variants=max(1, len(variants)),
        variant_text=_first_sentence(variants[variant]) if variant < len(variants) else None,
    )
