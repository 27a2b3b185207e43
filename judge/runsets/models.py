"""The run-set report's typed sections: :class:`RunSetReport` and what it is made of.

report.json is ``RunSetReport.model_dump(mode="json")``; :func:`load_report` reads it back
(strictly: every model forbids unknown keys). :mod:`judge.runsets.report` computes the figures,
:mod:`judge.runsets.gating` the :class:`GateResult`, :mod:`judge.runsets.render` and
:mod:`judge.runsets.plots` render them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from calibration.card import GoldRef, RubricRef
from judge.errors import InputError
from judge.rubrics import Rubric
from judge.runsets.passk import MacroEstimate
from judge.runsets.scoring import JudgesInfo, ScoredRun
from judge.types import Strict

REPORT_VERSION = 1

Mode = Literal["judge", "gold"]
Decision = Literal["ship", "block", "inconclusive"]


def _finite(value: Any) -> Any:
    # The report's numbers are plain JSON: a NaN or an infinity is "no value" (null).
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


#: A figure that may be missing (undefined, or no data); NaN becomes None.
Figure = Annotated[float | None, BeforeValidator(_finite)]
#: A [low, high] interval, or None when none could be computed.
Interval = list[float] | None


class _Model(Strict):
    # Strict at the edge (report.json is read back by `judge gate`). JSON keys that are no
    # Python names ("pass@k", "pass") are aliases of fields; the JSON always uses the keys.
    model_config = ConfigDict(
        serialize_by_alias=True, validate_by_name=True, validate_by_alias=True
    )


class _OmitNone(_Model):
    # Optional sections (a correction, figures from human labels) are absent from report.json
    # when they were not asked for, so a report without them reads as it always did.
    omit_when_none: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.omit_when_none:
            if getattr(self, name) is None:
                data.pop(name, None)
        return data


# --- what the report states about how the runs were scored ---------------------------------------


class RubricCriterion(_Model):
    """One criterion of the rubric, as the report and the gate use it."""

    id: str
    hard_gate: bool = False
    weight: float = 1.0


class RubricInfo(_Model):
    """The rubric the runs were judged with."""

    ref: str
    id: str
    version: int
    kind: str
    digest: str
    #: The criteria of a multi-criterion rubric (empty for the others).
    criteria: list[RubricCriterion] = Field(default_factory=list)

    @classmethod
    def of(cls, rubric: Rubric) -> RubricInfo:
        """What the report states about a loaded rubric."""
        criteria = (
            [
                RubricCriterion(id=c.id, hard_gate=c.hard_gate, weight=c.weight)
                for c in rubric.spec.criteria
            ]
            if rubric.kind == "multi-criterion"
            else []
        )
        return cls(
            ref=rubric.ref,
            id=rubric.id,
            version=rubric.version,
            kind=rubric.kind,
            digest=rubric.digest,
            criteria=criteria,
        )


class JudgingInfo(_Model):
    """The judging batch behind a judged report."""

    models: list[str]
    batch_id: str
    judgments: int
    called: int
    cached: int
    statuses: dict[str, int]
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    db: str


class RecordedRate(_Model):
    """An error rate of the card's judge (recorded on the card, or from its confusion counts)."""

    value: Figure
    ci95: Interval = None
    k: int | float | None = None
    n: int | float | None = None


class CardSummary(_Model):
    """What the report says about the judge's calibration card."""

    model: str
    rubric: RubricRef
    gold: GoldRef
    confusion_matrix: dict[str, Any] | None
    false_accept_rate: RecordedRate | None
    false_reject_rate: RecordedRate | None
    guarantee: str
    auto_accept_threshold: Figure
    auto_reject_threshold: Figure
    human_review_rule: str
    coverage: Figure
    created_at: str
    expires_at: str
    card_digest: str


class ReportParams(_Model):
    """The k values and the bootstrap settings of the report."""

    ks: list[int]
    n_boot: int
    seed: int
    level: float
    correct_for_judge: bool


# --- the figures of one group of runs ------------------------------------------------------------


class Counts(_Model):
    """Raw runs, exclusions, the analysis set and what was scored."""

    raw: int
    excluded: int
    excluded_infra_error: int
    analysis: int
    timeouts_counted_as_fail: int
    unscored: int
    scored: int
    passes: int
    tasks: int


class Routing(_Model):
    """How the analysed runs' verdicts were decided."""

    routes: dict[str, int]
    auto_decided: int
    awaiting_people: int
    uncalibrated: int
    gold: int
    by_rule: int


class OverallCounts(Counts):
    """The counts over every run, and how their verdicts were decided."""

    routing: Routing


class PooledRate(_Model):
    """The pass rate pooled over scored runs."""

    value: Figure
    k: int
    n: int
    method: str
    ci95: Interval


