"""The human review queue: items routed to review (and audits), labels, adjudication, gold export.

Protocol:
- An item needs one label, or two independent labels (a seeded fraction of items, or all).
  A reviewer never sees another reviewer's label on an open item and labels an item once.
- Two labels that disagree send the item to adjudication; a reviewer with the adjudicator role
  who has not labelled it gives the final label.
- Blind items hide the judges' verdicts, scores, routing reasons and system (model) names.
  Pairwise candidates are shown in an order fixed per item by a keyed hash, and labels given in
  the shown frame are mapped back to the canonical A/B frame here, never by the client.
- The queue is ordered: items awaiting adjudication first, then by priority (audits and the
  most uncertain scores first), then oldest first.
- Agreement between reviewers (raw and Cohen's kappa) is reported per reviewer pair.
- Finished items are exported as a gold set (``calibration.gold``) with lineage: the judgments,
  the routing decision, the card and the review item each label came from.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from judge.errors import JudgeError
from judge.routing import AUTO_DECISIONS, AWAITING_JUDGE, REASONS, RoutingDecision, seeded_unit
from judge.types import ABSTAIN_LABEL, Case, Judgment

if TYPE_CHECKING:
    from judge.store import Store

Status = Literal["open", "adjudicate", "done"]
Role = Literal["reviewer", "adjudicator"]
ROLES: tuple[Role, ...] = ("reviewer", "adjudicator")

#: The labels a reviewer may give, by rubric kind (canonical frame).
REVIEW_LABELS: Mapping[str, tuple[str, ...]] = {
    "binary": ("pass", "fail", ABSTAIN_LABEL),
    "pairwise": ("A", "B", "tie", ABSTAIN_LABEL),
}
#: Label swap of a pairwise item shown in the order B, A.
_SWAP = {"A": "B", "B": "A"}


class NotFoundError(JudgeError):
    """A review item (or another record) does not exist."""


class ConflictError(JudgeError):
    """The request contradicts the item's state (already labelled, not awaiting you, ...)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReviewItem(_Model):
    """One item of the review queue."""

    id: str
    routing_id: str | None
    card_digest: str | None
    case_id: str
    model: str | None
    rubric_id: str | None
    kind: Literal["binary", "pairwise"]
    reason: str
    detail: str | None
    audit: bool
    band: str | None
    auto_label: str | None
    score: float | None
    priority: float
    required_labels: int
    blind: bool
    status: Status
    final_label: str | None
    created_at: datetime
    closed_at: datetime | None
    #: Labels given so far by reviewers (adjudication not counted).
    n_labels: int = 0


class ReviewLabel(_Model):
    """A label given by a reviewer or an adjudicator."""

    id: int
    item_id: str
    reviewer: str
    role: Role
    label: str
    note: str
    created_at: datetime


class PairAgreement(_Model):
    """Agreement of two reviewers on the items both labelled."""

    reviewer_a: str
    reviewer_b: str
    kind: str
    n: int
    agreed: int
    raw: float
    #: Cohen's kappa; None when it is undefined (both gave one and the same label throughout).
    kappa: float | None


def _now() -> datetime:
    return datetime.now(UTC)


def uncertainty(score: float | None) -> float:
    """1 at a score of one half (or no score), 0 at 0 or 1: how unsure the judge was."""
    if score is None:
        return 1.0
    return 1.0 - abs(2.0 * score - 1.0)


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
) -> int:
    """Queue every review decision and every audited automatic one; return how many are new.

    An item already queued (same card, case and judge) is left as it is, with its labels.
    ``double_fraction`` of the items (seeded, per item) need two independent labels.
    """
    if not 0.0 <= double_fraction <= 1.0:
        raise JudgeError(f"double-label fraction must be in [0, 1], got {double_fraction}")
    moment = (now or _now()).isoformat()
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
                # Audits guard the automatic decisions: as urgent as the most uncertain item.
                "priority": 1.0 if audit else uncertainty(d.score),
                "required_labels": 2 if seeded_unit(seed, "double:" + qid) < double_fraction else 1,
                "blind": int(blind),
                "status": "open",
                "created_at": moment,
            }
        )
    with store.db.conn:
        before = store.db.table("review_items").count
        store.db.table("review_items").insert_all(rows, pk="id", ignore=True)
        after = store.db.table("review_items").count
    return after - before


