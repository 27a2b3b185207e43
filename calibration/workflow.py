"""The calibration workflow: verdict rows and their gold in, a sealed card and everything
measured out, in three typed steps a caller may also take one by one.

:func:`calibrate_rows` reads no file and no store and writes nothing: the judge side
(``judge/carding.py``) loads the verdicts, binds the judge (its rubric, prompt and evidence
selector, through a :data:`JudgeBinder`), then writes the card and the report. The steps, in
order: :func:`judge_request` (the kind and the judges), the judge's binding (before any figure,
so that a judge the card cannot bind fails fast), then

- :func:`measure`: score every item, fit an optional calibrator on a cluster split, and the
  metrics against gold, per slice, with intervals (the card's calibration section);
- :func:`certify`: the bands (or the cascade) with their finite-sample guarantee (the card's
  policy section), and the optional random split study;
- :func:`seal`: the card binding the judge to both, with its digest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

from calibration.bands import MIN_START, BandPolicy, Grid, share_start
from calibration.bands import certify as certify_bands
from calibration.card import (
    CalibrationSection,
    Card,
    ConfidenceRef,
    GoldRef,
    JudgeSection,
    PolicySection,
    build_card,
    cascade_policy_section,
    plan_ref,
    policy_section,
)
from calibration.card_plan import CardPlan, certify_planned
from calibration.cascade import (
    CascadeResult,
    SplitStudy,
    calibrate_cascade,
    split_study,
)
from calibration.confidence import (
    Calibrator,
    Kind,
    ScoreSet,
    calibrated_split,
    score_items,
    split_clusters,
)
from calibration.gold import GoldSet
from calibration.inputs import join_gold
from calibration.metrics import summarize
from calibration.options import (
    DEFAULT_VALID_DAYS,
    PANEL_GRID,
    PANEL_START_SHARE,
    CalibrationOptions,
    CompareOptions,
    PanelRule,
)
from calibration.panel import PanelModel, combine, fit_panel
from calibration.records import VerdictRow
from calibration.study import Study, compare
from calibration.summary import MetricSummary
from judge.defaults import DEFAULT_GRID
from judge.digests import text_digest
from judge.errors import InputError
from judge.kinds import SCORING

#: How the picked judges make one card: one judge, a cascade (cheapest first) or a panel.
JudgeMode = Literal["single", "cascade", "panel"]


def scan_of(
    options: CalibrationOptions, mode: JudgeMode
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The starting points (item counts, shares of the calibration items) of a card of
    ``mode``: the ones asked for, else a panel's share (a rule other than pooled) or 30."""
    if options.starts or options.start_shares:
        return options.starts, options.start_shares
    if mode == "panel" and options.panel_rule != "pooled":
        return (), (PANEL_START_SHARE,)
    return (MIN_START,), ()


def grid_of(options: CalibrationOptions, mode: JudgeMode) -> Grid:
    """The candidate grid of a card of ``mode``: the one asked for, else a panel's (a rule
    other than pooled: every distinct combined score) or the published levels."""
    if options.grid is not None:
        return Grid.parse(options.grid)
    if mode == "panel" and options.panel_rule != "pooled":
        return Grid.parse(PANEL_GRID)
    return Grid.parse(DEFAULT_GRID)


@dataclass(frozen=True)
class JudgeRequest:
    """What the workflow asks the judge side to bind."""

    #: The judges picked, in the order given (a cascade's cheapest first).
    names: tuple[str, ...]
    #: The card's model name: the judge, ``cascade(a > b)`` or ``panel(a, b)``.
    model: str
    mode: JudgeMode
    #: The scoring kind the verdicts are read as.
    kind: Kind
    #: A panel's rule (None: not a panel).
    panel_rule: PanelRule | None = None

    @property
    def members(self) -> bool:
        """Whether the card binds each judge as a panel member (a panel with a declared rule;
        a pooled panel, as written before rules, binds none)."""
        return self.mode == "panel" and self.panel_rule not in (None, "pooled")


