"""Run-set scoring reports: the figures, per treatment and per benchmark, as one typed model
(:class:`RunSetReport`; report.json is its ``model_dump(mode="json")``).

What is computed (docs/metrics.md sections 5 and 6), for each treatment (all benchmarks, then
each benchmark):

- counts: raw runs, excluded by a declared rule, the analysis set, timeouts, unscored, scored;
- the pooled pass rate over scored runs (task-cluster bootstrap interval);
- pass@k and pass^k per task (unbiased estimators, :mod:`judge.runsets.passk`) and
  macro-averaged over tasks, with task-cluster bootstrap intervals; k > n is undefined and the
  tasks are omitted and named, never extrapolated;
- per task: runs, passes, the Wilson interval of its pass rate;
- the benchmark-balanced pass@1 (mean over benchmarks of each benchmark's macro pass@1, a
  bootstrap stratified by benchmark) beside the rates pooled over tasks and over runs;
- cost per run and per success (cost per run over every raw run, infra-failed and timed-out
  included, divided by the pooled success rate), tokens, duration (median and p95);
- per-criterion pass rates and the weighted overall score (multi-criterion rubrics), the runs
  that failed a hard gate;
- how many verdicts the card auto-decided and how many await people;
- the first bad decisions ``judge diagnose`` stored for the failed runs (completed runs judged
  fail or labelled fail): how many were diagnosed, located and confirmed, by owner and
  invariant, how many await review, and the command that diagnoses the rest (read from the
  store, never a model call; absent when the store holds none);
- with ``correct_for_judge``: pass@1 corrected for the card's false accept and false reject rates
  (Rogan-Gladen), its interval from a joint bootstrap: task clusters resampled for the observed
  rate, and the card's FAR and FRR drawn from their Jeffreys posteriors Beta(k + 1/2,
  n - k + 1/2) given the card's confusion counts, so the interval widens by the card's own
  uncertainty. It assumes the judge errs on these runs as it did on the card's gold.
- with human labels of some runs (``ReportContext.labels``; the runs carry them): pass@1 from
  the labels alone and by PPI++ (judge plus labels; only when the labels are a label plan's
  random sample), for the treatment and each benchmark (:mod:`judge.runsets.estimates`).

Across treatments: the task matrix (task x treatment, passes of runs) and the paired difference
of every later treatment against each earlier one on their shared tasks (per-task difference,
mean, task-cluster bootstrap interval), and with human labels the same difference of pass@1
from the labels alone and by PPI++.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from calibration.card import Card
from calibration.intervals import (
    bootstrap_sums,
    percentile_interval,
    ratio_interval,
    wilson,
)
from judge.diagnosis import StoredDiagnoses
from judge.runsets.checks import failed_checks
from judge.runsets.correction import card_summary, corrected_section
from judge.runsets.estimates import METRIC, group_estimates, paired_estimates
from judge.runsets.fbd import first_bad_decisions
from judge.runsets.models import (
    REPORT_VERSION,
    BalancedRate,
    BalancedSection,
    BenchmarkRate,
    Correction,
    CostSection,
    Counts,
    CriteriaSection,
    CriterionRate,
    GroupSection,
    HardGateFailure,
    Headline,
    JudgingInfo,
    LabelsInfo,
    MacroFigure,
    MacroFigures,
    MatrixCell,
    MatrixRow,
    Mode,
    NoCorrection,
    OverallCounts,
    PairedComparison,
    PairedDifference,
    PooledRate,
    Rate,
    ReportParams,
    Routing,
    RubricCriterion,
    RubricInfo,
    RunSetReport,
    Spread,
    TaskFigures,
    TaskMatrix,
    TreatmentSection,
    UnscoredRun,
    WeightedOverall,
)
from judge.runsets.passk import (
    TaskCount,
    macro,
    mean_interval,
    metric_name,
    per_task,
    pooled_interval,
)
from judge.runsets.scoring import RULES, JudgesInfo, ScoredRun

#: The largest default k (a run set with more repetitions than this reports up to it).
MAX_DEFAULT_K = 10
#: Routes that count as decided without a person.
AUTO_ROUTES = ("auto_accept", "auto_reject")


@dataclass
class ReportContext:
    """Everything about how the runs were scored that the report states."""

    runset: str
    mode: Mode
    title: str = "Run-set report"
    rubric: RubricInfo | None = None
    judges: JudgesInfo | None = None
    card: Card | None = None
    correct_for_judge: bool = False
    ks: Sequence[int] | None = None
    n_boot: int = 2000
    seed: int = 0
    level: float = 0.95
    judging: JudgingInfo | None = None
    notes: list[str] = field(default_factory=list)
    #: Human labels were given (the runs carry them): labels-only figures, and PPI++ ones when
    #: ``labels.valid_for_ppi``.
    labels: LabelsInfo | None = None
    #: The diagnoses the store holds of the failed runs (``judge diagnose``); None when
    #: scoring from gold labels.
    diagnoses: StoredDiagnoses | None = None

    @property
    def criteria(self) -> list[RubricCriterion]:
        """The rubric's criteria (id, hard_gate, weight); empty when it has none."""
        return list(self.rubric.criteria) if self.rubric is not None else []


