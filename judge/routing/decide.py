"""Decide: a card's certified bands applied to each group's pooled score.

Judgments are pooled per (case, judge model) over answer orders and repeated samples, the same
way the card was calibrated (``calibration.confidence.score_items``: mean P(pass) or P(A), or the
vote share), mapped through the card's calibrator, and compared with the card's certified
thresholds, after the gates (``judge.routing.gates``).

A cascade card (Trust or Escalate: judges cheapest first, each with its own certified bands)
routes each case stage by stage: a stage decides inside its bands, otherwise the case goes to
the next stage, and to a person after the last (``route_cascade``); its decisions name the
stage in ``slice``.

A panel card decides from one score combined from every member's pooled score by the card's
rule (``calibration.panel``; ``route_panel``). It needs every member's judgment: a case a member
has not judged goes to review (``member_missing``), and so does one where a member's judgment
failed or abstained (``member_failed``) or tripped another gate (that gate's reason, the member
named): a panel is never decided on part of its members.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from calibration.card import Card, ConfidenceRef, PolicySection, SlicePolicy
from calibration.confidence import CALIBRATOR_FROM_PARAMS, calibrator_from_params, score_items
from calibration.options import PANEL_RULES, PanelRule
from calibration.panel import PanelModel, combine_probs
from judge.digests import short_hash
from judge.errors import CardError
from judge.routing.cards import card_digest, select_for_card, stage_label
from judge.routing.gates import CARD_GATES, GATES, Group, groups
from judge.types import Case, Decision, Judgment, RoutingDecision, ScoringKind


def calibrate_score(score: float, ref: ConfidenceRef) -> float:
    """Map a raw pooled score through the card's calibrator (identity when there is none)."""
    if ref.calibrator == "none":
        return score
    import numpy as np

    if ref.calibrator not in CALIBRATOR_FROM_PARAMS or ref.calibrator_params is None:
        raise CardError(
            f"the card's calibrator {ref.calibrator!r} cannot be applied here "
            f"(known: {', '.join(sorted(CALIBRATOR_FROM_PARAMS))}; parameters "
            f"{'missing' if ref.calibrator_params is None else 'present'}); recalibrate"
        )
    try:
        calibrator = calibrator_from_params(ref.calibrator, ref.calibrator_params)
        value = float(calibrator.transform(np.asarray([score], dtype=float))[0])
    except (KeyError, TypeError, ValueError) as err:
        raise CardError(
            f"the card's {ref.calibrator} parameters are malformed ({err!r}); recalibrate"
        ) from err
    return min(1.0, max(0.0, value))


def _decision_id(digest: str, case_id: str, model: str) -> str:
    key = json.dumps([digest, case_id, model], separators=(",", ":"))
    return "r-" + short_hash(key)


@dataclass(frozen=True)
class Thresholds:
    """The certified thresholds that apply to one item (its slice's, for a per-slice card)."""

    accept: float | None
    reject: float | None
    decide: float | None
    slice: str | None
    #: Why there are no thresholds at all (a slice the card does not automate).
    missing: str | None = None


def thresholds_for(policy: PolicySection, slices: Mapping[str, Any] | None) -> Thresholds:
    """The thresholds of ``policy`` for an item with these ``slices`` (its case's)."""
    if not policy.per_slice:
        return Thresholds(
            policy.auto_accept_threshold,
            policy.auto_reject_threshold,
            policy.decide_threshold,
            None,
        )
    key = policy.slice_key or ""
    # Calibration keys slices by str(value), a missing value being "None" (bands._slice_parts).
    value = str(slices.get(key)) if slices is not None else "None"
    part: SlicePolicy | None = policy.per_slice.get(value)
    if part is None:
        return Thresholds(None, None, None, value, f"slice {key}={value} has no certified band")
    return Thresholds(
        part.auto_accept_threshold, part.auto_reject_threshold, part.decide_threshold, value
    )