@dataclass(frozen=True)
class JudgeBinding:
    """The card's judge section, and notes for the summary."""

    section: JudgeSection
    notes: tuple[str, ...] = ()


#: Binds the card's judge section (rubric, prompt digest, evidence selector) for a request.
JudgeBinder = Callable[[JudgeRequest], JudgeBinding]


def unbound(source: str) -> JudgeBinder:
    """A binder for verdicts that carry no rubric or selector (recorded verdicts of outside
    judges): the card names the model and the source only."""

    def bind(request: JudgeRequest) -> JudgeBinding:
        members = (
            [JudgeSection(model=name, source=source) for name in request.names]
            if request.members
            else None
        )
        return JudgeBinding(JudgeSection(model=request.model, source=source, members=members))

    return bind


@dataclass(frozen=True)
class CalibrationResult:
    """A calibrated judge: its sealed card and what was measured to write it."""

    card: Card
    options: CalibrationOptions
    kind: Kind
    #: The card's model name (see JudgeRequest.model) and the judges behind it.
    model: str
    names: tuple[str, ...]
    #: The scores the bands were certified on (the held-apart split when a calibrator was fitted).
    scores: ScoreSet
    #: The certified bands, or the cascade (exactly one of the two is set).
    policy: BandPolicy | None
    cascade: CascadeResult | None
    #: The bands or the cascade in readable lines.
    summary: str
    #: One line: judge, gold, kind, alpha and delta.
    head: str
    #: How the calibrator was fitted, when one was.
    fit_note: str | None
    notes: tuple[str, ...]
    split_study: SplitStudy | None

    @property
    def metrics(self) -> MetricSummary:
        """The card's metric summary."""
        return self.card.calibration.metrics

    def lines(self) -> list[str]:
        """What ``judge calibrate`` prints before the card's path."""
        out = [self.head]
        if self.fit_note:
            out.append(f"calibrated confidence: {self.fit_note}")
        out.append(self.summary)
        out += [f"note: {note}" for note in self.notes]
        if self.split_study is not None:
            out.append(self.split_study.summary())
        return out


# --- The steps ---------------------------------------------------------------------------------


def attach_gold(
    rows: Sequence[VerdictRow],
    gold: GoldSet | None,
    *,
    source: str,
    gold_label: str | None = None,
) -> tuple[list[VerdictRow], GoldRef]:
    """The rows with their gold labels, and the card's reference to that gold.

    With a gold set, labels are joined by item id and the reference names the set
    (``gold_label``: how to name its file, default its path). Without one, the rows must carry
    their own labels; ``source`` (the verdict file) names them, and their digest is taken over
    the sorted (item id, label) pairs.
    """
    if gold is not None:
        joined = list(join_gold(rows, gold))
        label = gold_label if gold_label is not None else str(gold.path)
        ref = GoldRef(name=gold.name, digest=gold.digest, n=gold.n, source=f"gold set {label}")
        return joined, ref
    labels = {r.item_id: r.gold for r in rows if r.gold is not None}
    if not labels:
        raise InputError(
            "these verdicts carry no gold labels",
            file=source,
            field="gold",
            hint="pass --gold GOLD.jsonl",
        )
    name = Path(source).name
    ref = GoldRef(
        name=name,
        digest=text_digest(json.dumps(sorted(labels.items()), separators=(",", ":"))),
        n=len(labels),
        source=f"gold labels carried by {name}",
    )
    return list(rows), ref


def infer_kind(rows: Sequence[VerdictRow], kind: Kind | None = None) -> Kind:
    """The scoring kind: ``kind`` when given, else the kind whose labels the rows use."""
    if kind is not None:
        return SCORING[kind].scoring
    labels = {r.gold for r in rows if r.gold} | {r.verdict for r in rows if r.verdict}
    found = [spec.scoring for spec in SCORING.values() if labels & spec.allowed]
    if not found:
        raise InputError(
            "cannot tell the rubric kind from the labels", field="kind", hint="pass --kind"
        )
    # Labels of both kinds (a file mixing rubrics): the last registered (pairwise) wins.
    return found[-1]