class MacroFigure(_Model):
    """A macro average over tasks at one k (see :class:`judge.runsets.passk.MacroEstimate`)."""

    metric: str
    k: int
    value: Figure
    ci95: Interval
    method: str
    n_tasks: int
    n_omitted: int
    omitted: list[str]
    note: str | None

    @classmethod
    def of(cls, estimate: MacroEstimate) -> MacroFigure:
        """The report's form of an estimate."""
        return cls.model_validate(estimate.to_dict())


class MacroFigures(_Model):
    """pass@k and pass^k for every k of the report."""

    pass_at_k: list[MacroFigure] = Field(validation_alias="pass@k", serialization_alias="pass@k")
    pass_hat_k: list[MacroFigure] = Field(validation_alias="pass^k", serialization_alias="pass^k")


class TaskFigures(_Model):
    """One task: runs, passes, its Wilson interval, and its pass@k / pass^k (None: k > n)."""

    task: str
    n: int
    c: int
    rate: float
    wilson95: list[float]
    pass_at_k: dict[str, Figure] = Field(validation_alias="pass@k", serialization_alias="pass@k")
    pass_hat_k: dict[str, Figure] = Field(validation_alias="pass^k", serialization_alias="pass^k")


class Spread(_Model):
    """Total, mean, median and 95th percentile of the known values."""

    n: int
    total: Figure
    mean: Figure
    median: Figure
    p95: Figure


class CostSection(_Model):
    """Cost per run and per success, tokens, duration, and what judging cost."""

    runs: int
    runs_with_cost: int
    total_usd: Figure
    per_run_usd: Figure
    per_success_usd: Figure
    rule: str
    note: str | None
    tokens: Spread
    duration_s: Spread
    #: The summed cost of the judgments that recorded one (None when none did).
    judge_usd: Figure
    judge_tokens: int
    #: The judgments behind these runs, and how many of them recorded a cost (None in a report
    #: written before these were counted).
    judge_judgments: int | None = None
    judge_priced: int | None = None


class CriterionRate(_Model):
    """One criterion's pass rate over the scored runs that answered it."""

    id: str
    hard_gate: bool
    weight: float
    passes: int = Field(validation_alias="pass", serialization_alias="pass")
    fail: int
    not_applicable: int
    value: Figure
    ci95: Interval


class WeightedOverall(_Model):
    """The weighted overall score of a multi-criterion rubric."""

    value: Figure
    n_runs: int
    ci95: Interval
    rule: str


class CriteriaSection(_Model):
    """Per-criterion pass rates and the weighted overall score."""

    criteria: list[CriterionRate]
    weighted_overall: WeightedOverall


class LabelEstimate(_Model):
    """pass@1 (or a paired difference) from human labels: labels only, or PPI++ (the judge on
    every run plus the labels). ``value`` None with a ``note`` when it cannot be estimated."""

    value: Figure
    ci95: Interval
    #: Human labels used (runs a declared rule decided are not counted).
    n_labels: int
    se: Figure = None
    #: "ppi++" or "labels_only" (calibration.ppi's method names).
    method: str | None = None
    lam: Figure = Field(default=None, validation_alias="lambda", serialization_alias="lambda")
    #: PPI++ only: how many labels the labels-only interval would need to be this narrow,
    #: n_labels * (se_labels_only / se)^2 on the same sample.
    effective_labels: Figure = None
    #: Labelled units (tasks with a labelled run) behind the interval: df + 1.
    labelled_units: int | None = None
    note: str | None = None


class GroupSection(_OmitNone):
    """Every figure for one group of runs (a treatment, or a treatment on one benchmark)."""

    omit_when_none: ClassVar[tuple[str, ...]] = ("ppi", "labels_only")

    counts: Counts
    pooled: PooledRate
    macro: MacroFigures
    tasks: list[TaskFigures]
    cost: CostSection
    criteria: CriteriaSection | None
    routing: Routing
    #: With human labels (``--labels``): figures keyed by metric ("pass@1"). Absent otherwise.
    ppi: dict[str, LabelEstimate] | None = None
    labels_only: dict[str, LabelEstimate] | None = None


class BenchmarkRate(_Model):
    """One benchmark's macro pass@1."""

    tasks: int
    value: Figure


class Rate(_Model):
    """A rate and its interval."""

    value: Figure
    ci95: Interval


class BalancedRate(Rate):
    """The benchmark-balanced rate and how its interval was made."""

    method: str


class BalancedSection(_Model):
    """Benchmark-balanced pass@1 beside pass@1 pooled over tasks and over runs."""

    benchmarks: dict[str, BenchmarkRate]
    balanced: BalancedRate
    pooled_over_tasks: Rate
    pooled_over_runs: Rate
    note: str


