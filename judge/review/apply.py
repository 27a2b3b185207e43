"""Apply a card to a store: route the judgments, keep the decisions, queue review and audits."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from calibration.card import Card, load_card
from judge.errors import CardError
from judge.judging import JudgeOptions
from judge.review.facts_check import FactsRun, check_auto_band, require_checks
from judge.review.queue import enqueue
from judge.routing import audit_sample, card_models, route_judgments, save_card, stale_reason
from judge.store import Store
from judge.types import Judgment, RoutingDecision


@dataclass
class RoutingRun:
    """What one application of a card did."""

    card_digest: str
    decisions: list[RoutingDecision]
    enqueued: int = 0
    audited: int = 0
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: The facts-only checks made before deciding (``facts``), or None.
    facts: FactsRun | None = None


def route(
    store: Store,
    card: Card | str | Path,
    *,
    judgments: Sequence[Judgment] | None = None,
    audit_fraction: float = 0.05,
    seed: int = 0,
    double_fraction: float = 0.0,
    blind: bool = False,
    now: datetime | None = None,
    facts: JudgeOptions | None = None,
) -> RoutingRun:
    """Apply a calibration card (or the path of one) to the store's judgments, or to
    ``judgments``: decide auto-accept, auto-reject, auto-decide or review for each (case,
    judge), keep the decisions, and queue review items and a seeded fraction of audits.

    Refuses (CardError) a card that does not bind the judgments' judge, has expired, or that
    audits have flagged stale. Decisions are stored with the card digest; review items are
    queued once per decision (re-routing keeps the labels already given).

    With ``facts`` (where and how to call the card's judge), every verdict the card would
    decide automatically is first checked on the run's facts-only copy, judged with those
    options (``judge.review.facts_check``); a verdict the copy does not give goes to review.
    """
    if not isinstance(card, Card):
        card = load_card(card)
    digest = save_card(store, card)
    reason = stale_reason(store, digest)
    if reason is not None:
        raise CardError(
            f"card {digest[:19]} was flagged stale by audit: {reason}. Recalibrate the judge "
            "(`judge calibrate`, with the exported review labels as extra gold) before routing"
        )
    if judgments is None:
        j = card.judge
        models = card_models(card)
        judgments = [x for m in models for x in store.judgments(model=m, rubric_id=j.rubric.id)]
        if not judgments:
            raise CardError(
                f"no stored judgments by {' or '.join(repr(m) for m in models)} with rubric "
                f"{j.rubric.id} in {store.location}; judge the cases with that judge first "
                "(`judge run`)"
            )
    cases = store.get_cases(x.case_id for x in judgments)
    checked = None
    if facts is not None:
        checked = check_auto_band(store, card, judgments, cases=cases, options=facts, now=now)
        # A check already stored is among both: each judgment once.
        judgments = list({x.id: x for x in [*judgments, *checked.judgments]}.values())
    decisions = route_judgments(card, judgments, cases=cases, now=now)
    if checked is not None:
        decisions = require_checks(decisions, checked.unchecked)
    audited = audit_sample(decisions, audit_fraction, seed)
    decisions = [d.model_copy(update={"audit": d.id in audited}) for d in decisions]
    store.save_decisions(decisions)
    enqueued = enqueue(
        store, decisions, seed=seed, double_fraction=double_fraction, blind=blind, card=card
    )
    run = RoutingRun(digest, decisions, enqueued=enqueued, audited=len(audited), facts=checked)
    run.counts.update((d.decision, d.reason) for d in decisions)
    return run
