"""The walk of a card over one case: the one place a card's bands, panel rule and cascade stages
turn verdicts into a decision.

Its input is one shape, :class:`Verdicts` (a judge's pooled score on the case and the first gate
that sends it to review), whether the verdicts are stored judgments (``judge.routing.decide``
adapts them, with the gates of ``judge.routing.gates``) or recorded ones
(``judge.routing.recorded``); its output, an :class:`Outcome`, is written as a
``RoutingDecision`` or a ``RecordedDecision`` by the same modules.

- One judge: its pooled score, mapped through the card's calibrator, against the card's
  certified thresholds (its slice's, for a per-slice card), after its gate.
- A panel (``calibration.panel``): one score combined from every member's pooled score by the
  card's rule, against the card's thresholds. It needs every member: a case a member has not
  judged goes to review (``member_missing``), and so does one where a member's verdicts failed
  or abstained (``member_failed``) or tripped another gate (that gate's reason, the member
  named): a panel is never decided on part of its members.
- A cascade (Trust or Escalate): judges cheapest first, each with its own certified bands. A
  stage decides inside its bands, otherwise the case goes to the next stage, and to a person
  after the last; a gate sends the case to review at the stage where it fires rather than
  escalating it (the later stages were certified on the cases the earlier ones passed on for
  their scores, not on these); a stage the case reaches that has not judged it stops the walk
  (``stage_missing``). Its decisions name the stage in ``slice``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from calibration.card import Card, ConfidenceRef, PolicySection, SlicePolicy, StagePolicy
from calibration.confidence import CALIBRATOR_FROM_PARAMS, calibrator_from_params
from calibration.options import PANEL_RULES, PanelRule, combines_members
from calibration.panel import PanelModel, combine_probs
from judge.errors import CardError
from judge.routing.cards import card_digest, card_models, stage_label
from judge.types import Decision, Judgment, ScoringKind


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


@dataclass(frozen=True)
class Thresholds:
    """The certified thresholds that apply to one item (its slice's, for a per-slice card)."""

    accept: float | None
    reject: float | None
    decide: float | None
    slice: str | None
    #: The slice (key=value) the card does not automate, when that is why there are no
    #: thresholds at all.
    missing: str | None = None

    @classmethod
    def of_stage(cls, stage: StagePolicy) -> Thresholds:
        """A cascade stage's own thresholds."""
        return cls(
            stage.auto_accept_threshold, stage.auto_reject_threshold, stage.decide_threshold, None
        )


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
        return Thresholds(None, None, None, value, f"{key}={value}")
    return Thresholds(
        part.auto_accept_threshold, part.auto_reject_threshold, part.decide_threshold, value
    )


def band_decision(
    kind: ScoringKind, score: float, t: Thresholds
) -> tuple[Decision, str | None, str, str, str | None]:
    """(decision, label, reason, detail, band) for a pooled score under the thresholds. The
    detail adds what the reason does not say (the score, the threshold, the slice): a reason
    and its detail read together without repeating each other."""
    where = f" (slice {t.slice})" if t.slice is not None else ""
    if t.missing is not None:
        where = f" (slice {t.missing})"
    if kind == "pairwise":
        conf = max(score, 1.0 - score)
        if t.decide is not None and conf >= t.decide:
            label = "A" if score > 0.5 else "B" if score < 0.5 else "tie"
            detail = f"confidence {conf:.4f} >= decide threshold {t.decide:.4g}{where}"
            return "auto_decide", label, "in_decide_band", detail, "decide"
        if t.decide is None:
            return "review", None, "no_certified_band", f"confidence {conf:.4f}{where}", None
        detail = f"confidence {conf:.4f} < decide threshold {t.decide:.4g}{where}"
        return "review", None, "outside_bands", detail, None
    if t.accept is not None and score > 0.5 and score >= t.accept:
        detail = f"P(pass) {score:.4f} >= accept threshold {t.accept:.4g}{where}"
        return "auto_accept", "pass", "in_accept_band", detail, "accept"
    if t.reject is not None and score < 0.5 and score <= t.reject:
        detail = f"P(pass) {score:.4f} <= reject threshold {t.reject:.4g}{where}"
        return "auto_reject", "fail", "in_reject_band", detail, "reject"
    if t.accept is None and t.reject is None:
        return "review", None, "no_certified_band", f"P(pass) {score:.4f}{where}", None
    low = f"{t.reject:.4g} < " if t.reject is not None else ""
    high = f" < {t.accept:.4g}" if t.accept is not None else ""
    return "review", None, "outside_bands", f"{low}P(pass) {score:.4f}{high}{where}", None


#: Gates that mean a member gave no usable verdict: a panel member's becomes ``member_failed``.
MEMBER_FAILURES = frozenset({"parse_error", "provider_failure", "abstained", "unscored"})


@dataclass(frozen=True)
class Gate:
    """Why one judge's verdicts on a case go to review before any band is consulted: a key of
    ``judge.routing.REASONS`` and the facts it does not say."""

    reason: str
    detail: str
    #: Whether the detail says what went wrong by itself ("a verdict could not be read"); when
    #: it does not ("1 of 2 judgments"), a panel member's failure names the reason after it.
    explicit: bool = False

    def for_member(self, member: str) -> tuple[str, str]:
        """(reason, detail) of a panel decision that this gate of ``member`` sent to review."""
        failed = self.reason in MEMBER_FAILURES
        detail = f"panel member {member}: {self.detail}"
        if failed and not self.explicit:
            detail += f" ({self.reason})"
        return ("member_failed" if failed else self.reason), detail


@dataclass(frozen=True)
class Verdicts:
    """One judge's verdicts on one case, as the walk reads them."""

    model: str
    #: The pooled score before the card's calibrator (None: no usable verdict; then ``gate``
    #: says why).
    raw: float | None
    #: The first gate that sends these verdicts to review (None: none does).
    gate: Gate | None
    #: The stored judgments behind them (none for recorded verdicts).
    judgments: tuple[Judgment, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What a card decided for one case, and why."""

    decision: Decision
    reason: str
    detail: str
    #: The judge whose verdicts the decision rests on (a cascade's stage reached; otherwise
    #: the card's judge or panel).
    model: str
    #: The verdicts read, in the order the walk read them.
    consulted: tuple[Verdicts, ...]
    label: str | None = None
    band: str | None = None
    #: The slice whose thresholds applied, or the cascade stage.
    slice: str | None = None
    raw_score: float | None = None
    #: The score after the card's calibrator, or the panel's combined score.
    score: float | None = None
    #: Whether ``score`` was compared with thresholds (False: a gate or a missing judge sent
    #: the case to review first).
    banded: bool = False


def _banded(kind: ScoringKind, compared: float, t: Thresholds, **fields: Any) -> Outcome:
    """The band decision on ``compared`` as an outcome (``fields``: what it also carries)."""
    decision, label, reason, detail, band = band_decision(kind, compared, t)
    fields.setdefault("slice", t.slice)
    return Outcome(decision, reason, detail, label=label, band=band, banded=True, **fields)


def walk(card: Card, verdicts: Mapping[str, Verdicts], slices: Mapping[str, Any] | None) -> Outcome:
    """The decision of ``card`` for one case, from the verdicts of each judge (model -> its
    verdicts; the judges that have not judged the case are absent) and the case's slices."""
    if card.judge.members:
        return decide_panel(card, verdicts, slices)
    if card.policy.cascade:
        return decide_cascade(card, verdicts)
    return decide_single(card, verdicts[card.judge.model], slices)


def decide_single(card: Card, v: Verdicts, slices: Mapping[str, Any] | None) -> Outcome:
    """One judge's pooled score, through the card's calibrator, against its thresholds."""
    score = calibrate_score(v.raw, card.calibration.confidence) if v.raw is not None else None
    fields: dict[str, Any] = {"model": v.model, "consulted": (v,), "raw_score": v.raw}
    if v.gate is not None:
        return Outcome("review", v.gate.reason, v.gate.detail, score=score, **fields)
    assert score is not None, "verdicts with no score carry a gate"
    thresholds = thresholds_for(card.policy, slices)
    return _banded(card.calibration.kind, score, thresholds, score=score, **fields)


def panel_rule(card: Card) -> tuple[PanelRule, PanelModel | None]:
    """A panel card's rule and (for the fitted rule) its model; CardError when unusable."""
    ref = card.calibration.confidence
    rule = ref.panel_rule
    short = card_digest(card)[:19]
    if rule not in PANEL_RULES or not combines_members(rule):
        raise CardError(
            f"card {short} is a panel card with rule {rule!r}, which routing cannot apply "
            f"(known: {', '.join(r for r in PANEL_RULES if combines_members(r))}); recalibrate"
        )
    if rule != "fitted":
        return cast(PanelRule, rule), None
    try:
        model = PanelModel.from_params(ref.panel_params or {})
    except (KeyError, TypeError, ValueError) as err:
        raise CardError(
            f"card {short}: the panel's fitted parameters are malformed ({err!r}); recalibrate"
        ) from err
    members = card_models(card)
    if list(model.members) != members:
        raise CardError(
            f"card {short}: the panel's fitted model is for {list(model.members)}, the card's "
            f"members are {members}; recalibrate"
        )
    return "fitted", model


def decide_panel(
    card: Card, verdicts: Mapping[str, Verdicts], slices: Mapping[str, Any] | None
) -> Outcome:
    """Every member's pooled score, combined by the card's rule, against the card's thresholds;
    review when a member is missing, failed or tripped a gate."""
    members = card_models(card)
    rule, model = panel_rule(card)
    present = tuple(verdicts[m] for m in members if m in verdicts)
    who: dict[str, Any] = {"model": card.judge.model, "consulted": present}
    missing = [m for m in members if m not in verdicts]
    if missing:
        detail = (
            f"panel member(s) {', '.join(missing)} have not judged this case; a panel decides "
            f"only with all of {', '.join(members)}: judge it with --model {missing[0]} and "
            "route again"
        )
        return Outcome("review", "member_missing", detail, **who)
    for v in present:
        if v.gate is not None:
            return Outcome("review", *v.gate.for_member(v.model), **who)
    raws = [cast(float, v.raw) for v in present]
    score = combine_probs(raws, rule, model)
    outcome = _banded(
        card.calibration.kind,
        score,
        thresholds_for(card.policy, slices),
        score=score,
        raw_score=score,
        **who,
    )
    members_detail = ", ".join(f"{m} {r:.4f}" for m, r in zip(members, raws, strict=True))
    return replace(outcome, detail=f"panel ({rule}: {members_detail}): {outcome.detail}")


def decide_cascade(card: Card, verdicts: Mapping[str, Verdicts]) -> Outcome:
    """Stage by stage, cheapest first: the first stage whose bands hold the case's score
    decides it; the last stage's outcome stands (see the module docstring)."""
    stages = card.policy.cascade or []
    _check_cascade(card)
    path: list[str] = []
    consulted: list[Verdicts] = []
    for k, stage in enumerate(stages, start=1):
        outcome = _stage(card, k, stage, verdicts.get(stage.model), consulted)
        if outcome.decision != "review" or not outcome.banded or k == len(stages):
            return replace(outcome, detail="; ".join([*path, outcome.detail]))
        path.append(f"{outcome.detail}, escalated")
    raise CardError(f"card {card_digest(card)[:19]} has an empty cascade")


def _check_cascade(card: Card) -> None:
    calibrator = card.calibration.confidence.calibrator
    if calibrator != "none":
        raise CardError(
            f"card {card_digest(card)[:19]} is a cascade card with a {calibrator} calibrator; "
            "cascade stages are certified on raw scores: recalibrate without one"
        )


def _stage(
    card: Card, k: int, stage: StagePolicy, v: Verdicts | None, consulted: list[Verdicts]
) -> Outcome:
    """What stage ``k`` says of the case (its detail named by the stage): missing, gated, or
    its band decision; ``consulted`` gains the stage's verdicts."""
    where = stage_label(k, stage.model)
    if v is None:
        detail = (
            f"{where} has not judged this case: judge it with --model {stage.model} and route again"
        )
        return Outcome(
            "review", "stage_missing", detail, stage.model, tuple(consulted), slice=where
        )
    consulted.append(v)
    fields: dict[str, Any] = {
        "model": stage.model,
        "consulted": tuple(consulted),
        "raw_score": v.raw,
        "score": v.raw,
        "slice": where,
    }
    if v.gate is not None:
        return Outcome("review", v.gate.reason, f"{where}: {v.gate.detail}", **fields)
    assert v.raw is not None, "verdicts with no score carry a gate"
    outcome = _banded(card.calibration.kind, v.raw, Thresholds.of_stage(stage), **fields)
    return replace(outcome, detail=f"{where}: {outcome.detail}")