def pick_judges(rows: Sequence[VerdictRow], judges: Sequence[str]) -> list[str]:
    """The judges asked for, each checked present; none asked: the only judge present."""
    present = sorted({r.judge for r in rows})
    if not judges:
        if len(present) == 1:
            return present
        raise InputError(
            f"these verdicts hold {len(present)} judges: {', '.join(present)}",
            field="judge",
            hint="pick one with --judge (several with --cascade or --panel)",
        )
    missing = [j for j in judges if j not in present]
    if missing:
        raise InputError(
            f"no verdicts of judge {missing[0]!r}; present: {', '.join(present)}", field="judge"
        )
    return list(judges)


def card_filename(model: str) -> str:
    """The default card file name of a model: ``<model, file-safe>.card.yaml``."""
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "judge") + ".card.yaml"


def _check(options: CalibrationOptions, names: Sequence[str]) -> None:
    if len(names) > 1 and not (options.cascade or options.panel):
        raise InputError("several --judge given", field="judge", hint="add --cascade or --panel")
    if options.cascade and options.panel:
        raise InputError("--cascade and --panel exclude each other", field="cascade")
    if options.cascade and (options.calibrator != "none" or options.slice_key):
        raise InputError(
            "--cascade does not combine with --calibrator or --slice yet", field="cascade"
        )
    if options.panel and options.panel_rule != "pooled" and options.calibrator != "none":
        raise InputError(
            f"--panel-rule {options.panel_rule} makes the panel's score; it does not combine "
            "with --calibrator",
            field="calibrator",
            hint="drop --calibrator (the fitted rule is a model fitted on held-apart gold)",
        )
    for share in options.start_shares:
        share_start(share, 1)


def judge_request(rows: Sequence[VerdictRow], options: CalibrationOptions) -> JudgeRequest:
    """What ``options`` ask of ``rows``: the scoring kind, the judges (each checked present) and
    how they make one card. Raises InputError for a request the rows cannot answer."""
    kind = infer_kind(rows, options.kind)
    if options.panel and not options.judges:
        names = sorted({r.judge for r in rows})  # a panel of every judge present
    else:
        names = pick_judges(rows, options.judges)
    _check(options, names)
    if options.panel:
        model = "panel(" + ", ".join(names) + ")"
        return JudgeRequest(tuple(names), model, "panel", kind, options.panel_rule)
    if len(names) > 1:
        return JudgeRequest(tuple(names), "cascade(" + " > ".join(names) + ")", "cascade", kind)
    return JudgeRequest(tuple(names), names[0], "cascade" if options.cascade else "single", kind)


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found: the judges' scores and their metrics against gold (the
    card's calibration section but for the gold reference)."""

    request: JudgeRequest
    #: One score set per judge of a cascade (cheapest first); one for a single judge or a panel.
    stage_scores: tuple[ScoreSet, ...]
    #: The scores the bands are certified on (the held-apart split when a calibrator was fitted).
    scores: ScoreSet
    calibrator: Calibrator | None
    #: How the calibrator was fitted, when one was.
    fit_note: str | None
    metrics: MetricSummary
    #: The slice keys the metrics are also given per value of.
    slices: tuple[str, ...]
    #: A panel's rule (None: not a panel, or a pooled one), its fitted model and how it was fit.
    panel_rule: PanelRule | None = None
    panel_model: PanelModel | None = None
    panel_fit: str | None = None
    #: A panel's members' own scores, in member order.
    member_scores: tuple[ScoreSet, ...] = ()

    @property
    def kind(self) -> Kind:
        """The scoring kind."""
        return self.request.kind

    def section(self, gold: GoldRef) -> CalibrationSection:
        """The card's calibration section, on ``gold``."""
        sources = sorted({i.source for i in self.scores.items})
        fitted = self.calibrator
        return CalibrationSection(
            kind=self.kind,
            gold=gold,
            confidence=ConfidenceRef(
                source="+".join(sources) if sources else "none",
                calibrator=fitted.name if fitted is not None else "none",
                calibrator_fit=self.fit_note,
                calibrator_params=fitted.params() if fitted is not None else None,
                panel_rule=self.panel_rule,
                panel_params=self.panel_model.params() if self.panel_model is not None else None,
                panel_fit=self.panel_fit,
            ),
            slices=list(self.slices),
            metrics=self.metrics,
        )


