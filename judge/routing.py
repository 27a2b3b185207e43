"""Apply a calibration card to stored judgments: auto-accept, auto-reject, auto-decide or review.

Judgments are pooled per (case, judge model) over answer orders and repeated samples, the same
way the card was calibrated (``calibration.confidence.score_items``: mean P(pass) or P(A), or the
vote share), mapped through the card's calibrator, and compared with the card's certified
thresholds. Before any band is consulted, a sequence of gates sends an item to review for a named
reason: flagged evidence (never decided automatically), parse or provider failures, abstentions,
answer orders that disagree, repeated samples that disagree, prompt variants that
disagree.

A cascade card (Trust or Escalate: judges cheapest first, each with its own certified bands)
routes each case stage by stage: a stage decides inside its bands, otherwise the case goes to
the next stage, and to a person after the last (``route_cascade``); its decisions name the
stage in ``slice``, and audits bound each stage's bands.

A card is refused, with a message naming every mismatch, when its judge model, rubric digest or
evidence-selector version differ from the judgments', when it has expired (``verify_card``), or
when audit labels have flagged it stale.

Audit: a seeded fraction of the automatic decisions goes to the review queue as well. As audit
labels come in, each band's error bound is recomputed on the card's gold counts plus the audit
counts (one-sided Clopper-Pearson at the band's level); a bound above the card's alpha marks the
card stale, and routing with it is refused until the judge is recalibrated.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from judge.errors import CardError, InputError
from judge.types import ABSTAIN_LABEL, Case, Judgment

if TYPE_CHECKING:
    from calibration.card import Card, ConfidenceRef, PolicySection, SlicePolicy
    from calibration.records import VerdictRow
    from judge.store import Store

Decision = Literal["auto_accept", "auto_reject", "auto_decide", "review"]
AUTO_DECISIONS: frozenset[str] = frozenset({"auto_accept", "auto_reject", "auto_decide"})
Kind = Literal["binary", "pairwise"]

#: Every reason a routing decision can carry, and what it means.
REASONS: Mapping[str, str] = MappingProxyType(
    {
        "in_accept_band": "P(pass) is inside the certified accept band",
        "in_reject_band": "P(pass) is inside the certified reject band",
        "in_decide_band": "the judge's confidence is inside the certified decide band",
        "outside_bands": "the score is outside every certified band",
        "no_certified_band": "the card certifies no band here: every item goes to review",
        "flagged_evidence": "evidence was flagged as instructions aimed at the judge",
        "parse_error": "the judge's answer could not be parsed",
        "provider_failure": "the provider failed after every retry",
        "abstained": "the judge said the evidence shown cannot decide",
        "orders_disagreed": "the two answer orders gave different verdicts",
        "samples_disagreed": "repeated samples gave different verdicts",
        "variants_disagreed": "the rubric's prompt variants gave different verdicts",
        "unscored": "no verdict with a probability or a usable label",
        "stage_missing": "a cascade stage this case reached has not judged it yet (not queued "
        "for people: judge the case with that stage's model and route again)",
    }
)
#: Review reasons that wait for a judge rather than a person: never put in the review queue.
AWAITING_JUDGE: frozenset[str] = frozenset({"stage_missing"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoutingDecision(_Model):
    """What a card decided for one (case, judge model), and why."""

    id: str
    card_digest: str
    case_id: str
    model: str
    rubric_id: str
    rubric_version: int
    kind: Kind
    decision: Decision
    #: The label decided without a human (pass, fail, A, B, tie); None for review.
    label: str | None = None
    #: A key of REASONS.
    reason: str
    detail: str
    #: The band that decided (accept, reject, decide), if any.
    band: str | None = None
    #: The pooled score after the card's calibrator (P(pass) or P(A)), if any.
    score: float | None = None
    raw_score: float | None = None
    #: The slice value whose thresholds applied (per-slice cards).
    slice: str | None = None
    judgment_ids: list[str]
    #: Also sent to the review queue as an audit of an automatic decision.
    audit: bool = False
    routed_at: datetime


class BandAudit(_Model):
    """One band's live error bound: the card's gold counts plus the audit labels so far."""

    band: str
    slice: str | None = None
    alpha: float
    level: float
    card_n: int
    card_errors: int
    audit_n: int
    audit_errors: int
    #: One-sided Clopper-Pearson upper bound on (card + audit) counts at ``level``.
    upper_bound: float
    #: The same bound on the audit labels alone (wide until many audits are in).
    audit_upper_bound: float | None
    exceeds_alpha: bool


class AuditStatus(_Model):
    """The audit state of one card."""

    card_digest: str
    stale: bool
    stale_reason: str | None = None
    bands: list[BandAudit]


# --- Gates: reasons to send an item to review before any band is consulted ---------------------


@dataclass(frozen=True)
class Group:
    """Every judgment of one judge on one case (all orders and samples)."""

    case_id: str
    model: str
    kind: Kind
    judgments: tuple[Judgment, ...]
    rows: tuple[VerdictRow, ...]


Gate = Callable[[Group], str | None]


def _flagged(g: Group) -> str | None:
    flagged = sorted({e for j in g.judgments for e in j.provenance.flagged_evidence})
    if not flagged:
        return None
    return f"evidence {', '.join(flagged)} flagged as instructions to the judge"


def _count_status(g: Group, status: str) -> int:
    return sum(1 for j in g.judgments if j.status == status)


def _parse_failed(g: Group) -> str | None:
    n = _count_status(g, "parse_error")
    return f"{n} of {len(g.judgments)} judgments unparseable" if n else None


def _provider_failed(g: Group) -> str | None:
    n = _count_status(g, "infra_error")
    return f"{n} of {len(g.judgments)} judgments failed at the provider" if n else None


def _abstained(g: Group) -> str | None:
    n = sum(1 for r in g.rows if r.status == "abstain")
    return f"{n} of {len(g.judgments)} judgments abstained ({ABSTAIN_LABEL})" if n else None


def majority(labels: Sequence[str]) -> str | None:
    """The label most voted; None on a tie between the top labels or with no votes (a tie has
    no majority: it is its own answer, not the first label seen)."""
    counts = Counter(labels).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _majority(labels: Sequence[str]) -> str:
    return majority(labels) or "(split)"


def _orders_disagree(g: Group) -> str | None:
    by_order: dict[str, list[str]] = defaultdict(list)
    for r in g.rows:
        if r.order is not None and r.verdict is not None:
            by_order[r.order].append(r.verdict)
    if len(by_order) < 2:
        return None
    verdicts = {order: _majority(labels) for order, labels in sorted(by_order.items())}
    if len(set(verdicts.values())) == 1:
        return None
    return "orders gave " + ", ".join(f"{o}: {v}" for o, v in verdicts.items())


def _tally(labels: Sequence[str]) -> str:
    return ", ".join(f"{label} x{n}" for label, n in sorted(Counter(labels).items()))


def _samples_disagree(g: Group) -> str | None:
    """Repeated samples of one prompt variant in one order gave different verdicts."""
    by_key: dict[tuple[str | None, int], list[str]] = defaultdict(list)
    for x, r in zip(g.judgments, g.rows, strict=True):
        if r.verdict is not None:
            by_key[(r.order, x.provenance.variant)].append(r.verdict)
    for (order, variant), labels in sorted(by_key.items(), key=lambda kv: (kv[0][0] or "",
                                                                         kv[0][1])):
        if len(set(labels)) > 1:
            where = f" in order {order}" if order else ""
            which = f" of prompt variant {variant}" if variant else ""
            return f"samples{which}{where} gave " + _tally(labels)
    return None


def _variants_disagree(g: Group) -> str | None:
    """The rubric's prompt variants ("simulated annotators") gave different majority verdicts
    in one order: the pooled score averages them, but a split among them is a doubt a person
    should settle."""
    by_order: dict[str | None, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for x, r in zip(g.judgments, g.rows, strict=True):
        if r.verdict is not None:
            by_order[r.order][x.provenance.variant].append(r.verdict)
    for order, variants in sorted(by_order.items(), key=lambda kv: kv[0] or ""):
        majorities = [_majority(labels) for _, labels in sorted(variants.items())]
        if len(set(majorities)) > 1:
            where = f" in order {order}" if order else ""
            return f"prompt variants{where} gave " + _tally(majorities)
    return None


#: Checked in this order; the first that applies names the reason. Flagged evidence comes
#: first so that an injected item is never decided automatically, whatever else holds.
GATES: tuple[tuple[str, Gate], ...] = (
    ("flagged_evidence", _flagged),
    ("parse_error", _parse_failed),
    ("provider_failure", _provider_failed),
    ("abstained", _abstained),
    ("orders_disagreed", _orders_disagree),
    ("samples_disagreed", _samples_disagree),
    ("variants_disagreed", _variants_disagree),
)


# --- Calibrators stored in cards -------------------------------------------------------------


def calibrate_score(score: float, ref: ConfidenceRef) -> float:
    """Map a raw pooled score through the card's calibrator (identity when there is none)."""
    if ref.calibrator == "none":
        return score
    import numpy as np

    from calibration.confidence import CALIBRATOR_FROM_PARAMS, calibrator_from_params

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


