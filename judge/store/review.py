"""The human review queue and the labels reviewers give."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judge.store.backend import Backend, page, where_equal
from judge.store.judgments import ID_CHUNK
from judge.types import ReviewItem, ReviewLabel, ReviewStatus, Role

_ITEM_SQL = (
    "SELECT q.*, (SELECT count(*) FROM review_labels l WHERE l.item_id = q.id "
    "AND l.role = 'reviewer') AS n_labels FROM review_items q"
)


#: Item columns that hold a JSON list.
_JSON_COLUMNS = ("judgment_ids", "step_set")


def _item(row: Mapping[str, Any]) -> ReviewItem:
    data = dict(row)
    data["audit"] = bool(data["audit"])
    data["blind"] = bool(data["blind"])
    data["judgment_ids"] = json.loads(data.get("judgment_ids") or "[]")
    data["step_set"] = json.loads(data["step_set"]) if data.get("step_set") else None
    return ReviewItem.model_validate(data)


@dataclass(frozen=True)
class LabelWrite:
    """What labelling an item writes: the label (in the role it counts as) and the item's new
    state."""

    role: Role
    status: ReviewStatus
    final_label: str | None
    #: The step people settled on (an ``fbd`` item, once done with a located step).
    final_step: int | None = None


@dataclass(frozen=True)
class StepLabelRow:
    """One label on an ``fbd`` item: who gave it, in which role, the label and its step, and
    the item's judge and the step that judge proposed."""

    item_id: str
    reviewer: str
    role: Role
    label: str
    step: int | None
    model: str | None
    proposed_step: int | None


#: Decides a label's effect from the item and the labels already given (raising to refuse).
LabelRule = Callable[[ReviewItem, list[ReviewLabel]], LabelWrite]


class ReviewTables:
    """Review items and labels."""

    backend: Backend

    def enqueue_items(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert review item rows, keeping any item already queued; how many are new. The
        list columns (``judgment_ids``, ``step_set``) are given as lists."""
        new = 0
        with self.backend.transaction():
            for row in rows:
                stored = {
                    k: json.dumps(v) if k in _JSON_COLUMNS and v is not None else v
                    for k, v in row.items()
                }
                new += self.backend.insert("review_items", stored, conflict="ignore")
        return new

    def review_item(self, item_id: str) -> ReviewItem | None:
        """The review item with this id, or None."""
        row = self.backend.query_one(_ITEM_SQL + " WHERE q.id = ?", [item_id])
        return None if row is None else _item(row)

    def review_queue(
        self, *, reviewer: str | None, adjudicator: bool, limit: int, offset: int
    ) -> list[ReviewItem]:
        """Items awaiting a label, in priority order: awaiting adjudication first, then by
        priority, audits, age. With ``reviewer``: only those this reviewer may label now (open
        items they have not labelled; items awaiting adjudication when they adjudicate and
        gave no label)."""
        args: list[Any] = []
        if reviewer is None:
            where = "q.status IN ('open', 'adjudicate')"
        else:
            mine = (
                "NOT EXISTS (SELECT 1 FROM review_labels l WHERE l.item_id = q.id "
                "AND l.reviewer = ?)"
            )
            where = f"((q.status = 'open' AND {mine}) OR (q.status = 'adjudicate' AND ? = 1 "
            where += f"AND {mine}))"
            args = [reviewer, int(adjudicator), reviewer]
        sql = (
            f"{_ITEM_SQL} WHERE {where} ORDER BY (CASE WHEN q.status = 'adjudicate' THEN 1 "
            "ELSE 0 END) DESC, q.priority DESC, q.audit DESC, q.created_at, q.id"
            + page(limit, offset)
        )
        return [_item(r) for r in self.backend.query(sql, args)]

    def review_items(
        self, *, status: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[ReviewItem]:
        """Review items in any state (optionally one status), oldest first."""
        where, args = where_equal({"status": status}, prefix="q.")
        sql = f"{_ITEM_SQL}{where} ORDER BY q.created_at, q.id{page(limit, offset)}"
        return [_item(r) for r in self.backend.query(sql, args)]

    def review_labels(
        self, *, item_id: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[ReviewLabel]:
        """Labels given, oldest first (optionally for one item)."""
        where, args = where_equal({"item_id": item_id})
        sql = f"SELECT * FROM review_labels{where} ORDER BY created_at, id{page(limit, offset)}"
        return [ReviewLabel.model_validate(r) for r in self.backend.query(sql, args)]

    def label_item(
        self,
        item_id: str,
        *,
        reviewer: str,
        label: str,
        note: str,
        moment: str,
        rule: LabelRule,
        step: int | None = None,
    ) -> ReviewItem | None:
        """Add a label atomically: lock the item, read it and its labels, let ``rule`` decide
        (it raises to refuse), write the label (with the ``step`` it names, on an ``fbd``
        item) and the item's new state. None for an unknown item. Two reviewers labelling one
        item at once are serialised, never a lost update."""
        with self.backend.transaction(lock=True):
            locked = self.backend.query_one(
                f"SELECT id FROM review_items WHERE id = ?{self.backend.for_update}", [item_id]
            )
            if locked is None:
                return None
            item = self.review_item(item_id)
            assert item is not None
            write = rule(item, self.review_labels(item_id=item_id))
            self.backend.execute(
                "INSERT INTO review_labels (item_id, reviewer, role, label, note, created_at, "
                "step) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [item_id, reviewer, write.role, label, note or "", moment, step],
            )
            self.backend.execute(
                "UPDATE review_items SET status = ?, final_label = ?, final_step = ?, "
                "closed_at = ? WHERE id = ?",
                [
                    write.status,
                    write.final_label,
                    write.final_step,
                    moment if write.status == "done" else None,
                    item_id,
                ],
            )
        return self.review_item(item_id)

    def reviewer_labels(self) -> list[tuple[str, str, str, str]]:
        """(item id, reviewer, label, item kind) of every label given in the reviewer role."""
        sql = (
            "SELECT l.item_id, l.reviewer, l.label, q.kind FROM review_labels l "
            "JOIN review_items q ON q.id = l.item_id WHERE l.role = 'reviewer' "
            "ORDER BY l.id"
        )
        return [
            (r["item_id"], r["reviewer"], r["label"], r["kind"]) for r in self.backend.query(sql)
        ]

    def step_labels(self) -> list[StepLabelRow]:
        """Every label on an ``fbd`` item, oldest first, with the item's judge and proposed
        step (for step agreement)."""
        sql = (
            "SELECT l.item_id, l.reviewer, l.role, l.label, l.step, q.model, q.proposed_step "
            "FROM review_labels l JOIN review_items q ON q.id = l.item_id "
            "WHERE q.kind = 'fbd' ORDER BY l.id"
        )
        return [StepLabelRow(**r) for r in self.backend.query(sql)]

    def fbd_items(self, case_ids: Sequence[str]) -> list[ReviewItem]:
        """The ``fbd`` review items of these cases (any state), oldest first."""
        found: list[ReviewItem] = []
        ids = list(dict.fromkeys(case_ids))
        for start in range(0, len(ids), ID_CHUNK):
            chunk = ids[start : start + ID_CHUNK]
            marks = ", ".join("?" for _ in chunk)
            sql = (
                f"{_ITEM_SQL} WHERE q.kind = 'fbd' AND q.case_id IN ({marks}) "
                "ORDER BY q.created_at, q.id"
            )
            found += [_item(r) for r in self.backend.query(sql, chunk)]
        return found

    def review_counts(self) -> dict[str, int]:
        """Review items per status."""
        rows = self.backend.query("SELECT status, count(*) AS n FROM review_items GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}