_ITEM_SQL = (
    "select q.*, (select count(*) from review_labels l where l.item_id = q.id "
    "and l.role = 'reviewer') as n_labels from review_items q"
)


def _item(row: Mapping[str, Any]) -> ReviewItem:
    data = dict(row)
    data["audit"] = bool(data["audit"])
    data["blind"] = bool(data["blind"])
    return ReviewItem.model_validate(data)


def get_item(store: Store, item_id: str) -> ReviewItem:
    """The review item with this id; NotFoundError when there is none."""
    rows = list(store.db.query(_ITEM_SQL + " where q.id = ?", [item_id]))
    if not rows:
        raise NotFoundError(f"no review item {item_id!r}")
    return _item(rows[0])


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
    args: list[Any] = []
    if reviewer is None:
        where = "q.status in ('open', 'adjudicate')"
    else:
        mine = (
            "not exists (select 1 from review_labels l where l.item_id = q.id and l.reviewer = ?)"
        )
        where = f"((q.status = 'open' and {mine}) or (q.status = 'adjudicate' and ? and {mine}))"
        args = [reviewer, int(role == "adjudicator"), reviewer]
    sql = (
        f"{_ITEM_SQL} where {where} order by q.status = 'adjudicate' desc, q.priority desc, "
        f"q.audit desc, q.created_at, q.id limit {int(limit)} offset {int(offset)}"
    )
    return [_item(r) for r in store.db.query(sql, args)]


def items(
    store: Store, *, status: str | None = None, limit: int = 100, offset: int = 0
) -> list[ReviewItem]:
    """Review items in any state (optionally one status), oldest first."""
    where, args = "", []
    if status is not None:
        where, args = " where q.status = ?", [status]
    sql = f"{_ITEM_SQL}{where} order by q.created_at, q.id limit {int(limit)} offset {int(offset)}"
    return [_item(r) for r in store.db.query(sql, args)]


def labels(
    store: Store, *, item_id: str | None = None, limit: int = 1000, offset: int = 0
) -> list[ReviewLabel]:
    """Labels given, oldest first (optionally for one item)."""
    where, args = "", []
    if item_id is not None:
        where, args = " where item_id = ?", [item_id]
    sql = (
        f"select * from review_labels{where} order by created_at, id "
        f"limit {int(limit)} offset {int(offset)}"
    )
    return [ReviewLabel.model_validate(r) for r in store.db.query(sql, args)]


@contextmanager
def _write_lock(store: Store) -> Iterator[sqlite3.Connection]:
    """One IMMEDIATE transaction: read the item's state and write the label atomically."""
    conn = store.db.conn
    if conn.in_transaction:
        conn.commit()
    conn.execute("BEGIN IMMEDIATE")
    ok = False
    try:
        yield conn
        ok = True
    finally:
        if ok:
            conn.commit()
        else:
            conn.rollback()


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
        }
    )


def display_swapped(item_id: str) -> bool:
    """Whether a pairwise item's candidates are shown in the order B, A (fixed per item)."""
    return seeded_unit(0, "display:" + item_id) < 0.5


def to_canonical(item: ReviewItem, shown_label: str) -> str:
    """A label given in the shown frame, in the canonical A/B frame."""
    if item.kind == "pairwise" and display_swapped(item.id):
        return _SWAP.get(shown_label, shown_label)
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
) -> ReviewItem:
    """Record ``reviewer``'s label (canonical frame) on an item; return the item's new state.

    Raises NotFoundError for an unknown item, JudgeError for a label the item's kind does not
    allow, ConflictError when the item is closed, awaits someone else or was labelled by this
    reviewer already. A finished audit item refreshes its card's live error bounds.
    """
    if not reviewer:
        raise JudgeError("a label needs a reviewer name")
    moment = (now or _now()).isoformat()
    with _write_lock(store) as conn:
        item = get_item(store, item_id)
        allowed = REVIEW_LABELS[item.kind]
        if label not in allowed:
            raise JudgeError(
                f"label {label!r} is not allowed for a {item.kind} item; use one of "
                f"{', '.join(allowed)}"
            )
        given = labels(store, item_id=item_id)
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
        conn.execute(
            "insert into review_labels (item_id, reviewer, role, label, note, created_at) "
            "values (?, ?, ?, ?, ?, ?)",
            [item_id, reviewer, as_role, label, note or "", moment],
        )
        status, final = _next_state(item, [*given, _pending(item_id, reviewer, as_role, label)])
        conn.execute(
            "update review_items set status = ?, final_label = ?, closed_at = ? where id = ?",
            [status, final, moment if status == "done" else None, item_id],
        )
    updated = get_item(store, item_id)
    if updated.status == "done" and updated.audit and updated.card_digest:
        from judge.routing import refresh_audit

        refresh_audit(store, updated.card_digest)
    return updated