# --- Checking a card against the judgments ---------------------------------------------------


def card_digest(card: Card) -> str:
    """The card's digest (computed when the card carries none)."""
    return card.card_digest or card.computed_digest()


def card_models(card: Card) -> list[str]:
    """The judge models whose judgments a card routes: its cascade's stages, cheapest first,
    or its one judge."""
    if card.policy.cascade:
        return [stage.model for stage in card.policy.cascade]
    return [card.judge.model]


def stage_label(k: int, model: str) -> str:
    """How a cascade decision names the stage that made it (in RoutingDecision.slice)."""
    return f"stage {k}: {model}"


def select_for_card(
    card: Card, judgments: Iterable[Judgment], *, now: datetime | None = None
) -> list[Judgment]:
    """The judgments this card may route; CardError when it binds another judge or is stale.

    Judgments of other models, rubrics or rubric versions are not this card's and are left
    out. Among the card's own, every (rubric digest, selector version) present must be the
    card's, and the card must not have expired (``calibration.card.verify_card``).
    """
    from calibration.card import verify_card

    j = card.judge
    short = card_digest(card)[:19]
    if j.rubric.digest is None or j.evidence_selector.version is None:
        raise CardError(
            f"card {short} was calibrated on {j.source} of {j.model!r} and binds no rubric "
            "digest or evidence-selector version, so it cannot vouch for this store's judgments; "
            "calibrate on them with `judge calibrate --db DB --gold GOLD.jsonl`"
        )
    every = list(judgments)
    models = card_models(card)
    mine = [
        x
        for x in every
        if x.provenance.model in models
        and x.provenance.rubric_id == j.rubric.id
        and x.provenance.rubric_version == j.rubric.version
    ]
    if not mine:
        present = sorted(
            {
                f"{x.provenance.model} / {x.provenance.rubric_id}@{x.provenance.rubric_version}"
                for x in every
            }
        )
        raise CardError(
            f"card {short} is for judge {j.model!r} with rubric {j.rubric.id}@{j.rubric.version}, "
            f"but the judgments given are by: {', '.join(present) or 'nobody (none given)'}. "
            "Use the card calibrated for that judge, or judge the cases with this one"
        )
    bindings = Counter((x.provenance.rubric_digest, x.provenance.selector_version) for x in mine)
    for (rubric_digest, selector_version), n in sorted(bindings.items()):
        try:
            verify_card(
                card,
                judge_model=j.model,
                rubric_digest=rubric_digest,
                selector_version=selector_version,
                now=now,
            )
        except CardError as err:
            raise CardError(f"card {short} refused for {n} judgment(s): {err}") from err
    return mine