def band_decision(
    kind: ScoringKind, score: float, t: Thresholds
) -> tuple[Decision, str | None, str, str, str | None]:
    """(decision, label, reason, detail, band) for a pooled score under the thresholds."""
    where = f" (slice {t.slice})" if t.slice is not None else ""
    if kind == "pairwise":
        conf = max(score, 1.0 - score)
        if t.decide is not None and conf >= t.decide:
            label = "A" if score > 0.5 else "B" if score < 0.5 else "tie"
            detail = f"confidence {conf:.4f} >= decide threshold {t.decide:.4g}{where}"
            return "auto_decide", label, "in_decide_band", detail, "decide"
        if t.decide is None:
            return "review", None, "no_certified_band", t.missing or f"no decide band{where}", None
        detail = f"confidence {conf:.4f} < decide threshold {t.decide:.4g}{where}"
        return "review", None, "outside_bands", detail, None
    if t.accept is not None and score > 0.5 and score >= t.accept:
        detail = f"P(pass) {score:.4f} >= accept threshold {t.accept:.4g}{where}"
        return "auto_accept", "pass", "in_accept_band", detail, "accept"
    if t.reject is not None and score < 0.5 and score <= t.reject:
        detail = f"P(pass) {score:.4f} <= reject threshold {t.reject:.4g}{where}"
        return "auto_reject", "fail", "in_reject_band", detail, "reject"
    if t.accept is None and t.reject is None:
        return "review", None, "no_certified_band", t.missing or f"no band{where}", None
    low = f"{t.reject:.4g} < " if t.reject is not None else ""
    high = f" < {t.accept:.4g}" if t.accept is not None else ""
    return "review", None, "outside_bands", f"{low}P(pass) {score:.4f}{high}{where}", None


def route_group(
    group: Group, card: Card, *, case: Case | None = None, now: datetime | None = None
) -> RoutingDecision:
    """The decision for one (case, judge) group under ``card`` (no store involved)."""
    base = _decision_fields(
        card, group.case_id, group.model, group.model, group.judgments, group.judgments[0], now
    )
    raw, score, gated = _score_and_gates(group, card, case)
    base |= {"raw_score": raw, "score": score}
    if gated is not None:
        return RoutingDecision(decision="review", reason=gated[0], detail=gated[1], **base)
    assert score is not None
    thresholds = thresholds_for(card.policy, case.slices if case is not None else None)
    decision, label, reason, detail, band = band_decision(group.kind, score, thresholds)
    return RoutingDecision(
        decision=decision,
        label=label,
        reason=reason,
        detail=detail,
        band=band,
        slice=thresholds.slice,
        **base,
    )


def _decision_fields(
    card: Card,
    case_id: str,
    key: str,
    model: str,
    judgments: Sequence[Judgment],
    rubric_of: Judgment,
    now: datetime | None,
) -> dict[str, Any]:
    """What every decision carries: its id (card, case and ``key``: the judge, or the cascade),
    the card, case, deciding judge, rubric, the judgments consulted and the routing time."""
    digest = card_digest(card)
    return {
        "id": _decision_id(digest, case_id, key),
        "card_digest": digest,
        "case_id": case_id,
        "model": model,
        "rubric_id": rubric_of.provenance.rubric_id,
        "rubric_version": rubric_of.provenance.rubric_version,
        "kind": card.calibration.kind,
        "judgment_ids": [x.id for x in judgments],
        "routed_at": now or datetime.now(UTC),
    }


def _score_and_gates(
    group: Group, card: Card, case: Case | None = None
) -> tuple[float | None, float | None, tuple[str, str] | None]:
    """(raw pooled score, score after the card's calibrator, (reason, detail) of the first gate
    that sends the group to review, or None). Card gates (``gates.CARD_GATES``: what the card's
    probes section says of the judge) come after the judgment gates."""
    scores = score_items(group.rows, kind=group.kind)
    raw = scores.items[0].score if scores.items else None
    score = calibrate_score(raw, card.calibration.confidence) if raw is not None else None
    for reason, gate in GATES:
        detail = gate(group)
        if detail is not None:
            return raw, score, (reason, detail)
    for reason, card_gate in CARD_GATES:
        detail = card_gate(group, card, case)
        if detail is not None:
            return raw, score, (reason, detail)
    if score is None:
        return raw, score, ("unscored", "no ok judgment with a probability or a known label")
    return raw, score, None


