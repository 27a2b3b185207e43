"""Human review: the queue of routed items, labels and adjudication, reviewer agreement, the
page's view of an item, and the export of finished items as gold with lineage.

``apply`` routes a store's judgments with a card and queues what a person must see (review
decisions and a seeded fraction of automatic ones, as audits); ``queue`` holds the labelling
protocol; ``agreement`` compares reviewers; ``views`` builds what the page shows;
``gold_export`` writes finished items as a gold set.
"""

from judge.review.agreement import PairAgreement, agreement, pair_agreement
from judge.review.apply import RoutingRun, apply_card
from judge.review.gold_export import GoldExport, export_gold, gold_records
from judge.review.queue import (
    add_label,
    add_shown_label,
    blinded,
    display_swapped,
    enqueue,
    get_item,
    item_id_for,
    items,
    labels,
    queue,
    to_canonical,
    to_shown,
    uncertainty,
)
from judge.review.views import (
    CandidateView,
    DiffLine,
    EvidenceView,
    ItemView,
    VerdictView,
    diff_lines,
    item_view,
)

__all__ = [
    "CandidateView",
    "DiffLine",
    "EvidenceView",
    "GoldExport",
    "ItemView",
    "PairAgreement",
    "RoutingRun",
    "VerdictView",
    "add_label",
    "add_shown_label",
    "agreement",
    "apply_card",
    "blinded",
    "diff_lines",
    "display_swapped",
    "enqueue",
    "export_gold",
    "get_item",
    "gold_records",
    "item_id_for",
    "item_view",
    "items",
    "labels",
    "pair_agreement",
    "queue",
    "to_canonical",
    "to_shown",
    "uncertainty",
]