# --- Routing ---------------------------------------------------------------------------------


def _decision_id(digest: str, case_id: str, model: str) -> str:
    key = json.dumps([digest, case_id, model], separators=(",", ":"))
    return "r-" + hashlib.sha256(key.encode()).hexdigest()[:20]


def _groups(judgments: Iterable[Judgment], kind: Kind) -> list[Group]:
    from calibration.inputs import judgment_to_row

    by_key: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for x in judgments:
        by_key[(x.case_id, x.provenance.model)].append(x)
    out = []
    for (case_id, model), items in by_key.items():
        items.sort(key=lambda x: (x.provenance.order or "", x.provenance.sample, x.id))
        rows = tuple(judgment_to_row(x) for x in items)
        out.append(Group(case_id, model, kind, tuple(items), rows))
    return out


@dataclass(frozen=True)
class _Thresholds:
    accept: float | None
    reject: float | None
    decide: float | None
    slice: str | None
    #: Why there are no thresholds at all (a slice the card does not automate).
    missing: str | None = None


def _thresholds(policy: PolicySection, case: Case | None) -> _Thresholds:
    if not policy.per_slice:
        return _Thresholds(
            policy.auto_accept_threshold,
            policy.auto_reject_threshold,
            policy.decide_threshold,
            None,
        )
    key = policy.slice_key or ""
    # Calibration keys slices by str(value), a missing value being "None" (bands._slice_parts).
    value = str(case.slices.get(key)) if case is not None else "None"
    part: SlicePolicy | None = policy.per_slice.get(value)
    if part is None:
        return _Thresholds(None, None, None, value, f"slice {key}={value} has no certified band")
    return _Thresholds(
        part.auto_accept_threshold, part.auto_reject_threshold, part.decide_threshold, value
    )