def _pending(item_id: str, reviewer: str, role: Role, label: str) -> ReviewLabel:
    return ReviewLabel(
        id=0,
        item_id=item_id,
        reviewer=reviewer,
        role=role,
        label=label,
        note="",
        created_at=_now(),
    )


def _next_state(item: ReviewItem, given: Sequence[ReviewLabel]) -> tuple[Status, str | None]:
    adjudicated = [x for x in given if x.role == "adjudicator"]
    if adjudicated:
        return "done", adjudicated[-1].label
    votes = [x.label for x in given if x.role == "reviewer"]
    if len(votes) < item.required_labels:
        return "open", None
    if len(set(votes)) == 1:
        return "done", votes[0]
    return "adjudicate", None


def agreement(store: Store) -> list[PairAgreement]:
    """Raw agreement and Cohen's kappa for every pair of reviewers, per rubric kind."""
    sql = (
        "select l.item_id, l.reviewer, l.label, q.kind from review_labels l "
        "join review_items q on q.id = l.item_id where l.role = 'reviewer'"
    )
    by_item: dict[str, dict[str, str]] = defaultdict(dict)
    kinds: dict[str, str] = {}
    for r in store.db.query(sql):
        by_item[r["item_id"]][r["reviewer"]] = r["label"]
        kinds[r["item_id"]] = r["kind"]
    pairs: dict[tuple[str, str, str], list[tuple[str, str]]] = defaultdict(list)
    for item_id, given in by_item.items():
        for a, b in combinations(sorted(given), 2):
            pairs[(a, b, kinds[item_id])].append((given[a], given[b]))
    return [pair_agreement(a, b, kind, got) for (a, b, kind), got in sorted(pairs.items())]


def pair_agreement(a: str, b: str, kind: str, pairs: Sequence[tuple[str, str]]) -> PairAgreement:
    """Agreement of reviewers ``a`` and ``b`` over their (label a, label b) pairs."""
    n = len(pairs)
    agreed = sum(1 for x, y in pairs if x == y)
    categories = sorted({x for x, _ in pairs} | {y for _, y in pairs})
    kappa: float | None = None
    # Kappa is undefined when chance agreement is 1 (one label used by both throughout).
    if n and len(categories) > 1:
        from sklearn.metrics import cohen_kappa_score

        value = float(
            cohen_kappa_score([x for x, _ in pairs], [y for _, y in pairs], labels=categories)
        )
        kappa = value if value == value else None  # NaN -> None
    return PairAgreement(
        reviewer_a=a,
        reviewer_b=b,
        kind=kind,
        n=n,
        agreed=agreed,
        raw=agreed / n if n else 0.0,
        kappa=kappa,
    )


# --- What the reviewer sees --------------------------------------------------------------------


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
    if item.routing_id is None:
        return []
    rows = list(
        store.db.query("select judgment_ids from routing_decisions where id = ?", [item.routing_id])
    )
    ids = json.loads(rows[0]["judgment_ids"]) if rows else []
    if not ids:
        return []
    marks = ", ".join("?" for _ in ids)
    found = store.db.query(f"select json from judgments where id in ({marks})", ids)
    return [Judgment.model_validate_json(r["json"]) for r in found]


