"""Score a run set: judge its runs (or read their gold labels), build the report, and gate.

:func:`score_runs` is what ``judge score`` and a Python user call; :func:`gate` is the regression
gate on a report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from calibration.card import Card, load_card, verify_card
from judge.diagnosis import diagnoses_of
from judge.errors import CardError, InputError
from judge.evidence import SELECTOR_VERSION
from judge.judging import JudgeOptions, Outcome, Step
from judge.providers import check_models
from judge.routing import card_models
from judge.rubrics import Rubric, load_rubric
from judge.runsets.estimates import METHOD, POPULATION
from judge.runsets.fbd import failed_runs
from judge.runsets.gating import gate_from_report
from judge.runsets.labels import HumanLabels, LabelCheck, check_labels, load_labels
from judge.runsets.models import (
    GateResult,
    JudgingInfo,
    LabelPlanInfo,
    LabelsInfo,
    RubricInfo,
    RunSetReport,
)
from judge.runsets.records import Run
from judge.runsets.report import ReportContext, build_report
from judge.runsets.scoring import ScoredRun, eligibility, judge_runs, score_from_gold
from judge.store import Store


@dataclass(frozen=True)
class ReportOptions:
    """How the report computes and states its figures."""

    title: str = "Run-set report"
    #: The k of pass@k / pass^k (None: 1 .. the most runs of a task).
    ks: Sequence[int] | None = None
    n_boot: int = 2000
    seed: int = 0
    #: Also report pass@1 corrected for the card's FAR/FRR (Rogan-Gladen).
    correct_for_judge: bool = False
    #: Notes the report carries (e.g. records skipped).
    notes: Sequence[str] = ()

    def __post_init__(self) -> None:
        bad = [k for k in self.ks or () if k < 1]
        if bad:
            raise InputError(f"each k of pass@k must be at least 1, got {bad[0]}", field="ks")


def load_verified_card(card: Card | str, models: Sequence[str], rubric: Rubric) -> Card:
    """The card (or the card at a path), refused unless one of its judges is among ``models``
    and it binds this rubric and today's evidence selector."""
    where = card if isinstance(card, str) else "the card"
    loaded = load_card(card) if isinstance(card, str) else card
    if not set(card_models(loaded)) & set(models):
        raise CardError(
            f"{where}: the card is for {loaded.judge.model!r}, which is not among "
            f"the judges ({', '.join(models)}); add it with --model"
        )
    verify_card(
        loaded,
        judge_model=loaded.judge.model,
        rubric_digest=rubric.digest,
        selector_version=SELECTOR_VERSION,
    )
    return loaded