def measure(
    rows: Sequence[VerdictRow], request: JudgeRequest, options: CalibrationOptions
) -> Measurement:
    """Score every item of the requested judges (a panel: combined by its rule), fit the
    optional calibrator (or the panel's model) on a cluster split, and summarise their verdicts
    against gold, per slice, with intervals."""
    kind = request.kind
    wanted = set(request.names)
    judge_rows = [r for r in rows if r.judge in wanted]
    stage_scores: tuple[ScoreSet, ...]
    panel = _Panel(ScoreSet(kind=kind, judge="", items=()))
    if request.mode == "panel":
        panel = _panel_scores(judge_rows, request, options)
        stage_scores = (panel.scores,)
    else:
        stage_scores = tuple(score_items(judge_rows, kind=kind, judge=n) for n in request.names)
    scores = stage_scores[0]
    fitted: Calibrator | None = None
    fit_note = None
    if options.calibrator != "none":
        fraction = options.calibration_split
        scores, fitted = calibrated_split(
            scores, options.calibrator, fraction=fraction, seed=options.seed
        )
        fit_note = (
            f"{options.calibrator} fitted on {fraction:.0%} of the task clusters (seed "
            f"{options.seed}); thresholds certified on the other "
            f"{len(scores.with_gold().items)} gold items"
        )
    slices = (options.slice_key,) if options.slice_key else ()
    metrics = summarize(
        [r for r in judge_rows if r.gold is not None],
        kind,
        n_boot=options.n_boot,
        seed=options.seed,
        slices=slices,
    )
    return Measurement(
        request,
        stage_scores,
        scores,
        fitted,
        fit_note,
        metrics,
        slices,
        panel_rule=panel.rule,
        panel_model=panel.model,
        panel_fit=panel.fit,
        member_scores=panel.members,
    )


@dataclass(frozen=True)
class _Panel:
    """A panel's score set (the one its bands are certified on) and how it was made."""

    scores: ScoreSet
    rule: PanelRule | None = None
    model: PanelModel | None = None
    fit: str | None = None
    members: tuple[ScoreSet, ...] = ()


def _panel_scores(
    rows: Sequence[VerdictRow], request: JudgeRequest, options: CalibrationOptions
) -> _Panel:
    kind, rule = request.kind, options.panel_rule
    if rule == "pooled":
        return _Panel(score_items(rows, kind=kind))
    members = tuple(score_items(rows, kind=kind, judge=n) for n in request.names)
    if rule != "fitted":
        return _Panel(combine(members, rule), rule, members=members)
    # Fit on one label-free cluster split, certify on the other: the labels the model was
    # fitted on never certify its band.
    fraction = options.calibration_split
    fit_part, rest = split_clusters(
        combine(members, "logodds"), fraction=fraction, seed=options.seed
    )
    fit_ids = {i.item_id for i in fit_part.items} | set(fit_part.unscored)
    rest_ids = {i.item_id for i in rest.items} | set(rest.unscored)
    model = fit_panel([m.subset(fit_ids) for m in members], kind=kind)
    scores = combine([m.subset(rest_ids) for m in members], "fitted", model)
    fit = (
        f"fitted on {fraction:.0%} of the task clusters (seed {options.seed}, "
        f"{len(fit_part.with_gold().items)} gold items); thresholds certified on the other "
        f"{len(scores.with_gold().items)} gold items"
    )
    return _Panel(scores, rule, model, fit, members)


