"""Routing: apply a calibration card to judgments: auto-accept, auto-reject, auto-decide or review.

``gates`` sends a group of judgments to review for a named reason before any band is consulted;
``decide`` routes stored judgments with a card; ``cards`` checks that a
card may route the judgments given (it is refused, naming every mismatch, when its judge model,
rubric digest or evidence-selector version differ from the judgments', when it has expired, or
when audit labels have flagged it stale); ``audit`` samples automatic decisions for audit and
keeps each band's live error bound; ``recorded`` routes recorded verdicts (the
../shared/judgments format) with a card and no store. Both ``decide`` and ``recorded`` adapt
their verdicts to one shape and let ``walk`` apply the card (one judge's bands, a panel's rule,
a cascade's stages). Queueing the decisions for people is ``judge.review``'s.
"""

from judge.routing.audit import (
    AuditLabel,
    AuditStatus,
    BandAudit,
    audit_cards,
    audit_sample,
    live_bounds,
    stale_reason,
)
from judge.routing.cards import (
    card_digest,
    card_models,
    check_card_before_judging,
    get_card,
    save_card,
    select_for_card,
    stage_label,
)
from judge.routing.decide import route_judgments
from judge.routing.gates import GATES, Group, groups, majority
from judge.routing.reasons import AUTO_DECISIONS, AWAITING_JUDGE, REASONS
from judge.routing.recorded import count_decisions, route_recorded
from judge.routing.walk import calibrate_score

__all__ = [
    "AUTO_DECISIONS",
    "AWAITING_JUDGE",
    "AuditLabel",
    "AuditStatus",
    "BandAudit",
    "GATES",
    "Group",
    "REASONS",
    "audit_sample",
    "calibrate_score",
    "card_digest",
    "card_models",
    "count_decisions",
    "check_card_before_judging",
    "get_card",
    "groups",
    "live_bounds",
    "majority",
    "audit_cards",
    "route_judgments",
    "route_recorded",
    "save_card",
    "select_for_card",
    "stage_label",
    "stale_reason",
]