def _evidence(
    case: Case, judgments: Sequence[Judgment], cited: set[str], blind: bool
) -> tuple[list[EvidenceView], str | None]:
    from judge.evidence import select_evidence

    visible: Sequence[str] = (
        ("task", "candidates") if case.kind == "pairwise" else ("task", "diff", "trace")
    )
    budget = judgments[0].provenance.token_budget if judgments else 4000
    if judgments:
        try:
            from judge.rubrics import load_rubric

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
    from judge.redact import redact

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
    choices = list(REVIEW_LABELS[item.kind])
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


# --- Gold export -------------------------------------------------------------------------------


@dataclass
class GoldExport:
    """What an export wrote and what it left out (with why)."""

    path: Path
    digest: str
    n: int
    skipped: list[tuple[str, str]] = field(default_factory=list)


def gold_records(
    store: Store, *, license: str = "unspecified"
) -> tuple[list[Any], list[tuple[str, str]]]:
    """Finished review items as GoldRecords (one per case), and (item id, reason) skipped."""
    from calibration.gold import GOLD_LABELS

    done = items(store, status="done", limit=1_000_000)
    by_case: dict[str, list[ReviewItem]] = defaultdict(list)
    skipped: list[tuple[str, str]] = []
    for item in done:
        case_kind = "pairwise" if item.kind == "pairwise" else "agent_run"
        if item.final_label not in GOLD_LABELS[case_kind]:
            skipped.append((item.id, f"final label {item.final_label} is not a gold label"))
            continue
        by_case[item.case_id].append(item)
    records = []
    for case_id, group in sorted(by_case.items()):
        finals = {i.final_label for i in group}
        if len(finals) > 1:
            for i in group:
                skipped.append((i.id, f"case {case_id} has conflicting final labels {finals}"))
            continue
        case = store.get_case(case_id)
        if case is None:
            skipped.extend((i.id, f"case {case_id} is not stored") for i in group)
            continue
        records.append(_gold_record(store, case, group, license))
    return records, skipped


def _gold_record(store: Store, case: Case, group: Sequence[ReviewItem], license: str) -> Any:
    from calibration.gold import GoldRecord, GoldTurn, Lineage

    given = [x for i in group for x in labels(store, item_id=i.id)]
    adjudicators = sorted({x.reviewer for x in given if x.role == "adjudicator"})
    reviewers = sorted({x.reviewer for x in given if x.role == "reviewer"})
    how = f"human review: {len(reviewers)} reviewer(s)"
    if adjudicators:
        how += f", adjudicated by {', '.join(adjudicators)}"
    refs: list[str] = []
    for i in group:
        rows = list(
            store.db.query(
                "select judgment_ids from routing_decisions where id = ?", [i.routing_id]
            )
        )
        refs += [f"judgment:{j}" for j in (json.loads(rows[0]["judgment_ids"]) if rows else [])]
        refs += [f"routing:{i.routing_id}", f"card:{i.card_digest}", f"review:{i.id}"]
    final = str(group[0].final_label)
    return GoldRecord(
        id=case.id,
        source=str(case.meta.get("source") or "judge review queue"),
        license=license,
        kind=case.kind,
        task=case.task,
        candidates=dict(case.candidates) if case.candidates else None,
        diff=case.diff,
        trace=[GoldTurn(id=t.id, role=t.role, content=t.content, step=t.step) for t in case.trace],
        gold=final,
        gold_source=how,
        slices=dict(case.slices),
        meta=dict(case.meta),
        lineage=Lineage(
            source="judge review queue",
            labeller=", ".join([*reviewers, *adjudicators]),
            created_at=max(x.created_at for x in given) if given else None,
            derived_from=list(dict.fromkeys(refs)),
        ),
    )


def export_gold(store: Store, path: str | Path, *, license: str = "unspecified") -> GoldExport:
    """Write finished review items as a gold JSONL with lineage (``calibration.gold``)."""
    from calibration.gold import write_gold

    records, skipped = gold_records(store, license=license)
    if not records:
        raise ConflictError(
            "no finished review items with a pass/fail (or A/B/tie) label to export yet"
        )
    digest = write_gold(records, path)
    return GoldExport(path=Path(path), digest=digest, n=len(records), skipped=skipped)