def score_runs(
    runs: Sequence[Run],
    *,
    source: str,
    store: Store | str | Path | None = None,
    rubric: str | Rubric | None = None,
    models: Sequence[str] = (),
    card: Card | str | None = None,
    gold_labels: bool = False,
    judge_options: JudgeOptions | None = None,
    report: ReportOptions | None = None,
    labels: str | Path | None = None,
    on_start: Callable[[list[Step]], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> RunSetReport:
    """Score a run set (``source`` names it in the report) and build its report.

    With ``gold_labels``, each run's gold label is its outcome. Otherwise every completed run is
    judged in ``store`` with ``rubric`` by the ``models`` of another model family than its agent,
    by the same protocol as ``judge run`` (``judge_options``: prompt variants, orders,
    samples; nothing is paid twice), and with ``card`` the verdicts are routed (decisions
    stored, review and audits queued) and the report carries the card's error rates.
    ``store``: a Store, or its location (a SQLite path or a database URL), opened only once
    the request is checked (the rubric, the models and their credentials, the card, the
    labels), so that a refused request creates no store; scoring from gold labels opens none.

    ``labels``: a labels file (gold-format records, as ``judge gold export`` writes them) with
    human labels of some runs. The report then gives pass@1 per treatment and benchmark, and the
    paired differences, from the labels alone and by PPI++ (judge plus labels) beside the
    judge's. PPI++ needs the labels to be the sample of a label plan stored in ``store``
    (``judge review plan``); otherwise the labels are flagged "not valid for PPI" and only the
    labels-only figures are given, with a warning. The file is checked before anything is
    judged (:func:`judge.runsets.labels.load_labels`).
    """
    options = report or ReportOptions()
    if gold_labels:
        _check_gold_scoring(labels=labels, models=models, card=card, rubric=rubric, options=options)
        ctx = ReportContext(runset=source, mode="gold")
        scored = score_from_gold(runs, source)
    else:
        request = _check_judging(
            runs,
            store=store,
            rubric=rubric,
            models=models,
            card=card,
            labels=labels,
            judge_options=judge_options,
            options=options,
        )
        opened = (
            nullcontext(request.store) if isinstance(request.store, Store) else Store(request.store)
        )
        with opened as where:
            ctx, scored = _judged(
                where,
                runs,
                source=source,
                rubric=request.rubric,
                models=models,
                options=request.options,
                card=request.card,
                human=request.human,
                on_start=on_start,
                on_done=on_done,
            )
    _state_options(ctx, options)
    return build_report(scored, ctx)


def _check_gold_scoring(
    *,
    labels: str | Path | None,
    models: Sequence[str],
    card: Card | str | None,
    rubric: str | Rubric | None,
    options: ReportOptions,
) -> None:
    """Refuse what scoring from gold labels cannot use: human labels, a judge, a correction."""
    if labels is not None:
        raise InputError(
            "human labels (--labels) combine with a judge; scoring from gold labels uses none",
            field="labels",
        )
    if models or card is not None or rubric is not None or options.correct_for_judge:
        raise InputError(
            "scoring from gold labels uses no judge: give no model, rubric or "
            "card, and no correction for a judge",
            field="gold_labels",
        )


@dataclass(frozen=True)
class _Judging:
    """A checked request to judge a run set: where, with what, and the human labels."""

    store: Store | str | Path
    rubric: Rubric
    options: JudgeOptions
    card: Card | None
    human: HumanLabels | None


def _check_judging(
    runs: Sequence[Run],
    *,
    store: Store | str | Path | None,
    rubric: str | Rubric | None,
    models: Sequence[str],
    card: Card | str | None,
    labels: str | Path | None,
    judge_options: JudgeOptions | None,
    options: ReportOptions,
) -> _Judging:
    """Check a request to judge ``runs`` before anything is paid for (or a store created): the
    rubric, the models (of another family than each run's agent, with credentials), the card
    and the labels file."""
    if not models or rubric is None or store is None:
        raise InputError(
            "judging a run set needs a rubric, one or more models and a store",
            field="models",
            hint="or score from the runs' gold labels",
        )
    if options.correct_for_judge and card is None:
        raise InputError("a correction for the judge needs the judge's card", field="card")
    chosen = load_rubric(rubric) if isinstance(rubric, str) else rubric
    if chosen.kind == "pairwise":
        raise InputError(
            f"rubric {chosen.ref} is pairwise; a run set is scored with a "
            "binary or multi-criterion rubric",
            field="rubric",
        )
    eligibility(runs, models)  # refuse a same-family judge before anything is paid for
    opts = judge_options or JudgeOptions()
    check_models(models, api_base=opts.api_base, router=opts.router)
    verified = load_verified_card(card, models, chosen) if card is not None else None
    # Bad labels are refused before anything is paid for, too.
    human = load_labels(labels, runs, kind=chosen.kind) if labels is not None else None
    return _Judging(store, chosen, opts, verified, human)


def _state_options(ctx: ReportContext, options: ReportOptions) -> None:
    """Put the report options into the report's context."""
    ctx.title, ctx.ks, ctx.n_boot, ctx.seed = (
        options.title,
        list(options.ks or []) or None,
        options.n_boot,
        options.seed,
    )
    ctx.correct_for_judge = options.correct_for_judge
    ctx.notes.extend(options.notes)


def _judged(
    store: Store,
    runs: Sequence[Run],
    *,
    source: str,
    rubric: Rubric,
    models: Sequence[str],
    options: JudgeOptions,
    card: Card | None,
    human: HumanLabels | None,
    on_start: Callable[[list[Step]], None] | None,
    on_done: Callable[[Outcome], None] | None,
) -> tuple[ReportContext, list[ScoredRun]]:
    """Judge the runs (checked by :func:`score_runs`) in ``store``: the report's context and
    the scored runs."""
    judged = judge_runs(
        store,
        runs,
        rubric=rubric,
        models=models,
        options=options,
        card=card,
        on_start=on_start,
        on_done=on_done,
        source=source,
    )
    s = judged.summary
    notes = []
    if card is not None:
        notes.append(
            f"Routing: the card's decisions are stored in {store.location}; "
            "verdicts in the review band (and a seeded 5% audit of automatic ones) "
            "are queued for people (`judge review`)."
        )
    ctx = ReportContext(
        runset=source,
        mode="judge",
        rubric=RubricInfo.of(rubric),
        judges=judged.eligibility.summary(models),
        card=card,
        judging=JudgingInfo(
            models=list(models),
            batch_id=s.batch_id,
            judgments=len(s.outcomes),
            called=s.called,
            cached=s.cached,
            statuses=dict(s.statuses),
            prompt_tokens=s.prompt_tokens,
            completion_tokens=s.completion_tokens,
            seconds=round(s.seconds, 2),
            db=store.location,
        ),
        notes=notes,
    )
    scored = judged.runs
    # What `judge diagnose` stored of the failed runs (read, never called for).
    ctx.diagnoses = diagnoses_of(store, [r.run_id for r in failed_runs(scored)])
    if human is not None:
        check = check_labels(store, runs, human)
        scored = with_labels(scored, human, check)
        ctx.labels = labels_info(human, check)
    return ctx, scored


def with_labels(
    runs: Sequence[ScoredRun], human: HumanLabels, check: LabelCheck
) -> list[ScoredRun]:
    """The runs with their human label and their inclusion probability under the plan (as if
    uniform when the labels are no plan's sample)."""
    return [
        r.model_copy(
            update={"label": human.labels.get(r.run_id), "label_prob": check.probs.get(r.run_id)}
        )
        if r.run_id in check.probs
        else r
        for r in runs
    ]


def labels_info(human: HumanLabels, check: LabelCheck) -> LabelsInfo:
    """What the report states about the labels and their plan."""
    stored = check.plan
    plan = (
        None
        if stored is None
        else LabelPlanInfo(
            id=stored.id,
            design=stored.plan.design,
            seed=stored.plan.seed,
            budget=stored.plan.budget,
            mix=stored.plan.mix,
            n_runs=len(stored.plan.run_ids),
            n_chosen=len(stored.plan.chosen),
            runset=stored.runset,
            created_at=stored.created_at,
        )
    )
    notes = list(check.notes)
    if not check.valid:
        notes.append(
            "The labels are not valid for PPI: only labels-only figures are given, "
            "computed as if the labelled runs were a uniform random sample; they "
            "describe the labelled runs and may not hold for the others. The gate "
            "keeps the judge's interval."
        )
    counts = human.counts
    return LabelsInfo(
        file=human.path,
        n_labels=len(human.labels),
        n_pass=counts.get("pass", 0),
        n_fail=counts.get("fail", 0),
        valid_for_ppi=check.valid,
        reason=check.reason,
        plan=plan,
        sampling=stored.plan.design if check.valid and stored else "not planned",
        population=POPULATION,
        method=METHOD,
        notes=notes,
    )


def gate(
    report: RunSetReport,
    *,
    baseline: str,
    candidate: str,
    margin: float,
    tolerance: float = 0.05,
    min_tasks: int = 10,
    use_labels: bool = True,
) -> GateResult:
    """May ``candidate`` replace ``baseline``? Hard gates first, then paired non-inferiority of
    pass@1 within ``margin``, then rubric dimensions that move more than ``tolerance``; fewer
    than ``min_tasks`` shared tasks is inconclusive, never "no regression". When the report
    carries human labels valid for PPI (``score_runs(labels=...)``) and ``use_labels``, the
    interval of the pass@1 difference is PPI++'s."""
    return gate_from_report(
        report,
        baseline=baseline,
        candidate=candidate,
        margin=margin,
        tolerance=tolerance,
        min_tasks=min_tasks,
        use_labels=use_labels,
    )
