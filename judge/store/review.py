"""The human review queue and the labels reviewers give."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judge.store.backend import Backend, page, where_equal
from judge.types import ReviewItem, ReviewLabel, ReviewStatus, Role

_ITEM_SQL = (
    "SELECT q.*, (SELECT count(*) FROM review_labels l WHERE l.item_id = q.id "
    "AND l.role = 'reviewer') AS n_labels FROM review_items q"
)


def _item(row: Mapping[str, Any]) -> ReviewItem:
    data = dict(row)
    data["audit"] = bool(data["audit"])
    data["blind"] = bool(data["blind"])
    return ReviewItem.model_validate(data)


@dataclass(frozen=True)
class LabelWrite:
    """What labelling an item writes: the label (in the role it counts as) and the item's new
    state."""

    role: Role
    status: ReviewStatus
    final_label: str | None


#: Decides a label's effect from the item and the labels already given (raising to refuse).
LabelRule = Callable[[ReviewItem, list[ReviewLabel]], LabelWrite]


class ReviewTables:
    """Review items and labels."""

    backend: Backend

    def enqueue_items(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert review item rows, keeping any item already queued; how many are new."""
        new = 0
        with self.backend.transaction():
            for row in rows:
                new += self.backend.insert("review_items", row, conflict="ignore")
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
    ) -> ReviewItem | None:
        """Add a label atomically: lock the item, read it and its labels, let ``rule`` decide
        (it raises to refuse), write the label and the item's new state. None for an unknown
        item. Two reviewers labelling one item at once are serialised, never a lost update."""
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
                "INSERT INTO review_labels (item_id, reviewer, role, label, note, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [item_id, reviewer, write.role, label, note or "", moment],
            )
            self.backend.execute(
                "UPDATE review_items SET status = ?, final_label = ?, closed_at = ? WHERE id = ?",
                [
                    write.status,
                    write.final_label,
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

    def review_counts(self) -> dict[str, int]:
        """Review items per status."""
        rows = self.backend.query("SELECT status, count(*) AS n FROM review_items GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}