def _band(
    kind: Kind, score: float, t: _Thresholds
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
    base = _decision_fields(card, group.case_id, group.model, group.model, group.judgments,
                            group.judgments[0], now)
    raw, score, gated = _score_and_gates(group, card)
    base |= {"raw_score": raw, "score": score}
    if gated is not None:
        return RoutingDecision(decision="review", reason=gated[0], detail=gated[1], **base)
    assert score is not None
    thresholds = _thresholds(card.policy, case)
    decision, label, reason, detail, band = _band(group.kind, score, thresholds)
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
    group: Group, card: Card
) -> tuple[float | None, float | None, tuple[str, str] | None]:
    """(raw pooled score, score after the card's calibrator, (reason, detail) of the first gate
    that sends the group to review, or None)."""
    from calibration.confidence import score_items

    scores = score_items(group.rows, kind=group.kind)
    raw = scores.items[0].score if scores.items else None
    score = calibrate_score(raw, card.calibration.confidence) if raw is not None else None
    for reason, gate in GATES:
        detail = gate(group)
        if detail is not None:
            return raw, score, (reason, detail)
    if score is None:
        return raw, score, ("unscored", "no ok judgment with a probability or a known label")
    return raw, score, None


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
        return RoutingDecision(**_decision_fields(card, case_id, card.judge.model, model,
                                                  consulted, rubric_of, now), **fields)

    for k, stage in enumerate(stages, start=1):
        where = stage_label(k, stage.model)
        group = groups.get(stage.model)
        if group is None:
            detail = (f"{where} has not judged this case: judge it with --model {stage.model} "
                      "and route again")
            return decision(None, stage.model, decision="review", reason="stage_missing",
                            detail=detail, slice=where)
        consulted.extend(group.judgments)
        raw, score, gated = _score_and_gates(group, card)
        scores = {"raw_score": raw, "score": score, "slice": where}
        if gated is not None:
            return decision(group, stage.model, decision="review", reason=gated[0],
                            detail=f"{where}: {gated[1]}", **scores)
        assert score is not None
        thresholds = _Thresholds(stage.auto_accept_threshold, stage.auto_reject_threshold,
                                 stage.decide_threshold, None)
        verdict, label, reason, detail, band = _band(group.kind, score, thresholds)
        if verdict != "review" or k == len(stages):
            return decision(group, stage.model, decision=verdict, label=label, reason=reason,
                            detail=f"{where}: {detail}", band=band, **scores)
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
    kind: Kind = card.calibration.kind
    moment = now or datetime.now(UTC)
    groups = _groups(mine, kind)
    if card.policy.cascade:
        by_case: dict[str, dict[str, Group]] = defaultdict(dict)
        for g in groups:
            by_case[g.case_id][g.model] = g
        return [route_cascade(case_id, by_model, card, now=moment)
                for case_id, by_model in by_case.items()]
    cases = cases or {}
    return [route_group(g, card, case=cases.get(g.case_id), now=moment) for g in groups]


def seeded_unit(seed: int, key: str) -> float:
    """A number in [0, 1) fixed by (seed, key): seeded sampling without shared state."""
    # A keyed hash in [0, 1): the same item is always (or never) audited under one seed,
    # however many other items are routed with it.
    h = hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:15]
    return int(h, 16) / 16**15


def audit_sample(decisions: Iterable[RoutingDecision], fraction: float, seed: int = 0) -> set[str]:
    """Ids of the automatic decisions sampled for audit: each with probability ``fraction``."""
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"audit fraction must be in [0, 1], got {fraction}", field="audit")
    return {
        d.id
        for d in decisions
        if d.decision in AUTO_DECISIONS and seeded_unit(seed, d.id) < fraction
    }


# --- Live audit bounds -----------------------------------------------------------------------


@dataclass(frozen=True)
class AuditLabel:
    """One audited automatic decision and the human label it got."""

    band: str
    slice: str | None
    auto_label: str
    human_label: str


