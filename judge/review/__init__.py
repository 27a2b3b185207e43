"""Human review: the queue of routed items, labels and adjudication, reviewer agreement, the
page's view of an item, and the export of finished items as gold with lineage.

``apply`` routes a store's judgments with a card and queues what a person must see (review
decisions and a seeded fraction of automatic ones, as audits); ``queue`` holds the labelling
protocol; ``agreement`` compares reviewers; ``views`` builds what the page shows;
``gold_export`` writes finished items as a gold set; ``planned`` queues the runs a label
plan drew (blind, for prediction-powered estimates); ``blindness`` keeps a case blind for a
reviewer who still owes it a blind label, on every item of the case; ``fbd`` queues diagnosed
failed runs (their first bad decisions) and builds the timeline the page shows of one.
"""

from judge.review.agreement import (
    PairAgreement,
    StepAgreement,
    agreement,
    pair_agreement,
    step_agreement,
)
from judge.review.apply import RoutingRun, route
from judge.review.blindness import ReviewerQueue, reviewer_queue
from judge.review.fbd import FbdQueued, FbdView, StepView, queue_diagnoses
from judge.review.gold_export import GoldExport, export_gold, gold_records
from judge.review.planned import (
    StoredPlan,
    enqueue_plan,
    plan_item_ids,
    plans_for,
    runs_digest,
    save_plan,
)
from judge.review.queue import (
    add_label,
    add_shown_label,
    blinded,
    display_swapped,
    enqueue,
    get_item,
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
    "FbdQueued",
    "FbdView",
    "GoldExport",
    "ItemView",
    "PairAgreement",
    "ReviewerQueue",
    "RoutingRun",
    "StepAgreement",
    "StepView",
    "StoredPlan",
    "VerdictView",
    "add_label",
    "add_shown_label",
    "agreement",
    "route",
    "blinded",
    "diff_lines",
    "enqueue_plan",
    "display_swapped",
    "enqueue",
    "export_gold",
    "get_item",
    "gold_records",
    "item_view",
    "items",
    "labels",
    "pair_agreement",
    "plan_item_ids",
    "plans_for",
    "queue",
    "queue_diagnoses",
    "reviewer_queue",
    "runs_digest",
    "save_plan",
    "step_agreement",
    "to_canonical",
    "to_shown",
    "uncertainty",
]