#: Gates that mean a member gave no usable verdict: a panel member's becomes ``member_failed``.
MEMBER_FAILURES = frozenset({"parse_error", "provider_failure", "abstained", "unscored"})


def panel_rule(card: Card) -> tuple[PanelRule, PanelModel | None]:
    """A panel card's rule and (for the fitted rule) its model; CardError when unusable."""
    ref = card.calibration.confidence
    rule = ref.panel_rule
    short = card_digest(card)[:19]
    if rule not in PANEL_RULES or rule == "pooled":
        raise CardError(
            f"card {short} is a panel card with rule {rule!r}, which routing cannot apply "
            f"(known: {', '.join(r for r in PANEL_RULES if r != 'pooled')}); recalibrate"
        )
    if rule != "fitted":
        return cast(PanelRule, rule), None
    try:
        model = PanelModel.from_params(ref.panel_params or {})
    except (KeyError, TypeError, ValueError) as err:
        raise CardError(
            f"card {short}: the panel's fitted parameters are malformed ({err!r}); recalibrate"
        ) from err
    members = [m.model for m in card.judge.members or ()]
    if list(model.members) != members:
        raise CardError(
            f"card {short}: the panel's fitted model is for {list(model.members)}, the card's "
            f"members are {members}; recalibrate"
        )
    return "fitted", model


def route_panel(
    case_id: str,
    groups: Mapping[str, Group],
    card: Card,
    *,
    case: Case | None = None,
    now: datetime | None = None,
) -> RoutingDecision:
    """The decision for one case under a panel card: every member's pooled score, combined by
    the card's rule, against the card's thresholds; review when a member is missing, failed or
    tripped a gate (see the module docstring)."""
    members = [m.model for m in card.judge.members or ()]
    rule, model = panel_rule(card)
    present = [groups[m] for m in members if m in groups]
    consulted = [x for g in present for x in g.judgments]
    anchor = present[0] if present else next(iter(groups.values()))

    def decision(**fields: Any) -> RoutingDecision:
        return RoutingDecision(
            **_decision_fields(
                card,
                case_id,
                card.judge.model,
                card.judge.model,
                consulted,
                anchor.judgments[0],
                now,
            ),
            **fields,
        )

    missing = [m for m in members if m not in groups]
    if missing:
        detail = (
            f"panel member(s) {', '.join(missing)} have not judged this case; a panel decides "
            f"only with all of {', '.join(members)}: judge it with --model {missing[0]} and "
            "route again"
        )
        return decision(decision="review", reason="member_missing", detail=detail)
    raws: list[float] = []
    for member in members:
        raw, _, gated = _score_and_gates(groups[member], card)
        if gated is not None:
            reason = "member_failed" if gated[0] in MEMBER_FAILURES else gated[0]
            detail = f"panel member {member}: {gated[1]}" + (
                f" ({gated[0]})" if reason == "member_failed" else ""
            )
            return decision(decision="review", reason=reason, detail=detail)
        assert raw is not None
        raws.append(raw)
    score = combine_probs(raws, rule, model)
    thresholds = thresholds_for(card.policy, case.slices if case is not None else None)
    verdict, label, reason, detail, band = band_decision(card.calibration.kind, score, thresholds)
    members_detail = ", ".join(f"{m} {r:.4f}" for m, r in zip(members, raws, strict=True))
    return decision(
        decision=verdict,
        label=label,
        reason=reason,
        detail=f"panel ({rule}: {members_detail}): {detail}",
        band=band,
        slice=thresholds.slice,
        score=score,
        raw_score=score,
    )