# --- grouping ------------------------------------------------------------------------------------


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort "task2" before "task10" and 2 before 10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def task_key(run: ScoredRun, multi_benchmark: bool) -> str:
    """The task's name in tables: ``task`` or ``benchmark/task`` when benchmarks are mixed."""
    return f"{run.benchmark}/{run.task_id}" if multi_benchmark else run.task_id


def _ordered(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def task_counts(runs: Sequence[ScoredRun], multi_benchmark: bool) -> list[TaskCount]:
    """(task, scored runs, passes) for every task with at least one scored run, in natural order."""
    n: Counter[str] = Counter()
    c: Counter[str] = Counter()
    for r in runs:
        if r.scored:
            key = task_key(r, multi_benchmark)
            n[key] += 1
            c[key] += r.outcome == "pass"
    return [TaskCount(t, n[t], c[t]) for t in sorted(n, key=natural_key)]


def default_ks(runs: Sequence[ScoredRun], multi_benchmark: bool) -> list[int]:
    """1 .. the most scored runs any task has in one treatment (at most MAX_DEFAULT_K)."""
    top = 1
    for treatment in _ordered(r.treatment for r in runs):
        group = [r for r in runs if r.treatment == treatment]
        top = max([top, *(t.n for t in task_counts(group, multi_benchmark))])
    return list(range(1, min(top, MAX_DEFAULT_K) + 1))


# --- one group of runs ---------------------------------------------------------------------------


def _counts(runs: Sequence[ScoredRun]) -> Counts:
    analysed = [r for r in runs if r.analysed]
    return Counts(
        raw=len(runs),
        excluded=len(runs) - len(analysed),
        excluded_infra_error=sum(r.status == "infra_error" for r in runs),
        analysis=len(analysed),
        timeouts_counted_as_fail=sum(r.status == "timeout" for r in analysed),
        unscored=sum(r.outcome is None for r in analysed),
        scored=sum(r.scored for r in runs),
        passes=sum(r.scored and r.outcome == "pass" for r in runs),
        tasks=len({(r.benchmark, r.task_id) for r in analysed}),
    )


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    import numpy as np

    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


def _spread(values: Sequence[float]) -> Spread:
    return Spread(
        n=len(values),
        total=float(sum(values)) if values else None,
        mean=float(sum(values) / len(values)) if values else None,
        median=_quantile(values, 0.5),
        p95=_quantile(values, 0.95),
    )


def cost_section(runs: Sequence[ScoredRun], success_rate: float | None) -> CostSection:
    """Cost per run (every raw run with a cost) and per success, tokens and duration, and the
    cost of judging them as the judgments recorded it."""
    costs = [r.cost_usd for r in runs if r.cost_usd is not None]
    per_run = sum(costs) / len(costs) if costs else None
    per_success = None
    note = None
    if per_run is not None and success_rate:
        per_success = per_run / success_rate
    elif per_run is not None:
        note = "no successes: cost per success is unbounded"
    if costs and len(costs) < len(runs):
        note = f"cost known for {len(costs)} of {len(runs)} runs; figures use those"
    return CostSection(
        runs=len(runs),
        runs_with_cost=len(costs),
        total_usd=float(sum(costs)) if costs else None,
        per_run_usd=per_run,
        per_success_usd=per_success,
        rule="cost per run over every raw run (failed, timed-out and infra-failed included) "
        "divided by the pooled success rate",
        note=note,
        tokens=_spread([float(r.tokens) for r in runs if r.tokens is not None]),
        duration_s=_spread([r.duration_s for r in runs if r.duration_s is not None]),
        judge_usd=_sum_or_none(r.judge_cost_usd for r in runs),
        judge_tokens=sum(r.judge_tokens for r in runs),
        judge_judgments=sum(len(r.judgment_ids) for r in runs),
        judge_priced=sum(r.judge_priced for r in runs),
    )


def _sum_or_none(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(sum(known)) if known else None


def _ratio_ci(
    num: Sequence[float], den: Sequence[float], clusters: Sequence[str], ctx: ReportContext
) -> list[float] | None:
    """Task-cluster bootstrap interval of sum(num)/sum(den)."""
    if len(set(clusters)) < 2:
        return None
    import numpy as np

    ci = ratio_interval(
        np.asarray(num, dtype=np.float64),
        np.asarray(den, dtype=np.float64),
        np.asarray(list(clusters)),
        n_boot=ctx.n_boot,
        seed=ctx.seed,
        level=ctx.level,
    )
    return list(ci) if ci else None


def criteria_section(
    runs: Sequence[ScoredRun], ctx: ReportContext, multi: bool
) -> CriteriaSection | None:
    """Per-criterion pass rates (pass / (pass + fail); not_applicable left out) and the
    weighted overall score, over scored runs, with task-cluster intervals."""
    specs = ctx.criteria
    scored = [r for r in runs if r.scored and r.criteria]
    if not specs or not scored:
        return None
    tasks = [task_key(r, multi) for r in scored]
    rows = []
    for spec in specs:
        hit = [float(r.criteria.get(spec.id) == "pass") for r in scored]
        counted = [float(r.criteria.get(spec.id) in ("pass", "fail")) for r in scored]
        n = int(sum(counted))
        rows.append(
            CriterionRate(
                id=spec.id,
                hard_gate=spec.hard_gate,
                weight=spec.weight,
                passes=int(sum(hit)),
                fail=n - int(sum(hit)),
                not_applicable=len(scored) - n,
                value=sum(hit) / n if n else None,
                ci95=_ratio_ci(hit, counted, tasks, ctx) if n else None,
            )
        )
    weights = {s.id: s.weight for s in specs}
    scores = []
    for r in scored:
        answered = {
            c: lab for c, lab in r.criteria.items() if lab in ("pass", "fail") and c in weights
        }
        total = sum(weights[c] for c in answered)
        scores.append(
            sum(weights[c] for c, lab in answered.items() if lab == "pass") / total
            if total
            else math.nan
        )
    keep = [i for i, s in enumerate(scores) if not math.isnan(s)]
    overall = WeightedOverall(
        value=sum(scores[i] for i in keep) / len(keep) if keep else None,
        n_runs=len(keep),
        ci95=_ratio_ci([scores[i] for i in keep], [1.0] * len(keep), [tasks[i] for i in keep], ctx)
        if keep
        else None,
        rule="per run: sum of the weights of passed criteria / sum of the weights of "
        "criteria answered pass or fail; mean over scored runs",
    )
    return CriteriaSection(criteria=rows, weighted_overall=overall)


def routing_section(runs: Sequence[ScoredRun]) -> Routing:
    """How the analysed runs' verdicts were decided: by the card alone, or awaiting people."""
    analysed = [r for r in runs if r.analysed]
    routes = Counter(r.route for r in analysed)
    return Routing(
        routes=dict(sorted(routes.items())),
        auto_decided=sum(routes[r] for r in AUTO_ROUTES),
        awaiting_people=routes["review"],
        uncalibrated=routes["uncalibrated"],
        gold=routes["gold"],
        by_rule=routes["rule"],
    )


def group_section(
    runs: Sequence[ScoredRun], ks: Sequence[int], ctx: ReportContext, multi: bool
) -> GroupSection:
    """Every figure for one group of runs (a treatment, or a treatment on one benchmark)."""
    counts = task_counts(runs, multi)
    return GroupSection(**_group_fields(runs, counts, ks, ctx, multi))


def _group_fields(
    runs: Sequence[ScoredRun],
    counts: Sequence[TaskCount],
    ks: Sequence[int],
    ctx: ReportContext,
    multi: bool,
) -> dict[str, Any]:
    n = sum(t.n for t in counts)
    c = sum(t.c for t in counts)
    rate = c / n if n else None
    figures = {
        metric: [
            MacroFigure.of(
                macro(counts, metric, k, n_boot=ctx.n_boot, seed=ctx.seed, level=ctx.level)
            )
            for k in ks
        ]
        for metric in ("pass@k", "pass^k")
    }
    values = {m: {k: per_task(counts, m, k) for k in ks} for m in ("pass@k", "pass^k")}
    tasks = [
        TaskFigures(
            task=t.task_id,
            n=t.n,
            c=t.c,
            rate=t.c / t.n,
            wilson95=list(wilson(t.c, t.n, ctx.level)),
            pass_at_k={str(k): values["pass@k"][k].get(t.task_id) for k in ks},
            pass_hat_k={str(k): values["pass^k"][k].get(t.task_id) for k in ks},
        )
        for t in counts
    ]
    out: dict[str, Any] = {}
    if ctx.labels is not None:
        both, alone = group_estimates(
            runs, lambda r: task_key(r, multi), with_judge=ctx.labels.valid_for_ppi, level=ctx.level
        )
        out["ppi"] = {METRIC: both} if both is not None else None
        out["labels_only"] = {METRIC: alone}
    return out | {
        "counts": _counts(runs),
        "pooled": PooledRate(
            value=rate,
            k=c,
            n=n,
            method="task_cluster_bootstrap",
            ci95=_list(pooled_interval(counts, n_boot=ctx.n_boot, seed=ctx.seed, level=ctx.level)),
        ),
        "macro": MacroFigures(pass_at_k=figures["pass@k"], pass_hat_k=figures["pass^k"]),
        "tasks": tasks,
        "cost": cost_section(runs, rate),
        "criteria": criteria_section(runs, ctx, multi),
        "routing": routing_section(runs),
    }


def _list(ci: tuple[float, float] | None) -> list[float] | None:
    return list(ci) if ci else None


# --- across benchmarks and treatments ------------------------------------------------------------


def balanced_section(runs: Sequence[ScoredRun], ctx: ReportContext) -> BalancedSection:
    """Benchmark-balanced pass@1 beside pass@1 pooled over tasks and over runs."""
    benchmarks = sorted({r.benchmark for r in runs if r.scored})
    per_bench = {}
    groups: list[list[float]] = []
    for b in benchmarks:
        counts = task_counts([r for r in runs if r.benchmark == b], False)
        vals = [t.c / t.n for t in counts]
        groups.append(vals)
        per_bench[b] = BenchmarkRate(tasks=len(vals), value=sum(vals) / len(vals) if vals else None)
    known = [v.value for v in per_bench.values() if v.value is not None]
    all_counts = task_counts(runs, True)
    task_vals = [t.c / t.n for t in all_counts]
    n = sum(t.n for t in all_counts)
    return BalancedSection(
        benchmarks=per_bench,
        balanced=BalancedRate(
            value=sum(known) / len(known) if known else None,
            ci95=_list(stratified_interval(groups, ctx)),
            method="bootstrap of tasks within each benchmark",
        ),
        pooled_over_tasks=Rate(
            value=sum(task_vals) / len(task_vals) if task_vals else None,
            ci95=_list(mean_interval(task_vals, n_boot=ctx.n_boot, seed=ctx.seed, level=ctx.level)),
        ),
        pooled_over_runs=Rate(
            value=sum(t.c for t in all_counts) / n if n else None,
            ci95=_list(
                pooled_interval(all_counts, n_boot=ctx.n_boot, seed=ctx.seed, level=ctx.level)
            ),
        ),
        note="pooled rates weigh benchmarks by their task (or run) counts; when coverage is "
        "uneven they can disagree with the balanced rate (Simpson's paradox)",
    )


def stratified_interval(
    groups: Sequence[Sequence[float]], ctx: ReportContext
) -> tuple[float, float] | None:
    """Interval of the mean over groups of each group's mean, resampling within each group."""
    groups = [g for g in groups if g]
    if not groups or all(len(g) < 2 for g in groups) or ctx.n_boot <= 0:
        return None
    import numpy as np

    reps = []
    for i, g in enumerate(groups):
        per = np.column_stack([np.asarray(g, dtype=np.float64), np.ones(len(g))])
        sums = bootstrap_sums(per, n_boot=ctx.n_boot, seed=ctx.seed + i)
        reps.append(sums[:, 0] / sums[:, 1])
    return percentile_interval(np.mean(np.vstack(reps), axis=0), ctx.level)


def task_matrix(runs: Sequence[ScoredRun], treatments: Sequence[str], multi: bool) -> TaskMatrix:
    """Task x treatment: passes and scored runs (None where a treatment has no scored run)."""
    cells: dict[str, dict[str, MatrixCell]] = {}
    for r in runs:
        if r.scored:
            cell = cells.setdefault(task_key(r, multi), {}).setdefault(
                r.treatment, MatrixCell(c=0, n=0)
            )
            cell.n += 1
            cell.c += r.outcome == "pass"
    rows = [
        MatrixRow(task=t, cells={tr: cells[t].get(tr) for tr in treatments})
        for t in sorted(cells, key=natural_key)
    ]
    return TaskMatrix(treatments=list(treatments), rows=rows)


def paired_difference(
    baseline: Sequence[ScoredRun],
    candidate: Sequence[ScoredRun],
    *,
    metric: str = "pass@k",
    k: int = 1,
    multi: bool = False,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> PairedDifference:
    """Candidate minus baseline on their shared tasks: per-task differences of the metric,
    their mean, and the task-cluster bootstrap interval (tasks resampled as pairs)."""
    a = per_task(task_counts(baseline, multi), metric, k)
    b = per_task(task_counts(candidate, multi), metric, k)
    shared = sorted(set(a) & set(b), key=natural_key)
    diffs = {t: b[t] - a[t] for t in shared}
    values = list(diffs.values())
    return PairedDifference(
        metric=metric_name(metric, k),
        n_shared=len(shared),
        only_baseline=len(set(a) - set(b)),
        only_candidate=len(set(b) - set(a)),
        baseline_rate=sum(a[t] for t in shared) / len(shared) if shared else None,
        candidate_rate=sum(b[t] for t in shared) / len(shared) if shared else None,
        diff=sum(values) / len(values) if values else None,
        ci95=_list(mean_interval(values, n_boot=n_boot, seed=seed, level=level)),
        per_task=diffs,
    )


def paired_section(
    runs: Sequence[ScoredRun],
    treatments: Sequence[str],
    ks: Sequence[int],
    ctx: ReportContext,
    multi: bool,
) -> list[PairedComparison]:
    """Each later treatment against each earlier one: pass@1 and pass^k for every k."""
    out = []
    for i, base in enumerate(treatments):
        for cand in treatments[i + 1 :]:
            a = [r for r in runs if r.treatment == base]
            b = [r for r in runs if r.treatment == cand]
            for metric, k in [("pass@k", 1), *[("pass^k", k) for k in ks if k > 1]]:
                d = paired_difference(
                    a,
                    b,
                    metric=metric,
                    k=k,
                    multi=multi,
                    n_boot=ctx.n_boot,
                    seed=ctx.seed,
                    level=ctx.level,
                )
                if not d.n_shared:
                    continue
                extra: dict[str, Any] = {}
                if ctx.labels is not None and (metric, k) == ("pass@k", 1):
                    both, alone, _ = paired_estimates(
                        a,
                        b,
                        lambda r: task_key(r, multi),
                        with_judge=ctx.labels.valid_for_ppi,
                        level=ctx.level,
                    )
                    extra = {"ppi": both, "labels_only": alone}
                out.append(
                    PairedComparison(baseline=base, candidate=cand, **d.model_dump(), **extra)
                )
    return out


def hard_gate_failures(runs: Sequence[ScoredRun]) -> list[HardGateFailure]:
    """Every analysed run that failed a hard-gate criterion."""
    return [
        HardGateFailure(
            run_id=r.run_id,
            treatment=r.treatment,
            benchmark=r.benchmark,
            task=r.task_id,
            repetition=r.repetition,
            gates=list(r.failed_hard_gates),
        )
        for r in runs
        if r.analysed and r.failed_hard_gates
    ]


# --- the report ----------------------------------------------------------------------------------


def build_report(runs: Sequence[ScoredRun], ctx: ReportContext) -> RunSetReport:
    """The whole report (render it with :mod:`judge.runsets.render`)."""
    treatments = _ordered(r.treatment for r in runs)
    benchmarks = sorted({r.benchmark for r in runs})
    multi = len(benchmarks) > 1
    ks = sorted(set(ctx.ks)) if ctx.ks else default_ks(runs, multi)
    per_treatment = {}
    for t in treatments:
        group = [r for r in runs if r.treatment == t]
        per_treatment[t] = TreatmentSection(
            **_group_fields(group, task_counts(group, multi), ks, ctx, multi),
            balanced=balanced_section(group, ctx) if multi else None,
            corrected=_correction(group, ctx, multi) if ctx.correct_for_judge else None,
            by_benchmark={
                b: group_section([r for r in group if r.benchmark == b], ks, ctx, False)
                for b in benchmarks
                if any(r.benchmark == b for r in group)
            }
            if multi
            else {},
        )
    report = RunSetReport(
        report_version=REPORT_VERSION,
        title=ctx.title,
        created_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        runset=ctx.runset,
        mode=ctx.mode,
        rubric=ctx.rubric,
        judges=ctx.judges,
        judging=ctx.judging,
        card=card_summary(ctx.card) if ctx.card is not None else None,
        rules=dict(RULES),
        params=ReportParams(
            ks=ks,
            n_boot=ctx.n_boot,
            seed=ctx.seed,
            level=ctx.level,
            correct_for_judge=ctx.correct_for_judge,
        ),
        treatments=treatments,
        benchmarks=benchmarks,
        overall=OverallCounts(**_counts(runs).model_dump(), routing=routing_section(runs)),
        per_treatment=per_treatment,
        task_matrix=task_matrix(runs, treatments, multi),
        paired=paired_section(runs, treatments, ks, ctx, multi),
        hard_gate_failures=hard_gate_failures(runs),
        unscored=[
            UnscoredRun(run_id=r.run_id, treatment=r.treatment, task=r.task_id, reason=r.reason)
            for r in runs
            if r.analysed and r.outcome is None
        ],
        notes=list(ctx.notes),
        gate=None,
        runs=list(runs),
        headline=Headline(columns=[], rows=[]),
        labels=ctx.labels,
        first_bad_decisions=(
            first_bad_decisions(runs, ctx.diagnoses) if ctx.diagnoses is not None else None
        ),
        failed_checks=failed_checks(runs, treatments),
    )
    report.headline = headline(report)
    return report


def _correction(
    group: Sequence[ScoredRun], ctx: ReportContext, multi: bool
) -> Correction | NoCorrection:
    if ctx.card is None:
        return NoCorrection(reason="no calibration card (--card) to correct with")
    if ctx.mode != "judge":
        return NoCorrection(reason="scored from gold labels: nothing to correct")
    judged_by = {r.source for r in group if r.scored and r.source.startswith("judge:")}
    if judged_by != {f"judge:{ctx.card.judge.model}"}:
        return NoCorrection(
            reason="runs were not all judged by the card's judge alone (panel or family "
            "exclusion): the card's error rates do not describe these verdicts"
        )
    return corrected_section(task_counts(group, multi), ctx.card, ctx)


def headline(report: RunSetReport) -> Headline:
    """The headline table: one row per treatment (and per treatment x benchmark when mixed)."""
    ks = list(report.params.ks)
    columns = [
        "treatment",
        "benchmark",
        "runs raw / analysed / excluded",
        "tasks",
        "pass@1 [95% CI]",
        *[f"pass^{k}" for k in ks if k > 1],
    ]
    if ks and ks[-1] > 1:
        columns.append(f"pass@{ks[-1]}")
    columns += ["unscored", "cost / success"]
    rows = []
    for t in report.treatments:
        sec = report.per_treatment[t]
        rows.append(_headline_row(t, "all", sec, ks))
        for b, bsec in sec.by_benchmark.items():
            rows.append(_headline_row(t, b, bsec, ks))
    return Headline(columns=columns, rows=rows)


def _fmt_rate(fig: MacroFigure | None, with_ci: bool) -> str:
    if fig is None or fig.value is None:
        return "undefined"
    text = f"{fig.value:.3f}"
    if with_ci and fig.ci95:
        text += f" [{fig.ci95[0]:.3f}, {fig.ci95[1]:.3f}]"
    if fig.n_omitted:
        omitted = fig.n_omitted
        text += f" ({omitted} task{'s' if omitted > 1 else ''} omitted)"
    return text


def _headline_row(t: str, b: str, sec: GroupSection, ks: Sequence[int]) -> list[str]:
    c = sec.counts
    at = {f.k: f for f in sec.macro.pass_at_k}
    hat = {f.k: f for f in sec.macro.pass_hat_k}
    row = [
        t,
        b,
        f"{c.raw} / {c.analysis} / {c.excluded}",
        str(c.tasks),
        _fmt_rate(at.get(1), True),
        *[_fmt_rate(hat.get(k), False) for k in ks if k > 1],
    ]
    if ks and ks[-1] > 1:
        row.append(_fmt_rate(at.get(ks[-1]), False))
    cost = sec.cost.per_success_usd
    row += [str(c.unscored), f"${cost:.2f}" if cost is not None else "—"]
    return row