def pool_scores(rows: Sequence[VerdictRow], options: CalibrationOptions) -> ScoreSet:
    """The scores of the judge (or panel) ``options`` ask for on every item of ``rows``,
    reading no label: what a label plan is drawn on (calibration.card_plan)."""
    unlabelled = [replace(r, gold=None) for r in rows]
    request = judge_request(unlabelled, options)
    if options.cascade or options.calibrator != "none" or options.panel_rule == "fitted":
        raise InputError(
            "a label plan is drawn for one judge or a panel by a fixed rule (not a cascade, a "
            "calibrator or the fitted rule, whose scores depend on labels)",
            field="plan",
        )
    wanted = set(request.names)
    judge_rows = [r for r in unlabelled if r.judge in wanted]
    if request.mode == "panel":
        return _panel_scores(judge_rows, request, options).scores
    return score_items(judge_rows, kind=request.kind, judge=request.names[0])


@dataclass(frozen=True)
class Certification:
    """What :func:`certify` decided: the bands or the cascade (exactly one of the two is set)
    with their guarantee, as the card's policy section."""

    policy: BandPolicy | None
    cascade: CascadeResult | None
    section: PolicySection
    #: The bands or the cascade in readable lines.
    summary: str
    #: The random split study of the procedure, when asked for.
    split_study: SplitStudy | None = None


def _check_plan(measured: Measurement, options: CalibrationOptions, plan: CardPlan) -> None:
    """Refuse a plan that cannot certify this card: the plan fixes the scan and was drawn on
    the scores of one judge (or panel) as they are."""
    why = None
    if options.cascade or options.calibrator != "none" or options.slice_key:
        why = "a planned card is one judge or panel, with no --cascade, --calibrator or --slice"
    elif measured.panel_rule == "fitted":
        why = "the fitted panel rule changes the scores the plan was drawn on"
    elif options.starts or options.start_shares:
        why = (
            f"the plan fixes the scan (starts at {', '.join(map(str, plan.starts))} of its labels)"
        )
    elif plan.judge != measured.scores.judge or plan.kind != measured.kind:
        why = (
            f"the plan was drawn for {plan.judge} ({plan.kind}), not for "
            f"{measured.scores.judge} ({measured.kind})"
        )
    if why is not None:
        raise InputError(f"cannot certify with plan {plan.id}: {why}", field="plan")


def certify(
    measured: Measurement, options: CalibrationOptions, plan: CardPlan | None = None
) -> Certification:
    """Certify the bands (per slice when asked) on the measured scores, or calibrate the
    cascade on each judge's scores, with the finite-sample guarantee ``options`` ask for; and
    run the random split study when asked. With a label ``plan`` (calibration.card_plan), the
    bands are certified on the plan's labels, with its scan, and cover a share of its pool."""
    grid = grid_of(options, measured.request.mode)
    starts, shares = scan_of(options, measured.request.mode)
    a_reject = options.reject_alpha(measured.kind)
    if plan is not None:
        _check_plan(measured, options, plan)
        policy = certify_planned(
            measured.scores,
            plan,
            alpha_accept=options.alpha_accept,
            alpha_reject=a_reject,
            delta=options.delta,
            test=options.test,
        )
        section = policy_section(policy).model_copy(update={"plan": plan_ref(plan, policy)})
        return Certification(policy, None, section, policy.summary())
    if options.cascade:
        casc = calibrate_cascade(
            measured.stage_scores,
            alpha_accept=options.alpha_accept,
            alpha_reject=a_reject,
            delta=options.delta,
            grid=grid,
            starts=starts,
            costs=options.costs,
            mode=options.cascade_mode,
            seed=options.seed,
            start_shares=shares,
            test=options.test,
        )
        certified = Certification(None, casc, cascade_policy_section(casc), casc.summary())
    else:
        policy = certify_bands(
            measured.scores,
            alpha_accept=options.alpha_accept,
            alpha_reject=a_reject,
            delta=options.delta,
            grid=grid,
            starts=starts,
            slice_key=options.slice_key,
            correction=options.correction,
            start_shares=shares,
            test=options.test,
        )
        certified = Certification(policy, None, policy_section(policy), policy.summary())
    if not options.split_study:
        return certified
    study = split_study(
        measured.stage_scores if options.cascade else [measured.scores],
        alpha_accept=options.alpha_accept,
        alpha_reject=a_reject,
        delta=options.delta,
        grid=grid,
        starts=starts,
        mode=options.cascade_mode if options.cascade else "shared",
        n_splits=options.split_study,
        seed=options.seed,
        start_shares=shares,
        test=options.test,
    )
    return replace(certified, split_study=study)


