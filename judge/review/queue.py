"""The human review queue: items routed to review (and audits), labels and adjudication.

Protocol:
- An item needs one label, or two independent labels (a seeded fraction of items, or all).
  A reviewer never sees another reviewer's label on an open item and labels an item once.
- Two labels that disagree send the item to adjudication; a reviewer with the adjudicator role
  who has not labelled it gives the final label.
- A first-bad-decision item (kind ``fbd``, ``judge.review.fbd``) is labelled ``located`` with
  the critical step (0-based, a step of the run), ``no_single_step`` or ``cannot_determine``;
  two located labels agree only on the same step.
- Blind items hide the judges' verdicts, scores, routing reasons and system (model) names.
  Pairwise candidates are shown in an order fixed per item by a keyed hash, and labels given in
  the shown frame are mapped back to the canonical A/B frame here, never by the client.
- The queue is ordered: items awaiting adjudication first, then by priority, then oldest first.
  Priority (:func:`review_priority`): 1 for audits of automatic decisions; 0.95 where the judge
  contradicted itself (orders, prompt variants or samples disagreed) or its evidence was
  flagged; 0.9 where it gave no score or cited no evidence it was shown; otherwise 0.9 x how
  close the score is to the nearest edge of a band the card certifies (0.5 when it certifies
  none): the items a label says most about, the ones a small change of the card would decide
  automatically.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from calibration.card import Card
from judge import kinds
from judge.digests import seeded_unit, utcnow
from judge.errors import ConflictError, JudgeError, NotFoundError
from judge.routing import audit_cards
from judge.routing.reasons import AUTO_DECISIONS, AWAITING_JUDGE
from judge.store import LabelWrite, Store
from judge.types import ReviewItem, ReviewLabel, ReviewStatus, Role, RoutingDecision


def uncertainty(score: float | None) -> float:
    """1 at a score of one half (or no score), 0 at 0 or 1: how unsure the judge was."""
    if score is None:
        return 1.0
    return 1.0 - abs(2.0 * score - 1.0)


#: Review reasons where the judge contradicted itself or its evidence was flagged as aimed at
#: it: a person looks first, whatever the score.
CONFLICT_REASONS = frozenset(
    {
        "flagged_evidence",
        "masked_changed",
        "facts_changed",
        "orders_disagreed",
        "variants_disagreed",
        "samples_disagreed",
    }
)


#: Review reasons where the score stands on nothing a person could check (the judge cited no
#: evidence it was shown): however sure the score, a person looks soon.
UNGROUNDED_REASONS = frozenset({"uncited"})


def band_edges(card: Card | None, decision: RoutingDecision) -> list[float]:
    """The score thresholds that could have decided ``decision`` automatically: the card's
    accept and reject thresholds (pairwise: the decide threshold and its mirror), those of the
    decision's slice or cascade stage when the card has them. Empty when none is certified."""
    if card is None:
        return []
    policy = card.policy
    part: object = policy
    if decision.slice is not None and decision.slice in policy.per_slice:
        part = policy.per_slice[decision.slice]
    elif policy.cascade:
        part = next((s for s in policy.cascade if s.model == decision.model), policy)
    accept = getattr(part, "auto_accept_threshold", None)
    reject = getattr(part, "auto_reject_threshold", None)
    decide = getattr(part, "decide_threshold", None)
    if decision.kind == "pairwise":
        return [] if decide is None else [float(decide), 1.0 - float(decide)]
    return [float(t) for t in (reject, accept) if t is not None]


def review_priority(decision: RoutingDecision, edges: Sequence[float] = ()) -> float:
    """How soon a person should look at a queued decision, in [0, 1] (see the module doc).

    The closeness part is ``1 - distance / 0.5`` (at least 0), the distance being from the
    score to the nearest of ``edges`` (to 0.5 without edges: then it is :func:`uncertainty`).
    """
    if decision.decision in AUTO_DECISIONS:
        return 1.0  # an audit: it keeps the card's automatic decisions honest
    if decision.reason in CONFLICT_REASONS:
        return 0.95
    if decision.score is None or decision.reason in UNGROUNDED_REASONS:
        return 0.9
    distance = min(abs(decision.score - edge) for edge in (edges or [0.5]))
    return round(0.9 * max(0.0, 1.0 - distance / 0.5), 6)


def check_double_fraction(double_fraction: float) -> None:
    """Refuse a double-label fraction outside [0, 1]."""
    if not 0.0 <= double_fraction <= 1.0:
        raise JudgeError(f"double-label fraction must be in [0, 1], got {double_fraction}")


