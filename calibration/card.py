"""The calibration card: what a judge was measured on, what it may decide alone, until when.

A card binds the exact judge (model, prompt digest, rubric id/version/digest, evidence-selector
version) and the gold set (name, digest) it was calibrated on, states the certified bands and
their guarantee, and expires (docs/metrics.md section 7). ``verify_card`` refuses a card whose
bindings differ from the judge about to use it, or that has expired. The card's own digest
(``card_digest``, over its canonical JSON without that field) detects hand edits.

Format (YAML), following the sketch in ARCHITECTURE.md::

    card_version: 1 (or 2: see below)
    judge: {model, source, prompt_digest, rubric: {id, version, digest},
            evidence_selector: {version, token_budget}, evidence_visible, blinded_fields,
            [members: [judge sections, one per panel member]]}
    calibration: {kind, gold: {name, digest, n, source}, confidence, slices, metrics}
    policy: {guarantee: {alpha_false_accept, alpha_false_reject, delta, method, statement},
             auto_accept_threshold, auto_reject_threshold, decide_threshold, human_review_band,
             human_review_rule, coverage, grid, starts, bands, slice_key, correction, per_slice,
             cascade, cost_per_decided, [test, start_shares, plan]}
    created_at, expires_at, probes (optional: judge probe), card_digest

Every number of a fitted map (``calibrator_params``, ``panel_params``) is rounded to 10
significant digits when it is fitted, and a calibrator's outputs to 12 decimals, so that a card
is the same bytes (and digest) for the same inputs on any machine and routing applies exactly
the map the card holds (``calibration.confidence.FIT_DIGITS``).

Versions. Version 2 added fields in brackets above, and ``confidence.panel_rule``,
``panel_params``, ``panel_fit``: a panel card's members and the rule that combines their scores,
and the procedure that certified the bands when it is not the version 1 one (a test other than
Clopper-Pearson, starting points given as shares of the calibration items, or the label plan the
gold was drawn by). They are written
only when set, and a card that writes any of them is ``card_version: 2``; every other card is
written exactly as version 1 wrote it (same bytes, same digest). So a reader of version 1 refuses
a version 2 card by its version (it could not route a panel), and this reader reads both.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from calibration.bands import DEFAULT_TEST, METHOD, BandPolicy, BandResult
from calibration.card_plan import CardPlan
from calibration.cascade import CascadeResult
from calibration.options import DEFAULT_VALID_DAYS
from calibration.summary import MetricSummary
from judge.base import Strict
from judge.digests import digest, utcnow
from judge.errors import CardError
from judge.kinds import ScoringKind

CARD_VERSION: Literal[1] = 1
#: The version of a card that uses a field version 1 did not have (see the module docstring).
CARD_VERSION_2: Literal[2] = 2
RECORDED_SOURCE = "recorded verdicts"


class _Strict(Strict):
    """The card's records: strict, and written without their version 2 fields while unset."""

    #: Fields added in card version 2: left out of the card while unset (None), so that a card
    #: that uses none of them is written byte for byte as version 1 wrote it.
    v2_fields: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _leave_out_unset_v2(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.v2_fields and isinstance(data, dict):
            for name in self.v2_fields:
                if data.get(name, 0) is None:
                    del data[name]
        return data

    def uses_v2(self) -> bool:
        """Whether a version 2 field is set here or in a nested section."""
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in self.v2_fields and value is not None:
                return True
            values = (
                value
                if isinstance(value, list)
                else list(value.values())
                if isinstance(value, dict)
                else [value]
            )
            if any(isinstance(v, _Strict) and v.uses_v2() for v in values):
                return True
        return False


class RubricRef(_Strict):
    """The rubric the judge used (all null for recorded verdicts of an outside judge)."""

    id: str | None = None
    version: int | None = None
    digest: str | None = None


class SelectorRef(_Strict):
    """The evidence selector the judge's prompts were built with."""

    version: str | None = None
    token_budget: int | None = None


class JudgeSection(_Strict):
    """Who the judge is, exactly."""

    model: str
    #: Where the verdicts came from: "recorded verdicts", "judgments" (JSONL) or "judge store".
    source: str
    prompt_digest: str | None = None
    rubric: RubricRef = Field(default_factory=RubricRef)
    evidence_selector: SelectorRef = Field(default_factory=SelectorRef)
    evidence_visible: list[str] = Field(default_factory=list)
    blinded_fields: list[str] = Field(default_factory=list)
    #: A panel card's members, each bound as exactly as a single judge (version 2).
    members: list[JudgeSection] | None = None

    v2_fields: ClassVar[tuple[str, ...]] = ("members",)


class GoldRef(_Strict):
    """The gold set the card was calibrated on."""

    name: str
    digest: str
    n: int
    source: str


class ConfidenceRef(_Strict):
    """How each item's score was made."""

    #: "prob" (mean verdict probability), "votes" (vote share) or "prob+votes" (both occur).
    source: str
    calibrator: str = "none"
    #: How the calibrator was fitted (the split kept apart from threshold picking).
    calibrator_fit: str | None = None
    #: The fitted map, so that routing applies the same transform before the thresholds.
    calibrator_params: dict[str, Any] | None = None
    #: A panel's rule combining its members' scores (``calibration.options.PANEL_RULES``), the
    #: fitted rule's parameters and how they were fitted (version 2).
    panel_rule: str | None = None
    panel_params: dict[str, Any] | None = None
    panel_fit: str | None = None

    v2_fields: ClassVar[tuple[str, ...]] = ("panel_rule", "panel_params", "panel_fit")


class CalibrationSection(_Strict):
    """What was measured, on which gold."""

    kind: ScoringKind
    gold: GoldRef
    confidence: ConfidenceRef
    slices: list[str] = Field(default_factory=list)
    #: The metrics of ``calibration.metrics.summarize``, e.g. confusion matrix, FAR.
    metrics: MetricSummary = Field(default_factory=MetricSummary)


class BandSection(_Strict):
    """One band as certified (threshold null: no band, with the reason)."""

    threshold: float | None
    n: int
    errors: int
    upper_bound: float | None
    coverage: float
    alpha: float
    level: float
    reason: str | None = None


class Guarantee(_Strict):
    """The finite-sample guarantee the bands carry."""

    alpha_false_accept: float
    alpha_false_reject: float | None = None
    delta: float
    method: str
    statement: str


class SlicePolicy(_Strict):
    """Thresholds and bands of one slice (or one cascade stage)."""

    auto_accept_threshold: float | None = None
    auto_reject_threshold: float | None = None
    decide_threshold: float | None = None
    n: int
    coverage: float
    bands: dict[str, BandSection]


class StagePolicy(SlicePolicy):
    """One judge of a cascade, cheapest first."""

    model: str
    cost_per_item: float | None = None
    n_calibration: int
    n_reached: int
    n_decided: int


class PlanRef(_Strict):
    """The label plan a card was certified on (calibration.card_plan): the band is certified on
    the labels of its band stratum and covers a share of its whole pool."""

    id: str
    budget: int
    #: The band stratum: the most confident ``band_share`` of the pool, confidence >= boundary.
    band_share: float
    boundary: float
    n_pool: int
    #: Labels of the band stratum that certified the bands.
    n_labels: int
    statement: str


class PolicySection(_Strict):
    """What the judge may decide without a human."""

    guarantee: Guarantee
    #: Binary: auto-accept when P(pass) >= this. Null when nothing certifies (or per slice).
    auto_accept_threshold: float | None = None
    #: Binary: auto-reject when P(pass) <= this.
    auto_reject_threshold: float | None = None
    #: Pairwise: decide the argmax alone when max(P(A), 1 - P(A)) >= this.
    decide_threshold: float | None = None
    #: [low, high] of the score sent to review; see human_review_rule. Null ends are unbounded.
    human_review_band: list[float | None]
    human_review_rule: str
    coverage: float
    grid: str
    starts: list[int]
    bands: dict[str, BandSection] = Field(default_factory=dict)
    slice_key: str | None = None
    correction: str | None = None
    per_slice: dict[str, SlicePolicy] = Field(default_factory=dict)
    cascade: list[StagePolicy] | None = None
    cost_per_decided: float | None = None
    #: The test of each threshold (``calibration.bands.TESTS``) and the starting points given
    #: as shares of the calibration items (version 2; unset: Clopper-Pearson, item counts).
    test: str | None = None
    start_shares: list[float] | None = None
    #: The label plan the gold was drawn by (version 2; unset: the gold is taken as a random
    #: sample of the judge's items).
    plan: PlanRef | None = None

    v2_fields: ClassVar[tuple[str, ...]] = ("test", "start_shares", "plan")


class ProbeEntry(_Strict):
    """One perturbation probe's result for this judge (``judge probe``)."""

    name: str
    version: int
    #: "degradation" (a good judge catches it) or "invariance" (a good judge does not move).
    kind: str
    applied: int
    skipped: int
    #: Cases the as-expected rate is over (degradations: originals the judge passed).
    n: int
    as_expected_rate: float | None = None
    as_expected_ci95: list[float] | None = None
    p_pass_shift: float | None = None
    p_pass_shift_ci95: list[float] | None = None
    #: "pass", "fail", "inconclusive" or "no data": the rate's interval against ``bar``.
    status: str


class ProbesSection(_Strict):
    """Which perturbation probes this judge fails (``judge probe --card``): routing reads it,
    e.g. a failed length probe sends long traces to people. Optional: a card without it has
    the same digest as before the section existed."""

    gold: str
    gold_digest: str
    model: str
    rubric: str
    run_at: datetime
    #: A probe passes when its as-expected rate's 95% lower bound reaches this, fails when the
    #: upper bound is below it.
    bar: float
    failed: list[str] = Field(default_factory=list)
    inconclusive: list[str] = Field(default_factory=list)
    #: The median number of trace turns of the cases probed: a trace longer than this is
    #: "long" for the length gate (``judge.routing.gates``).
    long_trace_turns: int | None = None
    probes: list[ProbeEntry] = Field(default_factory=list)


class Card(_Strict):
    """A calibration card."""

    card_version: Literal[1, 2] = CARD_VERSION
    judge: JudgeSection
    calibration: CalibrationSection
    policy: PolicySection
    created_at: datetime
    expires_at: datetime
    #: Perturbation probes' results (``judge probe``); absent on cards written without them,
    #: and then left out of the YAML and the digest, so those cards keep their digests.
    probes: ProbesSection | None = None
    card_digest: str = ""

    def _dump(self, exclude: set[str]) -> dict[str, Any]:
        if self.probes is None:
            exclude = exclude | {"probes"}
        return self.model_dump(mode="json", exclude=exclude)

    @model_validator(mode="after")
    def _version_fits(self) -> Card:
        if self.card_version == CARD_VERSION and self.uses_v2():
            raise ValueError(
                "the card uses fields of card version 2 (panel members or rule, a test, start "
                "shares) but says card_version 1"
            )
        return self

    def member(self, model: str) -> JudgeSection | None:
        """The binding of panel member ``model``, or None (not a panel, or not a member)."""
        for section in self.judge.members or ():
            if section.model == model:
                return section
        return None

    def computed_digest(self) -> str:
        """sha256 over the canonical JSON of the card without ``card_digest``."""
        return digest(self._dump({"card_digest"}))

    def sealed(self) -> Card:
        """The same card with its digest filled in."""
        return self.model_copy(update={"card_digest": self.computed_digest()})

    def to_yaml(self) -> str:
        """The card as YAML, in field order."""
        return yaml.safe_dump(self._dump(set()), sort_keys=False, allow_unicode=True, width=100)

    def with_probes(self, probes: ProbesSection | None) -> Card:
        """The same card with this probes section (replacing any), sealed anew: its digest
        changes, as it must for a card that now says more."""
        return self.model_copy(update={"probes": probes}).sealed()


# --- Building ---------------------------------------------------------------------------------


def _band_section(b: BandResult) -> BandSection:
    return BandSection(
        threshold=b.threshold,
        n=b.n,
        errors=b.errors,
        upper_bound=b.upper_bound,
        coverage=b.coverage,
        alpha=b.alpha,
        level=b.level,
        reason=b.reason or None,
    )


def _slice_fields(p: BandPolicy) -> dict[str, Any]:
    """The fields a slice and a cascade stage share: thresholds, n, coverage, bands."""
    return {
        "auto_accept_threshold": p.accept_threshold,
        "auto_reject_threshold": p.reject_threshold,
        "decide_threshold": p.decide_threshold,
        "n": p.n_total,
        "coverage": p.coverage,
        "bands": {name: _band_section(b) for name, b in p.bands.items()},
    }


def _review(
    kind: str, accept: float | None, reject: float | None, decide: float | None
) -> tuple[list[float | None], str]:
    if kind == "pairwise":
        rule = (
            f"review when max(P(A), 1 - P(A)) < {decide:.6g}; decide the argmax otherwise"
            if decide is not None
            else "review every item: nothing certifies"
        )
        return [0.5, decide], rule
    if accept is None and reject is None:
        return [None, None], "review every item: nothing certifies"
    low = f"{reject:.6g} < " if reject is not None else ""
    high = f" < {accept:.6g}" if accept is not None else ""
    rule = f"review when {low}P(pass){high}"
    if accept is not None:
        rule += f"; auto-accept when P(pass) >= {accept:.6g}"
    if reject is not None:
        rule += f"; auto-reject when P(pass) <= {reject:.6g}"
    return [reject, accept], rule


def _statement(kind: str, a_fa: float, a_fr: float | None, delta: float, sliced: bool) -> str:
    scope = " in every automated slice" if sliced else ""
    if kind == "pairwise":
        return (
            f"With probability >= {1 - delta:g} over the draw of the gold set, an automatically "
            f"decided verdict disagrees with gold with probability <= {a_fa:g}{scope}."
        )
    text = (
        f"With probability >= {1 - delta:g} over the draw of the gold set, "
        f"P(gold = fail | auto-accepted) <= {a_fa:g}"
    )
    if a_fr is not None:
        text += f" and P(gold = pass | auto-rejected) <= {a_fr:g}"
    return text + f"{scope} (each band at delta/2)."


def policy_section(policy: BandPolicy) -> PolicySection:
    """The card's policy from certified bands."""
    sliced = bool(policy.per_slice)
    band, rule = _review(
        policy.kind, policy.accept_threshold, policy.reject_threshold, policy.decide_threshold
    )
    if sliced:
        band, rule = [None, None], f"per slice of '{policy.slice_key}': see per_slice"
    return PolicySection(
        guarantee=Guarantee(
            alpha_false_accept=policy.alpha_accept,
            alpha_false_reject=policy.alpha_reject,
            delta=policy.delta,
            method=METHOD,
            statement=_statement(
                policy.kind, policy.alpha_accept, policy.alpha_reject, policy.delta, sliced
            ),
        ),
        auto_accept_threshold=policy.accept_threshold,
        auto_reject_threshold=policy.reject_threshold,
        decide_threshold=policy.decide_threshold,
        human_review_band=band,
        human_review_rule=rule,
        coverage=policy.coverage,
        grid=policy.grid,
        starts=list(policy.starts),
        bands={name: _band_section(b) for name, b in policy.bands.items()},
        slice_key=policy.slice_key,
        correction=policy.correction,
        per_slice={v: SlicePolicy(**_slice_fields(p)) for v, p in policy.per_slice.items()},
        **_procedure(policy),
    )


def plan_ref(plan: CardPlan, policy: BandPolicy) -> PlanRef:
    """The card's reference to the label plan its bands were certified on."""
    band = plan.strata[0]
    return PlanRef(
        id=plan.id,
        budget=plan.budget,
        band_share=plan.band_share,
        boundary=plan.boundary,
        n_pool=len(plan.item_ids),
        n_labels=band.n_labels,
        statement=(
            f"certified on the {band.n_labels} labels the plan drew at random (each with "
            f"probability {band.prob:.4g}) among the {band.n_items} most confident of "
            f"{len(plan.item_ids)} items; coverage is a share of those {len(plan.item_ids)}"
        ),
    )


def _procedure(policy: BandPolicy) -> dict[str, Any]:
    """The version 2 procedure fields, set only when the procedure is not version 1's."""
    if policy.test == DEFAULT_TEST and not policy.start_shares:
        return {}
    return {"test": policy.test, "start_shares": list(policy.start_shares)}


def cascade_policy_section(result: CascadeResult) -> PolicySection:
    """The card's policy from a calibrated cascade (stages cheapest first)."""
    stages = [
        StagePolicy(
            model=s.judge,
            cost_per_item=s.cost_per_item,
            n_calibration=s.n_calibration,
            n_reached=s.n_reached,
            n_decided=s.n_decided,
            **_slice_fields(s.policy),
        )
        for s in result.stages
    ]
    first = result.stages[0].policy
    return PolicySection(
        guarantee=Guarantee(
            alpha_false_accept=result.alpha_accept,
            alpha_false_reject=result.alpha_reject,
            delta=result.delta,
            method=f"{METHOD} cascade ({result.mode})",
            statement=result.guarantee(),
        ),
        human_review_band=[None, None],
        human_review_rule="escalate stage by stage (see cascade); review what the last leaves",
        coverage=result.coverage,
        grid=first.grid,
        starts=list(first.starts),
        cascade=stages,
        cost_per_decided=result.cost_per_decided,
        **_procedure(first),
    )


def build_card(
    *,
    judge: JudgeSection,
    calibration: CalibrationSection,
    policy: PolicySection,
    created_at: datetime | None = None,
    valid_days: int = DEFAULT_VALID_DAYS,
) -> Card:
    """A sealed card, expiring ``valid_days`` after ``created_at`` (default now, UTC)."""
    created = (created_at or utcnow()).replace(microsecond=0)
    uses_v2 = judge.uses_v2() or calibration.uses_v2() or policy.uses_v2()
    card = Card(
        card_version=CARD_VERSION_2 if uses_v2 else CARD_VERSION,
        judge=judge,
        calibration=calibration,
        policy=policy,
        created_at=created,
        expires_at=created + timedelta(days=valid_days),
    )
    return card.sealed()


# --- Files ------------------------------------------------------------------------------------


def write_card(card: Card, path: str | Path) -> str:
    """Write the card as YAML (sealing it first); return its digest."""
    sealed = card.sealed()
    Path(path).write_text(sealed.to_yaml(), encoding="utf-8")
    return sealed.card_digest


def _field(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(card)"


def load_card(path: str | Path) -> Card:
    """Load and validate a card; errors name the file and the field and say what to do."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise CardError(f"{file}: cannot read the card: {err.strerror}") from err
    return parse_card(text, source=file)


def parse_card(text: str, *, source: str = "the card") -> Card:
    """Validate a card's YAML text (its schema and its content digest); errors name
    ``source`` and the field and say what to do."""
    import yaml

    file = source
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CardError(f"{file}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise CardError(f"{file}: a card is a YAML mapping, got {type(data).__name__}")
    try:
        card = Card.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise CardError(
            f"{file}: field '{_field(first['loc'])}': {first['msg']}{more} "
            "(write cards with `judge calibrate`; do not edit them by hand)"
        ) from err
    if card.card_digest != card.computed_digest():
        raise CardError(
            f"{file}: field 'card_digest': {card.card_digest or '(empty)'} does not match the "
            f"card's content ({card.computed_digest()}): the card was edited after it was written; "
            "recalibrate with `judge calibrate`"
        )
    return card


def verify_card(
    card: Card,
    *,
    judge_model: str,
    rubric_digest: str | None,
    selector_version: str | None,
    gold_digest: str | None = None,
    now: datetime | None = None,
) -> None:
    """Refuse a card that does not bind this judge, or has expired: raise CardError.

    ``rubric_digest`` and ``selector_version`` are the judge's current values (None for
    recorded verdicts, which have neither); ``gold_digest`` is checked only when given. For a
    panel card, ``judge_model`` may name a member: its own binding is checked.
    """
    problems = []
    j = card.member(judge_model) or card.judge
    if j.model != judge_model:
        problems.append(f"judge model is {judge_model!r}, the card is for {j.model!r}")
    if j.rubric.digest != rubric_digest:
        problems.append(f"rubric digest is {rubric_digest}, the card binds {j.rubric.digest}")
    if j.evidence_selector.version != selector_version:
        problems.append(
            f"evidence selector version is {selector_version!r}, the card binds "
            f"{j.evidence_selector.version!r}"
        )
    gold = card.calibration.gold.digest
    if gold_digest is not None and gold != gold_digest:
        problems.append(f"gold set digest is {gold_digest}, the card was calibrated on {gold}")
    moment = now or utcnow()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    expires = card.expires_at if card.expires_at.tzinfo else card.expires_at.replace(tzinfo=UTC)
    if moment >= expires:
        problems.append(f"the card expired at {expires.isoformat()}")
    if problems:
        raise CardError(
            "stale or mismatched calibration card: "
            + "; ".join(problems)
            + ". Recalibrate with `judge calibrate` before routing on this judge."
        )
