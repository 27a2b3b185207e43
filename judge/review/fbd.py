"""First bad decisions in the review queue: diagnosed failed runs queued for a person, and what
the page shows of one (a timeline of the run's steps around the judge's proposal).

Every diagnosis is tentative (``judge.diagnosis``). :func:`queue_diagnoses` puts each diagnosed
run in the review queue as an item of kind ``fbd`` that answers that diagnosis: its judgments,
the step the judge proposed and the step set a card certified (when one did). A run whose set
is a single step is *located*, still tentative: it is queued too, after the others (a person's
confirmation is what makes it confirmed), unless ``unlocated_only`` asks for the rest only. A
run whose diagnosis failed (parse or provider error) has nothing to answer and is skipped.

Order (priority): 0.9 when the judge named no single step, 0.8 when its step set holds more
than one step, 0.7 without a card (no set), 0.5 for a located run.

A reviewer confirms the proposed step (``located`` with that step), moves it (``located`` with
another step), or says ``no_single_step`` or ``cannot_determine`` (``judge.review.queue``). The
finished item confirms the diagnosis (``judge.diagnosis.confirmed_step``) and flows into gold as
a failed run with its critical step (``judge.review.gold_export``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from judge.diagnosis import DiagnosisResult, RunDiagnosis, Skipped, review_item_id, run_diagnosis
from judge.digests import utcnow
from judge.review.queue import check_double_fraction, required_labels
from judge.safety.redact import redact_case
from judge.steps import step_id
from judge.store import Store
from judge.types import Case, Judgment, ReviewItem, Strict

#: Why an fbd item is in the queue (the item's reason), in words.
FBD_REASONS = {
    "fbd_unlocated": "a first bad decision to locate: the judge's step set holds several steps",
    "fbd_no_card": "a first bad decision to check: no card certified a step set",
    "fbd_no_step": "a first bad decision to locate: the judge named no single step",
    "fbd_located": "a located first bad decision to confirm (its step set is one step)",
}
PRIORITY = {"fbd_no_step": 0.9, "fbd_unlocated": 0.8, "fbd_no_card": 0.7, "fbd_located": 0.5}
#: Characters of a step's one-line outline on the timeline.
LINE_CHARS = 140


@dataclass
class FbdQueued:
    """What :func:`queue_diagnoses` did: the items of the runs it queued (new or already
    there), how many are new, and the runs it left out, with why."""

    items: list[str] = field(default_factory=list)
    new: int = 0
    skipped: list[Skipped] = field(default_factory=list)


def _reason(run: RunDiagnosis) -> tuple[str, str]:
    n = run.n_steps
    if run.step_index is None:
        said = {"abstain": "it abstained"}.get(run.status, "its report names no step")
        return "fbd_no_step", f"{said}; {n} steps"
    if run.step_set is None:
        return "fbd_no_card", f"step {run.step_index} proposed; {n} steps"
    if run.located:
        return "fbd_located", f"step set {{{run.step_set[0]}}} of {n} steps"
    steps = ",".join(map(str, run.step_set)) or "empty"
    size = len(run.step_set)
    return "fbd_unlocated", f"step {run.step_index} proposed; set {{{steps}}}, {size} of {n} steps"


def queue_diagnoses(
    store: Store,
    runs: DiagnosisResult | Iterable[RunDiagnosis],
    *,
    unlocated_only: bool = False,
    double_fraction: float = 0.0,
    seed: int = 0,
    card_digest: str | None = None,
    now: datetime | None = None,
) -> FbdQueued:
    """Queue diagnosed runs for review as ``fbd`` items (see the module doc). An item already
    queued for a diagnosis is left as it is, with its labels. ``double_fraction`` of the items
    (seeded, per item) need two independent labels. ``card_digest``: the step card that gave
    the sets (read from a DiagnosisResult when it has one)."""
    check_double_fraction(double_fraction)
    if isinstance(runs, DiagnosisResult):
        card_digest = card_digest or runs.card_digest
        runs = runs.runs
    moment = (now or utcnow()).isoformat()
    done = FbdQueued()
    rows: list[dict[str, Any]] = []
    for run in runs:
        if run.status not in ("ok", "abstain"):
            done.skipped.append(
                Skipped(run.case_id, f"its diagnosis failed ({run.status}): nothing to review")
            )
            continue
        if unlocated_only and run.located:
            done.skipped.append(Skipped(run.case_id, "located (its step set is one step)"))
            continue
        qid = review_item_id(run.case_id, run.model, run.rubric)
        reason, detail = _reason(run)
        rows.append(
            {
                "id": qid,
                "routing_id": None,
                "card_digest": card_digest if run.step_set is not None else None,
                "case_id": run.case_id,
                "model": run.model,
                "rubric_id": run.rubric.split("@", 1)[0],
                "kind": "fbd",
                "reason": reason,
                "detail": detail,
                "audit": 0,
                "band": None,
                "auto_label": "cannot_determine"
                if run.status == "abstain"
                else ("located" if run.step_index is not None else "no_single_step"),
                "score": None,
                "priority": PRIORITY[reason],
                "required_labels": required_labels(seed, qid, double_fraction),
                "blind": 0,
                "status": "open",
                "created_at": moment,
                "judgment_ids": list(run.judgment_ids),
                "proposed_step": run.step_index,
                "step_set": run.step_set,
            }
        )
        done.items.append(qid)
    done.new = store.enqueue_items(rows)
    return done


# --- What the page shows ----------------------------------------------------------------------


class CheckView(Strict):
    """A step a deterministic check proposed, and what the judge said of it."""

    step: int
    invariant: str
    check: str
    reason: str
    judged: str


class StepRef(Strict):
    """A step the diagnosis names, and what it says of it."""

    step: int
    id: str
    text: str


class StepView(Strict):
    """One step of the run on the timeline."""

    index: int
    #: Its evidence id as the judge saw it (``E{index + 1}``).
    id: str
    role: str
    kind: str | None
    #: The first line, clipped; the full stored text (redacted) below it.
    line: str
    text: str
    more: bool
    #: The judge's critical step / in the certified set / in the causal chain (its position,
    #: 1-based) / the symptom (never on blind items).
    proposed: bool = False
    in_set: bool = False
    chain: int | None = None
    symptom: bool = False
    checks: list[CheckView] = []


class FbdView(Strict):
    """What the page shows of a first-bad-decision item: the timeline and the diagnosis beside
    it (blind: the timeline only)."""

    steps: list[StepView]
    proposed_step: int | None
    step_set: list[int] | None
    #: The step selected when the page opens (the proposed one; none on blind items).
    selected: int | None
    decision: str = ""
    violated_invariant: str | None = None
    invariant_note: str = ""
    causal_chain: list[StepRef] = []
    counterfactual: str = ""
    symptom: StepRef | None = None
    owner: str | None = None
    confidence: str | None = None
    recoverable_at_step: int | None = None
    minimal_fix: str = ""
    checks: list[CheckView] = []
    #: The judge's status when it gave no report (abstain, parse_error, infra_error).
    judge_status: str | None = None


def _line(text: str) -> tuple[str, bool]:
    stripped = text.strip()
    first = stripped.splitlines()[0] if stripped else ""
    line = first if len(first) <= LINE_CHARS else first[: LINE_CHARS - 1] + "\u2026"
    return line, line != stripped


def _ref(step: int, text: str) -> StepRef:
    return StepRef(step=step, id=step_id(step), text=text)


def fbd_view(item: ReviewItem, case: Case, judgments: Sequence[Judgment], blind: bool) -> FbdView:
    """The timeline of ``case``'s steps with the diagnosis ``judgments`` gave (the report of
    the first sample that has one), the item's proposed step and set; on a blind item the
    timeline alone."""
    shown = redact_case(case)[0]
    steps = []
    for i, turn in enumerate(shown.trace):
        line, more = _line(turn.content)
        steps.append(
            StepView(
                index=i,
                id=step_id(i),
                role=turn.role,
                kind=turn.kind,
                line=line,
                text=turn.content,
                more=more,
            )
        )
    if blind:
        return FbdView(steps=steps, proposed_step=None, step_set=None, selected=None)
    run = run_diagnosis(case, item.model or "", list(judgments))
    report = run.report
    checks = [CheckView(**c) for c in run.proposed]
    in_range = range(len(steps))
    for c in checks:
        if c.step in in_range:
            steps[c.step].checks.append(c)
    for s in item.step_set or []:
        if s in in_range:
            steps[s].in_set = True
    proposed = item.proposed_step
    if proposed is not None and proposed in in_range:
        steps[proposed].proposed = True
    view = FbdView(
        steps=steps,
        proposed_step=proposed,
        step_set=item.step_set,
        selected=proposed if proposed in in_range else None,
        checks=checks,
        judge_status=None if report else run.status,
    )
    if report is None:
        return view
    for n, link in enumerate(report.causal_chain, start=1):
        if link.step in in_range and steps[link.step].chain is None:
            steps[link.step].chain = n
    if report.symptom and report.symptom.step in in_range:
        steps[report.symptom.step].symptom = True
    return view.model_copy(
        update={
            "decision": report.decision,
            "violated_invariant": report.violated_invariant,
            "invariant_note": report.invariant_note,
            "causal_chain": [_ref(c.step, c.text) for c in report.causal_chain],
            "counterfactual": report.counterfactual,
            "symptom": _ref(report.symptom.step, report.symptom.text) if report.symptom else None,
            "owner": report.owner,
            "confidence": report.confidence,
            "recoverable_at_step": report.recoverable_at_step,
            "minimal_fix": report.minimal_fix,
        }
    )