def required_labels(seed: int, item_id: str, double_fraction: float) -> int:
    """Labels an item needs: two for a seeded ``double_fraction`` of items, else one."""
    return 2 if seeded_unit(seed, "double:" + item_id) < double_fraction else 1


def item_judgment_ids(store: Store, item: ReviewItem) -> list[str]:
    """The judgments an item answers: its own list (an ``fbd`` item answers a diagnosis), or
    those its routing decision pooled."""
    return list(item.judgment_ids) or store.decision_judgment_ids(item.routing_id)


def item_id_for(decision_id: str) -> str:
    """The review item id of a routing decision."""
    return "q-" + decision_id.removeprefix("r-")


def enqueue(
    store: Store,
    decisions: Iterable[RoutingDecision],
    *,
    seed: int = 0,
    double_fraction: float = 0.0,
    blind: bool = False,
    now: datetime | None = None,
    card: Card | None = None,
) -> int:
    """Queue every review decision and every audited automatic one; return how many are new.

    An item already queued (same card, case and judge) is left as it is, with its labels.
    ``double_fraction`` of the items (seeded, per item) need two independent labels. With the
    ``card`` that made the decisions, priorities measure closeness to its band edges.
    """
    check_double_fraction(double_fraction)
    moment = (now or utcnow()).isoformat()
    rows = []
    for d in decisions:
        if d.decision != "review" and not d.audit:
            continue
        if d.reason in AWAITING_JUDGE:
            continue  # a judge, not a person, has to act first; routing again decides it
        qid = item_id_for(d.id)
        audit = d.decision in AUTO_DECISIONS
        rows.append(
            {
                "id": qid,
                "routing_id": d.id,
                "card_digest": d.card_digest,
                "case_id": d.case_id,
                "model": d.model,
                "rubric_id": d.rubric_id,
                "kind": d.kind,
                "reason": "audit" if audit else d.reason,
                "detail": (f"audit of {d.decision} ({d.detail})" if audit else d.detail),
                "audit": int(audit),
                "band": d.band,
                "auto_label": d.label,
                "score": d.score,
                "priority": review_priority(d, band_edges(card, d)),
                "required_labels": required_labels(seed, qid, double_fraction),
                "blind": int(blind),
                "status": "open",
                "created_at": moment,
            }
        )
    return store.enqueue_items(rows)


def get_item(store: Store, item_id: str) -> ReviewItem:
    """The review item with this id; NotFoundError when there is none."""
    item = store.review_item(item_id)
    if item is None:
        raise NotFoundError(f"no review item {item_id!r}")
    return item


def queue(
    store: Store,
    *,
    reviewer: str | None = None,
    role: Role = "reviewer",
    limit: int = 50,
    offset: int = 0,
) -> list[ReviewItem]:
    """Items awaiting a label, in priority order.

    With ``reviewer``: only the items this reviewer may label now (open items they have not
    labelled; items awaiting adjudication when ``role`` is adjudicator and they gave no label).
    Without: every open item and every item awaiting adjudication.
    """
    return store.review_queue(
        reviewer=reviewer, adjudicator=role == "adjudicator", limit=limit, offset=offset
    )


def items(
    store: Store, *, status: str | None = None, limit: int = 100, offset: int = 0
) -> list[ReviewItem]:
    """Review items in any state (optionally one status), oldest first."""
    return store.review_items(status=status, limit=limit, offset=offset)


def labels(
    store: Store, *, item_id: str | None = None, limit: int = 1000, offset: int = 0
) -> list[ReviewLabel]:
    """Labels given, oldest first (optionally for one item)."""
    return store.review_labels(item_id=item_id, limit=limit, offset=offset)


def blinded(item: ReviewItem) -> ReviewItem:
    """The item as a blind reviewer may see it: no judge model, score, reason or audit flag
    (each hints at what the judge said), no card."""
    return item.model_copy(
        update={
            "model": None,
            "card_digest": None,
            "routing_id": None,
            "reason": "hidden",
            "detail": None,
            "audit": False,
            "band": None,
            "auto_label": None,
            "score": None,
            "priority": 0.0,
            "blind": True,
            "judgment_ids": [],
            "proposed_step": None,
            "step_set": None,
        }
    )


def display_swapped(item_id: str) -> bool:
    """Whether a pairwise item's candidates are shown in the order B, A (fixed per item)."""
    return seeded_unit(0, "display:" + item_id) < 0.5


def to_canonical(item: ReviewItem, shown_label: str) -> str:
    """A label given in the shown frame, in the canonical A/B frame."""
    spec = kinds.kind(item.kind)
    if spec.swap and display_swapped(item.id):
        return spec.swapped(shown_label)
    return shown_label


