"""Blindness per case and per reviewer: what the judge said about a case stays hidden from a
reviewer who still owes that case a blind label.

A case can be queued more than once: routed blind with one card and open with another, routed
again by ``POST /v1/routing`` without a job id, judged and routed by ``POST /v1/judge``, or
drawn by a label plan (always blind) after it was routed. Blindness is therefore a property of
(case, reviewer), not of one item:

    An item is shown blind to a reviewer when it is blind itself (routed with ``--blind``, or
    drawn by a label plan), when the service forces blind review (``judge serve --blind``), or
    when another item of the same case is blind and still awaits this reviewer's label (it is
    in their queue: open and not labelled by them, or, for an adjudicator, awaiting
    adjudication and not labelled by them).

Shown blind means: no verdict, score, priority, routing reason or detail, audit flag, band,
automatic label, card or judge model (:func:`judge.review.blinded`), on every page and JSON
route that shows the item (the queue, the item, the answer to a label). Once the reviewer has
labelled the blind item (or it is closed), the open items of the case show the judge again; a
blind item itself stays blind for good. Blindness cannot undo what a reviewer saw before the
blind item was queued: queue label plans before routing the same runs openly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from judge.review.queue import blinded, queue
from judge.store import Store
from judge.types import ReviewItem, Role

#: Items read from the queue per query while looking for a reviewer's blind items.
PAGE = 500


@dataclass(frozen=True)
class ReviewerQueue:
    """Everything one reviewer may label now (in priority order), and which cases they owe a
    blind label (case id -> the first such blind item's id)."""

    reviewer: str
    items: list[ReviewItem]
    blind_cases: Mapping[str, str] = field(default_factory=dict)
    #: The service forces blind review for every item.
    force_blind: bool = False

    def blind(self, item: ReviewItem) -> bool:
        """Whether ``item`` must be shown blind to this reviewer."""
        return self.force_blind or item.blind or item.case_id in self.blind_cases

    def shown(self, item: ReviewItem) -> ReviewItem:
        """``item`` as this reviewer may see it."""
        return blinded(item) if self.blind(item) else item

    def blocking(self, item: ReviewItem) -> str | None:
        """The id of the blind item of ``item``'s case that hides the judge from this reviewer
        (None when there is none, or it is ``item`` itself)."""
        other = self.blind_cases.get(item.case_id)
        return other if other != item.id else None


def _whole_queue(store: Store, reviewer: str, role: Role) -> Iterator[ReviewItem]:
    offset = 0
    while True:
        page = queue(store, reviewer=reviewer, role=role, limit=PAGE, offset=offset)
        yield from page
        if len(page) < PAGE:
            return
        offset += PAGE


def reviewer_queue(
    store: Store, *, reviewer: str, role: Role, force_blind: bool = False
) -> ReviewerQueue:
    """The whole queue of ``reviewer`` with the cases they owe a blind label (see the module
    doc for the rule)."""
    items = list(_whole_queue(store, reviewer, role))
    return ReviewerQueue(reviewer, items, owed_blind(items), force_blind)


def owed_blind(items: Iterable[ReviewItem]) -> dict[str, str]:
    """Case id -> the first blind item of that case among ``items`` (a reviewer's queue)."""
    owed: dict[str, str] = {}
    for item in items:
        if item.blind:
            owed.setdefault(item.case_id, item.id)
    return owed