class CorrectedRate(_Model):
    """A pass rate as judged and corrected for the judge's error rates."""

    observed: float
    value: Figure
    ci95: Interval


class Correction(_Model):
    """pass@1 corrected for the card's FAR and FRR (Rogan-Gladen)."""

    available: Literal[True] = True
    far: float
    frr: float
    method: str
    assumption: str
    pooled: CorrectedRate | None = None
    macro: CorrectedRate | None = None


class NoCorrection(_Model):
    """Why the rates could not be corrected."""

    available: Literal[False] = False
    reason: str


class TreatmentSection(GroupSection):
    """A treatment's figures, with its balanced rates, its correction and its benchmarks."""

    omit_when_none: ClassVar[tuple[str, ...]] = ("ppi", "labels_only", "corrected")

    balanced: BalancedSection | None
    #: Only when the correction was asked for (``correct_for_judge``); absent from the JSON
    #: otherwise.
    corrected: Correction | NoCorrection | None = None
    by_benchmark: dict[str, GroupSection]


# --- across treatments ---------------------------------------------------------------------------


class MatrixCell(_Model):
    """Passes and scored runs of one task under one treatment."""

    c: int
    n: int


class MatrixRow(_Model):
    """One task across the treatments (None where a treatment has no scored run)."""

    task: str
    cells: dict[str, MatrixCell | None]


class TaskMatrix(_Model):
    """Task x treatment: passes and scored runs."""

    treatments: list[str]
    rows: list[MatrixRow]


class PairedDifference(_Model):
    """Candidate minus baseline on their shared tasks."""

    metric: str
    n_shared: int
    only_baseline: int
    only_candidate: int
    baseline_rate: Figure
    candidate_rate: Figure
    diff: Figure
    ci95: Interval
    per_task: dict[str, float]


class PairedComparison(_OmitNone):
    """A paired difference with the treatments it compares."""

    omit_when_none: ClassVar[tuple[str, ...]] = ("ppi", "labels_only")

    baseline: str
    candidate: str
    metric: str
    n_shared: int
    only_baseline: int
    only_candidate: int
    baseline_rate: Figure
    candidate_rate: Figure
    diff: Figure
    ci95: Interval
    per_task: dict[str, float]
    #: pass@1 only, with human labels: the difference from labels only and from PPI++.
    ppi: LabelEstimate | None = None
    labels_only: LabelEstimate | None = None


class HardGateFailure(_Model):
    """An analysed run that failed a hard-gate criterion."""

    run_id: str
    treatment: str
    benchmark: str
    task: str
    repetition: int
    gates: list[str]


class FailedCheck(_Model):
    """A deterministic check that failed on some runs of a treatment (judge.runsets.checks)."""

    check: str
    runs_failed: int
    #: Of the treatment's analysed runs.
    share: float
    example_runs: list[str]


class DiagnosingJudge(_Model):
    """One diagnosing judge (a model with an fbd rubric) on the run set's failed runs: what
    ``judge diagnose`` stored, summarised."""

    model: str
    #: The fbd rubric, id@version.
    rubric: str
    #: Failed runs it diagnosed (status ok or abstain).
    diagnosed: int
    #: Of those, the runs where it named a critical step.
    located: int
    #: Of those, the runs it said have no single critical step, or abstained on.
    no_single_step: int
    #: Failed runs whose diagnosis failed (parse or provider error): not diagnoses.
    failed: int
    #: Diagnosed runs a person confirmed (every other first bad decision is tentative).
    confirmed: int
    #: Diagnosed runs whose review item awaits a person.
    queued_for_review: int
    #: Located runs by the owner of the critical step, and by the invariant it broke
    #: ("unstated" when the report named none).
    by_owner: dict[str, int]
    by_invariant: dict[str, int]


class FirstBadDecisions(_Model):
    """Why the failed runs failed: the first bad decisions stored for them (``judge
    diagnose``), by judge, owner and invariant. Absent when the store holds none."""

    #: Completed runs judged fail or with an official fail label.
    failed_runs: int
    #: Failed runs with a diagnosis by at least one judge.
    diagnosed_runs: int
    #: Failed runs with none (or only failed ones), by run id.
    undiagnosed: list[str]
    #: Of the undiagnosed runs, those the judge did not find failed (their official label is
    #: fail): ``judge diagnose --db`` diagnoses only runs judged fail.
    undiagnosed_not_judged_fail: int
    judges: list[DiagnosingJudge]
    #: The store the diagnoses were read from.
    db: str
    #: "tentative until a person confirms" while no diagnosis is confirmed ("the others ..."
    #: once some are).
    status: str
    #: The command that diagnoses the rest (None when every failed run is diagnosed).
    command: str | None