def to_shown(item: ReviewItem, canonical_label: str | None) -> str | None:
    """A canonical label in the frame the reviewer sees."""
    if canonical_label is None:
        return None
    return to_canonical(item, canonical_label)  # the swap is its own inverse


def add_label(
    store: Store,
    item_id: str,
    *,
    reviewer: str,
    role: Role,
    label: str,
    note: str = "",
    now: datetime | None = None,
    step: int | None = None,
) -> ReviewItem:
    """Record ``reviewer``'s label (canonical frame) on an item; return the item's new state.
    On an ``fbd`` item, ``located`` names the critical ``step`` (0-based); no other label or
    kind takes a step.

    Raises NotFoundError for an unknown item, JudgeError for a label the item's kind does not
    allow (or a step missing, out of the run, or not asked for), ConflictError when the item is
    closed, awaits someone else or was labelled by this reviewer already. The item is locked
    while its state is read and written, so labels given at the same moment (by two replicas of
    the service) are applied one after the other. A finished audit item refreshes its card's
    live error bounds.
    """
    if not reviewer:
        raise JudgeError("a label needs a reviewer name")
    moment = now or utcnow()

    def rule(item: ReviewItem, given: list[ReviewLabel]) -> LabelWrite:
        allowed = kinds.kind(item.kind).review_labels
        if label not in allowed:
            raise JudgeError(
                f"label {label!r} is not allowed for a {item.kind} item; use one of "
                f"{', '.join(allowed)}"
            )
        _check_step(store, item, label, step)
        if any(x.reviewer == reviewer for x in given):
            raise ConflictError(f"{reviewer} has already labelled {item_id}")
        if item.status == "done":
            raise ConflictError(f"{item_id} is already decided ({item.final_label})")
        if item.status == "adjudicate" and role != "adjudicator":
            raise ConflictError(
                f"{item_id} awaits adjudication (its two labels disagree): only an adjudicator "
                "key can label it"
            )
        as_role: Role = "adjudicator" if item.status == "adjudicate" else "reviewer"
        new = ReviewLabel(
            id=0,
            item_id=item_id,
            reviewer=reviewer,
            role=as_role,
            label=label,
            note="",
            created_at=moment,
            step=step,
        )
        status, final = _next_state(item, [*given, new])
        return LabelWrite(
            role=as_role,
            status=status,
            final_label=final[0] if final else None,
            final_step=final[1] if final else None,
        )

    updated = store.label_item(
        item_id,
        reviewer=reviewer,
        label=label,
        note=note,
        moment=moment.isoformat(),
        rule=rule,
        step=step,
    )
    if updated is None:
        raise NotFoundError(f"no review item {item_id!r}")
    if updated.status == "done" and updated.audit and updated.card_digest:
        audit_cards(store, updated.card_digest)
    return updated


def _check_step(store: Store, item: ReviewItem, label: str, step: int | None) -> None:
    """Refuse a step where none is asked for, and a located label without a step of the run."""
    if not kinds.kind(item.kind).steps:
        if step is not None:
            raise JudgeError(f"a {item.kind} item takes no step: only a first-bad-decision does")
        return
    if label != "located":
        if step is not None:
            raise JudgeError(f"label {label!r} names no step: give a step only with located")
        return
    case = store.get_case(item.case_id)
    n_steps = len(case.trace) if case is not None else 0
    if step is None or not 0 <= step < n_steps:
        raise JudgeError(
            f"located needs the critical step: a step of the run, 0 to {n_steps - 1}"
            + (f" (got {step})" if step is not None else "")
        )


#: A label as the protocol compares them: the label and, on an fbd item, its step.
Vote = tuple[str, int | None]


def _next_state(item: ReviewItem, given: Sequence[ReviewLabel]) -> tuple[ReviewStatus, Vote | None]:
    adjudicated = [x for x in given if x.role == "adjudicator"]
    if adjudicated:
        return "done", (adjudicated[-1].label, adjudicated[-1].step)
    votes = [(x.label, x.step) for x in given if x.role == "reviewer"]
    if len(votes) < item.required_labels:
        return "open", None
    if len(set(votes)) == 1:
        return "done", votes[0]
    return "adjudicate", None


def add_shown_label(
    store: Store,
    item_id: str,
    *,
    reviewer: str,
    role: Role,
    shown_label: str,
    note: str = "",
    step: int | None = None,
) -> ReviewItem:
    """Record a label given in the frame the reviewer saw (the page shows pairwise candidates
    in a per-item order); it is mapped to the canonical frame here, never by the client."""
    item = get_item(store, item_id)
    return add_label(
        store,
        item_id,
        reviewer=reviewer,
        role=role,
        label=to_canonical(item, shown_label),
        note=note,
        step=step,
    )
