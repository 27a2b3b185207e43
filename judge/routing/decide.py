"""Decide: stored judgments routed with a card, one decision per case (and judge).

Judgments are grouped per (case, judge model) over answer orders, repeated samples and prompt
variants (``judge.routing.gates.groups``) and pooled the same way the card was calibrated
(``calibration.confidence.score_items``: mean P(pass) or P(A), or the vote share); each group's
first gate (``judge.routing.gates``: the judgment gates, then the card's) is found, and the
card walks the case's groups (``judge.routing.walk``: one judge's bands, a panel's rule, a
cascade's stages). Each outcome is written as a ``RoutingDecision`` naming the card, the case,
the judge that decided and the judgments consulted.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from calibration.card import Card
from calibration.confidence import score_items
from judge.digests import short_hash
from judge.routing.cards import card_digest, select_for_card
from judge.routing.gates import CARD_GATES, GATES, Group, check_decided, groups
from judge.routing.walk import Gate, Outcome, Verdicts, walk
from judge.types import Case, Judgment, RoutingDecision


def _decision_id(digest: str, case_id: str, model: str) -> str:
    key = json.dumps([digest, case_id, model], separators=(",", ":"))
    return "r-" + short_hash(key)


def _first_gate(group: Group, card: Card, case: Case | None = None) -> Gate | None:
    """The first gate that sends the group to review: the judgment gates, then the card's
    (``gates.CARD_GATES``: what the card's probes section says of the judge); None when none
    does."""
    for reason, gate in GATES:
        detail = gate(group)
        if detail is not None:
            return Gate(reason, detail)
    for reason, card_gate in CARD_GATES:
        detail = card_gate(group, card, case)
        if detail is not None:
            return Gate(reason, detail)
    return None


def _verdicts(group: Group, card: Card, case: Case | None = None) -> Verdicts:
    """The group as the walk reads it: its pooled raw score and its first gate (``unscored``
    when no gate fires but no verdict is usable)."""
    scores = score_items(group.rows, kind=group.kind)
    raw = scores.items[0].score if scores.items else None
    gate = _first_gate(group, card, case)
    if gate is None and raw is None:
        statuses = Counter(x.status for x in group.judgments)
        tally = ", ".join(f"{status} x{n}" for status, n in sorted(statuses.items()))
        gate = Gate("unscored", f"judgments: {tally}")
    return Verdicts(group.model, raw, gate, group.judgments)


def _route_case(
    card: Card,
    case_id: str,
    by_model: Mapping[str, Group],
    *,
    case: Case | None = None,
    now: datetime | None = None,
) -> RoutingDecision:
    """The decision of ``card`` for one case from its groups (judge model -> group). A panel's
    members and a cascade's stages are gated without the case, as they always have been (so a
    card gate that reads the case, the length probe's, finds the trace length unknown)."""
    anchor = next(iter(by_model.values())).judgments[0]
    failed = _failed_by_check(card, by_model)
    if failed is not None:
        return _decision(card, case_id, failed, anchor, now)
    alone = not (card.judge.members or card.policy.cascade)
    verdicts = {m: _verdicts(g, card, case if alone else None) for m, g in by_model.items()}
    outcome = walk(card, verdicts, case.slices if case is not None else None)
    return _decision(card, case_id, outcome, anchor, now)


def _failed_by_check(card: Card, by_model: Mapping[str, Group]) -> Outcome | None:
    """A run a hard check failed is rejected with the check's reason, before any gate or band:
    the card applies only to what the model decided (a pass/fail card; any other kind sends
    the run to review with that reason)."""
    for model, group in by_model.items():
        detail = check_decided(group)
        if detail is not None:
            binary = card.calibration.kind == "binary"
            return Outcome(
                decision="auto_reject" if binary else "review",
                reason="check_failed",
                detail=detail,
                model=model,
                consulted=(Verdicts(model, None, None, group.judgments),),
                label="fail" if binary else None,
            )
    return None


def _decision(
    card: Card,
    case_id: str,
    outcome: Outcome,
    anchor: Judgment,
    now: datetime | None = None,
) -> RoutingDecision:
    """The outcome as stored: its id (card, case and the card's judge), the card, case,
    deciding judge, rubric (of the first judgments consulted, else ``anchor``'s), the judgments
    consulted and the routing time."""
    digest = card_digest(card)
    consulted = [x for v in outcome.consulted for x in v.judgments]
    rubric_of = consulted[0] if consulted else anchor
    return RoutingDecision(
        id=_decision_id(digest, case_id, card.judge.model),
        card_digest=digest,
        case_id=case_id,
        model=outcome.model,
        rubric_id=rubric_of.provenance.rubric_id,
        rubric_version=rubric_of.provenance.rubric_version,
        kind=card.calibration.kind,
        judgment_ids=[x.id for x in consulted],
        routed_at=now or datetime.now(UTC),
        decision=outcome.decision,
        label=outcome.label,
        reason=outcome.reason,
        detail=outcome.detail,
        band=outcome.band,
        slice=outcome.slice,
        score=outcome.score,
        raw_score=outcome.raw_score,
    )


def route_judgments(
    card: Card,
    judgments: Iterable[Judgment],
    *,
    cases: Mapping[str, Case] | None = None,
    now: datetime | None = None,
) -> list[RoutingDecision]:
    """Check the card against the judgments (CardError on a mismatch), then route each case."""
    mine = select_for_card(card, judgments, now=now)
    moment = now or datetime.now(UTC)
    per_case: dict[str, dict[str, Group]] = defaultdict(dict)
    for g in groups(mine, card.calibration.kind):
        per_case[g.case_id][g.model] = g
    cases = cases or {}
    return [
        _route_case(card, case_id, by_model, case=cases.get(case_id), now=moment)
        for case_id, by_model in per_case.items()
    ]