class UnscoredRun(_Model):
    """An analysed run without a verdict, and why."""

    run_id: str
    treatment: str
    task: str
    reason: str | None


# --- the regression gate (computed by judge.runsets.gating; a section of the report) -------------


class NewGateFailure(_Model):
    """A hard gate a candidate run fails on a task where no baseline run failed it."""

    task: str
    run_id: str
    gates: list[str]


class HardGateCheck(_Model):
    """The gate's first check: new hard-gate failures in the candidate."""

    checked: bool
    new_failures: list[NewGateFailure]
    summary: str


class NonInferiority(_Model):
    """The gate's second check: the paired difference of the primary rate against -margin."""

    metric: str
    n_shared: int
    baseline: Figure
    candidate: Figure
    diff: Figure
    ci95: Interval
    decision: Decision
    summary: str
    method: str


class DimensionShift(_Model):
    """A rubric criterion's per-task pass rate, baseline against candidate."""

    id: str
    hard_gate: bool
    n_tasks: int
    baseline: float
    candidate: float
    diff: float
    moved: bool


class GateResult(_Model):
    """The gate's decision, its evidence and what it cannot support."""

    decision: Decision
    reason: str
    baseline: str
    candidate: str
    margin: float
    tolerance: float
    min_tasks: int
    level: float
    hard_gates: HardGateCheck
    non_inferiority: NonInferiority
    dimensions: list[DimensionShift]
    warnings: list[str]
    cannot_support: list[str]


# --- human labels (``--labels``) -----------------------------------------------------------------


class LabelPlanInfo(_Model):
    """The label plan the labels were checked against."""

    id: str
    design: str
    seed: int
    budget: int
    mix: float
    n_runs: int
    n_chosen: int
    runset: str
    created_at: str


class LabelsInfo(_Model):
    """The human labels of the report and whether PPI++ may use them."""

    file: str
    n_labels: int
    n_pass: int
    n_fail: int
    #: True when the labelled runs are exactly a stored label plan's random sample.
    valid_for_ppi: bool
    reason: str | None
    plan: LabelPlanInfo | None
    #: "uniform" or "active" (the plan's design); "not planned" without a valid plan.
    sampling: str
    #: calibration.ppi's population: "tasks" (intervals cluster-robust over tasks).
    population: str
    method: str
    notes: list[str]


class Headline(_Model):
    """The headline table: one row per treatment (and per treatment x benchmark when mixed)."""

    columns: list[str]
    rows: list[list[str]]


class RunSetReport(_OmitNone):
    """The whole report. ``model_dump(mode="json")`` is report.json."""

    omit_when_none: ClassVar[tuple[str, ...]] = ("labels", "first_bad_decisions", "failed_checks")

    report_version: int
    title: str
    created_at: str
    runset: str
    mode: Mode
    rubric: RubricInfo | None
    judges: JudgesInfo | None
    judging: JudgingInfo | None
    card: CardSummary | None
    rules: dict[str, str]
    params: ReportParams
    treatments: list[str]
    benchmarks: list[str]
    overall: OverallCounts
    per_treatment: dict[str, TreatmentSection]
    task_matrix: TaskMatrix
    paired: list[PairedComparison]
    hard_gate_failures: list[HardGateFailure]
    unscored: list[UnscoredRun]
    notes: list[str]
    gate: GateResult | None
    runs: list[ScoredRun]
    headline: Headline
    #: With ``--labels``: the labels, their plan and whether PPI++ may use them.
    labels: LabelsInfo | None = None
    #: The first bad decisions ``judge diagnose`` stored for the failed runs (absent when the
    #: store holds none, and when scoring from gold labels).
    first_bad_decisions: FirstBadDecisions | None = None
    #: Treatment -> the deterministic checks that failed on its runs (judge.runsets.checks);
    #: absent when no run recorded a failed check.
    failed_checks: dict[str, list[FailedCheck]] | None = None


def load_report(path: str | Path) -> RunSetReport:
    """Read a report.json written by `judge score`; an InputError names the first field that
    does not fit."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot read the report: {exc}",
            file=str(path),
            hint="write it with `judge score ... --out-dir DIR`",
        ) from exc
    try:
        return RunSetReport.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            raise InputError(
                f"cannot read the report: {first['msg']}",
                file=str(path),
                hint="write it with `judge score ... --out-dir DIR`",
            ) from exc
        field_name = ".".join(str(part) for part in first["loc"]) or None
        raise InputError(
            f"not a run-set report ({first['msg']})",
            file=str(path),
            field=field_name,
            hint="use the report.json written by `judge score`",
        ) from exc