def seal(
    measured: Measurement,
    certified: Certification,
    *,
    judge: JudgeSection,
    gold: GoldRef,
    created_at: datetime | None = None,
    valid_days: int = DEFAULT_VALID_DAYS,
) -> Card:
    """The card binding ``judge`` (its model, rubric, prompt and evidence selector) to what was
    measured on ``gold`` and certified, valid ``valid_days`` from ``created_at`` (default now),
    with its digest."""
    return build_card(
        judge=judge,
        calibration=measured.section(gold),
        policy=certified.section,
        created_at=created_at,
        valid_days=valid_days,
    )


def calibrate_rows(
    rows: Sequence[VerdictRow],
    *,
    gold: GoldRef,
    judge: JudgeBinder,
    options: CalibrationOptions,
    created_at: datetime | None = None,
    plan: CardPlan | None = None,
) -> CalibrationResult:
    """Calibrate the judge(s) of ``rows`` against the gold they carry (see :func:`attach_gold`):
    :func:`measure`, :func:`certify`, then :func:`seal` the card.

    ``judge`` binds the card's judge section, before anything is measured (a judge the card
    cannot bind fails fast); ``created_at`` (default now) starts the card's validity; ``plan``:
    the label plan the gold was drawn by (the rows are its whole pool). Raises InputError for a
    request the rows cannot answer.
    """
    request = judge_request(rows, options)
    binding = judge(request)
    measured = measure(rows, request, options)
    certified = certify(measured, options, plan)
    card = seal(
        measured,
        certified,
        judge=binding.section,
        gold=gold,
        created_at=created_at,
        valid_days=options.valid_days,
    )
    a_reject = options.reject_alpha(request.kind)
    head = (
        f"judge {request.model} on {len(measured.scores.with_gold().items)} gold items "
        f"({gold.source}), {request.kind}, alpha {options.alpha_accept}"
        + (f"/{a_reject}" if a_reject is not None else "")
        + f", delta {options.delta}"
    )
    return CalibrationResult(
        card=card,
        options=options,
        kind=request.kind,
        model=request.model,
        names=request.names,
        scores=measured.scores,
        policy=certified.policy,
        cascade=certified.cascade,
        summary=certified.summary,
        head=head,
        fit_note=measured.fit_note,
        notes=binding.notes,
        split_study=certified.split_study,
    )


# --- Comparing judges ------------------------------------------------------------------------


def compare_rows(rows: Sequence[VerdictRow], options: CompareOptions) -> Study:
    """Compare the judges of ``rows`` (with their gold) on the items all of them judged."""
    if options.judges:
        pick_judges(rows, options.judges)  # names a missing judge with the ones present
    try:
        return compare(
            rows,
            list(options.judges) or None,
            n_boot=options.n_boot,
            seed=options.seed,
            all_pairs=options.all_pairs,
            failures=options.failures,
        )
    except ValueError as err:
        raise InputError(str(err), field="judge") from err