def route_cascade(
    case_id: str,
    groups: Mapping[str, Group],
    card: Card,
    *,
    now: datetime | None = None,
) -> RoutingDecision:
    """The decision for one case under a cascade card (Trust or Escalate), cheapest stage first.

    Each stage's pooled score is compared with that stage's certified thresholds: inside a band
    the stage decides; outside, the case escalates to the next stage; after the last, a person
    reviews it. A gate (flagged evidence, a failed or abstaining judgment, disagreeing orders,
    samples or variants) sends the case to review at the stage where it fires rather than
    escalating it: the later stages were certified on the cases the earlier ones passed on for
    their scores, not on these. A stage the case reaches that has not judged it stops routing
    (`stage_missing`): judge the case with that model and route again.
    """
    stages = card.policy.cascade or []
    digest = card_digest(card)
    if card.calibration.confidence.calibrator != "none":
        raise CardError(
            f"card {digest[:19]} is a cascade card with a {card.calibration.confidence.calibrator} "
            "calibrator; cascade stages are certified on raw scores: recalibrate without one"
        )
    path: list[str] = []
    consulted: list[Judgment] = []

    def decision(group: Group | None, model: str, **fields: Any) -> RoutingDecision:
        note = "; ".join(path)
        fields["detail"] = f"{note}; {fields['detail']}" if note else fields["detail"]
        rubric_of = (group or next(iter(groups.values()))).judgments[0]
        return RoutingDecision(
            **_decision_fields(card, case_id, card.judge.model, model, consulted, rubric_of, now),
            **fields,
        )

    for k, stage in enumerate(stages, start=1):
        where = stage_label(k, stage.model)
        group = groups.get(stage.model)
        if group is None:
            detail = (
                f"{where} has not judged this case: judge it with --model {stage.model} "
                "and route again"
            )
            return decision(
                None,
                stage.model,
                decision="review",
                reason="stage_missing",
                detail=detail,
                slice=where,
            )
        consulted.extend(group.judgments)
        raw, score, gated = _score_and_gates(group, card)
        scores = {"raw_score": raw, "score": score, "slice": where}
        if gated is not None:
            return decision(
                group,
                stage.model,
                decision="review",
                reason=gated[0],
                detail=f"{where}: {gated[1]}",
                **scores,
            )
        assert score is not None
        thresholds = Thresholds(
            stage.auto_accept_threshold, stage.auto_reject_threshold, stage.decide_threshold, None
        )
        verdict, label, reason, detail, band = band_decision(group.kind, score, thresholds)
        if verdict != "review" or k == len(stages):
            return decision(
                group,
                stage.model,
                decision=verdict,
                label=label,
                reason=reason,
                detail=f"{where}: {detail}",
                band=band,
                **scores,
            )
        path.append(f"{where}: {detail}, escalated")
    raise CardError(f"card {digest[:19]} has an empty cascade")


def route_judgments(
    card: Card,
    judgments: Iterable[Judgment],
    *,
    cases: Mapping[str, Case] | None = None,
    now: datetime | None = None,
) -> list[RoutingDecision]:
    """Check the card against the judgments (CardError on a mismatch), then route each group."""
    mine = select_for_card(card, judgments, now=now)
    kind: ScoringKind = card.calibration.kind
    moment = now or datetime.now(UTC)
    grouped = groups(mine, kind)
    cases = cases or {}
    if card.judge.members:
        per_case: dict[str, dict[str, Group]] = defaultdict(dict)
        for g in grouped:
            per_case[g.case_id][g.model] = g
        return [
            route_panel(case_id, by_model, card, case=cases.get(case_id), now=moment)
            for case_id, by_model in per_case.items()
        ]
    if card.policy.cascade:
        by_case: dict[str, dict[str, Group]] = defaultdict(dict)
        for g in grouped:
            by_case[g.case_id][g.model] = g
        return [
            route_cascade(case_id, by_model, card, now=moment)
            for case_id, by_model in by_case.items()
        ]
    return [route_group(g, card, case=cases.get(g.case_id), now=moment) for g in grouped]