def _is_error(band: str, auto_label: str, human: str) -> bool:
    if band == "accept":
        return human == "fail"
    if band == "reject":
        return human == "pass"
    return human != auto_label


def live_bounds(card: Card, audits: Iterable[AuditLabel]) -> list[BandAudit]:
    """Each certified band's error bound on the card's gold counts plus the audit labels.

    A human "cannot determine" neither counts as an error nor as a correct decision.
    """
    from calibration.intervals import clopper_pearson_upper as cp_upper

    policy = card.policy
    bands: dict[tuple[str | None, str], Any] = {}
    if policy.cascade:
        for k, stage in enumerate(policy.cascade, start=1):
            for name, b in stage.bands.items():
                bands[(stage_label(k, stage.model), name)] = b
    elif policy.per_slice:
        for slice_value, part in policy.per_slice.items():
            for name, b in part.bands.items():
                bands[(slice_value, name)] = b
    else:
        for name, b in policy.bands.items():
            bands[(None, name)] = b
    counts: dict[tuple[str | None, str], list[int]] = defaultdict(lambda: [0, 0])
    for a in audits:
        if a.human_label == ABSTAIN_LABEL:
            continue
        key = (a.slice if policy.per_slice or policy.cascade else None, a.band)
        counts[key][0] += 1
        counts[key][1] += int(_is_error(a.band, a.auto_label, a.human_label))
    out = []
    for (value, name), b in sorted(bands.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if b.threshold is None:
            continue
        n_a, k_a = counts.get((value, name), [0, 0])
        upper = cp_upper(b.errors + k_a, b.n + n_a, b.level)
        out.append(
            BandAudit(
                band=name,
                slice=value,
                alpha=b.alpha,
                level=b.level,
                card_n=b.n,
                card_errors=b.errors,
                audit_n=n_a,
                audit_errors=k_a,
                upper_bound=upper,
                audit_upper_bound=cp_upper(k_a, n_a, b.level) if n_a else None,
                exceeds_alpha=upper > b.alpha,
            )
        )
    return out


# --- The store ---------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat()


def save_card(store: Store, card: Card) -> str:
    """Keep the card (idempotent, by digest); return its digest. A stale flag is kept."""
    digest = card_digest(card)
    table = store.db.table("cards")
    if list(store.db.query("select 1 from cards where digest = ?", [digest])):
        return digest
    j = card.judge
    with store.db.conn:
        table.insert(
            {
                "digest": digest,
                "model": j.model,
                "rubric_id": j.rubric.id,
                "rubric_version": j.rubric.version,
                "rubric_digest": j.rubric.digest,
                "selector_version": j.evidence_selector.version,
                "kind": card.calibration.kind,
                "created_at": card.created_at.isoformat(),
                "expires_at": card.expires_at.isoformat(),
                "added_at": _now(),
                "yaml": card.to_yaml(),
                "stale": 0,
            }
        )
    return digest


def _card_from_row(row: Mapping[str, Any]) -> Card:
    import yaml

    from calibration.card import Card

    return Card.model_validate(yaml.safe_load(row["yaml"]))


def get_card(store: Store, digest: str) -> Card | None:
    """The stored card with this digest (``sha256:`` prefix optional), or None."""
    full = digest if digest.startswith("sha256:") else "sha256:" + digest
    rows = list(store.db.query("select yaml from cards where digest = ?", [full]))
    return _card_from_row(rows[0]) if rows else None


def card_rows(store: Store) -> list[dict[str, Any]]:
    """Every stored card's summary row (no YAML), newest first."""
    return [
        {k: v for k, v in row.items() if k != "yaml"}
        for row in store.db.query("select * from cards order by added_at desc")
    ]


def stale_reason(store: Store, digest: str) -> str | None:
    """Why audits flagged this card stale, or None."""
    rows = list(store.db.query("select stale, stale_reason from cards where digest = ?", [digest]))
    if rows and rows[0]["stale"]:
        return str(rows[0]["stale_reason"] or "flagged stale by audit")
    return None


def save_decisions(store: Store, decisions: Iterable[RoutingDecision]) -> int:
    """Upsert decisions by id (re-routing with the same card replaces them); return the count."""
    rows = [
        {
            **d.model_dump(exclude={"judgment_ids", "routed_at", "audit"}),
            "judgment_ids": json.dumps(d.judgment_ids),
            "n_judgments": len(d.judgment_ids),
            "audit": int(d.audit),
            "routed_at": d.routed_at.isoformat(),
        }
        for d in decisions
    ]
    with store.db.conn:
        store.db.table("routing_decisions").upsert_all(rows, pk="id")
    return len(rows)


def _decision_from_row(row: Mapping[str, Any]) -> RoutingDecision:
    data = dict(row)
    data.pop("n_judgments", None)
    data["judgment_ids"] = json.loads(data["judgment_ids"] or "[]")
    data["audit"] = bool(data["audit"])
    return RoutingDecision.model_validate(data)


def load_decisions(
    store: Store,
    *,
    card: str | None = None,
    decision: str | None = None,
    case_id: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[RoutingDecision]:
    """Stored routing decisions, filtered, in routing order."""
    from judge.store import where_equal

    digest = None if card is None else card if card.startswith("sha256:") else "sha256:" + card
    where, args = where_equal({"card_digest": digest, "decision": decision, "case_id": case_id})
    sql = "select * from routing_decisions" + where
    sql += " order by routed_at, rowid"
    if limit is not None:
        sql += f" limit {int(limit)} offset {int(offset)}"
    return [_decision_from_row(r) for r in store.db.query(sql, args)]


@dataclass
class RoutingRun:
    """What one application of a card did."""

    card_digest: str
    decisions: list[RoutingDecision]
    enqueued: int = 0
    audited: int = 0
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)


def apply_card(
    store: Store,
    card: Card,
    *,
    judgments: Sequence[Judgment] | None = None,
    audit_fraction: float = 0.05,
    seed: int = 0,
    double_fraction: float = 0.0,
    blind: bool = False,
    now: datetime | None = None,
) -> RoutingRun:
    """Route the store's judgments (or ``judgments``) with ``card``; queue review and audits.

    Refuses (CardError) a card that does not bind the judgments' judge, has expired, or that
    audits have flagged stale. Decisions are stored with the card digest; review items are
    queued once per decision (re-routing keeps the labels already given).
    """
    from judge.review import enqueue

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
                f"{j.rubric.id} in {store.path}; judge the cases with that judge first "
                "(`judge run`)"
            )
    case_ids = {x.case_id for x in judgments}
    cases = {cid: c for cid in case_ids if (c := store.get_case(cid)) is not None}
    decisions = route_judgments(card, judgments, cases=cases, now=now)
    audited = audit_sample(decisions, audit_fraction, seed)
    decisions = [d.model_copy(update={"audit": d.id in audited}) for d in decisions]
    save_decisions(store, decisions)
    enqueued = enqueue(store, decisions, seed=seed, double_fraction=double_fraction, blind=blind)
    run = RoutingRun(digest, decisions, enqueued=enqueued, audited=len(audited))
    run.counts.update((d.decision, d.reason) for d in decisions)
    return run


def audit_labels(store: Store, digest: str) -> list[AuditLabel]:
    """The finished audit items of a card with their human labels."""
    sql = (
        "select r.band, r.slice, r.label as auto_label, q.final_label from review_items q "
        "join routing_decisions r on r.id = q.routing_id "
        "where q.card_digest = ? and q.audit = 1 and q.status = 'done' "
        "and q.final_label is not null and r.band is not null"
    )
    return [
        AuditLabel(r["band"], r["slice"], r["auto_label"], r["final_label"])
        for r in store.db.query(sql, [digest])
    ]


def refresh_audit(store: Store, digest: str) -> AuditStatus:
    """Recompute a card's live band bounds from its audit labels; flag it stale when exceeded."""
    card = get_card(store, digest)
    if card is None:
        raise InputError(f"no stored card {digest}", field="card", hint="route with it first")
    bands = live_bounds(card, audit_labels(store, card_digest(card)))
    reason = stale_reason(store, card_digest(card))
    over = [b for b in bands if b.exceeds_alpha]
    if over and reason is None:
        reason = "; ".join(
            f"{b.band} band{f' (slice {b.slice})' if b.slice else ''}: live error bound "
            f"{b.upper_bound:.4f} > alpha {b.alpha:g} after {b.audit_errors} error(s) in "
            f"{b.audit_n} audit label(s)"
            for b in over
        )
        with store.db.conn:
            store.db.table("cards").update(
                card_digest(card), {"stale": 1, "stale_reason": reason, "stale_at": _now()}
            )
    return AuditStatus(
        card_digest=card_digest(card), stale=reason is not None, stale_reason=reason, bands=bands
    )
