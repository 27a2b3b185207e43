"""The regression gate: may the candidate treatment ship in place of the baseline?

Three checks, in order, on the tasks both treatments ran (scored runs only):

1. **Hard gates.** A hard-gate criterion that some candidate run fails on a task where no
   baseline run failed it is a new failure: the decision is ``block``, whatever the rates say.
2. **Non-inferiority on the primary rate** (macro pass@1 over shared tasks, by default). The
   per-task differences (candidate minus baseline) are averaged and a paired task-cluster
   bootstrap gives the two-sided ``level`` interval. With human labels that are a label plan's
   sample (``judge score --labels``), the difference and its interval of pass@1 are PPI++'s
   instead (judge on every run plus the labels, :mod:`judge.runsets.estimates`): an interval
   that holds whatever the judge's errors. ``ship`` only when its lower bound is above
   ``-margin``; ``block`` when its upper bound is below ``-margin`` (a regression larger than the
   margin); otherwise, or with fewer than ``min_tasks`` shared tasks, ``inconclusive``. Too
   little data is never "no regression".
3. **Rubric dimensions.** Each criterion's per-task pass rate difference; those that moved by
   more than ``tolerance`` are listed (drops as warnings). They inform; they do not decide.

The result (:class:`~judge.runsets.models.GateResult`, a section of the report) says what it
cannot support (superiority, runs left out, uncalibrated verdicts, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

from judge.errors import InputError
from judge.runsets.estimates import paired_estimates, paired_rates
from judge.runsets.models import (
    Decision,
    DimensionShift,
    GateResult,
    HardGateCheck,
    NewGateFailure,
    NonInferiority,
    PairedDifference,
    RubricCriterion,
    RunSetReport,
)
from judge.runsets.report import natural_key, paired_difference, task_key
from judge.runsets.scoring import ScoredRun

DEFAULT_MIN_TASKS = 10
DEFAULT_TOLERANCE = 0.05


def _judged(run: ScoredRun) -> bool:
    """The run's outcome came from a judge or a panel (not from a gold label or a rule)."""
    return run.source.startswith(("judge:", "panel:"))


def _hard_gates(
    base: Sequence[ScoredRun],
    cand: Sequence[ScoredRun],
    hard: Sequence[str],
    multi: bool,
    shared: set[str],
) -> HardGateCheck:
    runs = (*base, *cand)
    if not any(_judged(r) for r in runs) and any(r.source == "gold" for r in runs):
        # No rubric at all: saying "the rubric has no hard-gate criteria" would be untrue.
        return HardGateCheck(
            checked=False,
            new_failures=[],
            summary="not checked: the run set was scored from gold labels, "
            "so there are no judge criteria",
        )
    if not hard:
        return HardGateCheck(
            checked=False,
            new_failures=[],
            summary="not checked: the rubric has no hard-gate criteria",
        )
    judged = [r for r in runs if r.scored and r.criteria]
    if not judged:
        return HardGateCheck(
            checked=False,
            new_failures=[],
            summary="not checked: no run carries criterion verdicts (gold "
            "labels or a rubric without criteria)",
        )
    failed_base: dict[str, set[str]] = {}
    for r in base:
        if r.scored:
            failed_base.setdefault(task_key(r, multi), set()).update(
                g for g in r.failed_hard_gates if g in hard
            )
    new: list[NewGateFailure] = []
    for r in cand:
        t = task_key(r, multi)
        if not r.scored or t not in shared:
            continue
        fresh = [g for g in r.failed_hard_gates if g in hard and g not in failed_base.get(t, ())]
        if fresh:
            new.append(NewGateFailure(task=t, run_id=r.run_id, gates=fresh))
    summary = (
        f"{len(new)} new hard-gate failure(s) in the candidate: "
        + "; ".join(f"{n.task} ({', '.join(n.gates)}, run {n.run_id})" for n in new[:10])
        if new
        else f"no new hard-gate failure on {len(shared)} shared tasks"
    )
    return HardGateCheck(checked=True, new_failures=new, summary=summary)


def _non_inferiority(d: PairedDifference, margin: float, min_tasks: int) -> tuple[Decision, str]:
    ci = d.ci95
    n = d.n_shared
    if n < min_tasks:
        return "inconclusive", (
            f"only {n} shared task(s); at least {min_tasks} are needed "
            "before an interval can rule a regression in or out"
        )
    if ci is None:
        return "inconclusive", "no interval could be computed"
    lo, hi = ci
    if lo > -margin:
        return "ship", (
            f"lower bound {lo:+.3f} > -{margin}: any regression is smaller than the margin"
        )
    if hi < -margin:
        return "block", (
            f"upper bound {hi:+.3f} < -{margin}: the candidate is worse by more than the margin"
        )
    return "inconclusive", (
        f"the interval [{lo:+.3f}, {hi:+.3f}] straddles -{margin}: a "
        "regression larger than the margin is neither shown nor ruled out"
    )


def _dimensions(
    base: Sequence[ScoredRun],
    cand: Sequence[ScoredRun],
    criteria: Sequence[RubricCriterion],
    tolerance: float,
    multi: bool,
    shared: set[str],
) -> list[DimensionShift]:
    out = []
    for spec in criteria:
        cid = spec.id
        rates = []
        for runs in (base, cand):
            per: dict[str, list[int]] = {}
            for r in runs:
                t = task_key(r, multi)
                label = r.criteria.get(cid)
                if r.scored and t in shared and label in ("pass", "fail"):
                    per.setdefault(t, []).append(label == "pass")
            rates.append({t: sum(v) / len(v) for t, v in per.items()})
        both = sorted(set(rates[0]) & set(rates[1]), key=natural_key)
        if not both:
            continue
        diff = sum(rates[1][t] - rates[0][t] for t in both) / len(both)
        out.append(
            DimensionShift(
                id=cid,
                hard_gate=spec.hard_gate,
                n_tasks=len(both),
                baseline=sum(rates[0][t] for t in both) / len(both),
                candidate=sum(rates[1][t] for t in both) / len(both),
                diff=diff,
                moved=abs(diff) > tolerance,
            )
        )
    return out


def evaluate_gate(
    runs: Sequence[ScoredRun],
    *,
    baseline: str,
    candidate: str,
    margin: float,
    criteria: Sequence[RubricCriterion] = (),
    tolerance: float = DEFAULT_TOLERANCE,
    min_tasks: int = DEFAULT_MIN_TASKS,
    metric: str = "pass@k",
    k: int = 1,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    calibrated: bool = False,
    labels: bool = False,
) -> GateResult:
    """The gate's decision, its evidence and what it cannot support.

    ``labels``: the runs carry human labels that are a label plan's sample; pass@1's difference
    and interval are then PPI++'s (falling back to the bootstrap, with a warning, when it
    cannot be estimated)."""
    _check_request(runs, baseline=baseline, candidate=candidate, margin=margin)
    multi = len({r.benchmark for r in runs}) > 1
    base = [r for r in runs if r.treatment == baseline]
    cand = [r for r in runs if r.treatment == candidate]
    d, method, label_warnings, ppi_used = _difference(
        base,
        cand,
        metric=metric,
        k=k,
        multi=multi,
        n_boot=n_boot,
        seed=seed,
        level=level,
        labels=labels,
    )
    shared = set(d.per_task)
    hard = [c.id for c in criteria if c.hard_gate]
    gates = _hard_gates(base, cand, hard, multi, shared)
    ni_decision, ni_summary = _non_inferiority(d, margin, min_tasks)
    if gates.new_failures:
        decision: Decision = "block"
        reason = "a hard gate the baseline passed fails in the candidate"
    else:
        decision, reason = ni_decision, ni_summary
    dims = _dimensions(base, cand, criteria, tolerance, multi, shared)
    warnings = [
        f"{x.id} dropped by {-x.diff:.3f} (> {tolerance})" for x in dims if x.moved and x.diff < 0
    ] + label_warnings
    return GateResult(
        decision=decision,
        reason=reason,
        baseline=baseline,
        candidate=candidate,
        margin=margin,
        tolerance=tolerance,
        min_tasks=min_tasks,
        level=level,
        hard_gates=gates,
        non_inferiority=NonInferiority(
            metric=d.metric,
            n_shared=d.n_shared,
            baseline=d.baseline_rate,
            candidate=d.candidate_rate,
            diff=d.diff,
            ci95=d.ci95,
            decision=ni_decision,
            summary=ni_summary,
            method=method,
        ),
        dimensions=dims,
        warnings=warnings,
        cannot_support=_cannot_support(decision, d, base, cand, gates, calibrated, ppi_used),
    )


def _check_request(
    runs: Sequence[ScoredRun], *, baseline: str, candidate: str, margin: float
) -> None:
    """Refuse a negative margin and a baseline or candidate the runs do not have."""
    if margin < 0:
        raise InputError(f"the margin must be >= 0, got {margin}", field="margin")
    treatments = {r.treatment for r in runs}
    for name, value in (("baseline", baseline), ("candidate", candidate)):
        if value not in treatments:
            raise InputError(
                f"no treatment {value!r} in the runs",
                field=name,
                hint=f"treatments: {', '.join(sorted(treatments))}",
            )


def _difference(
    base: Sequence[ScoredRun],
    cand: Sequence[ScoredRun],
    *,
    metric: str,
    k: int,
    multi: bool,
    n_boot: int,
    seed: int,
    level: float,
    labels: bool,
) -> tuple[PairedDifference, str, list[str], bool]:
    """The paired difference candidate - baseline, how it was estimated, the warnings of the
    labels, and whether PPI++ made it (``labels``, for pass@1) instead of the bootstrap."""
    d = paired_difference(
        base, cand, metric=metric, k=k, multi=multi, n_boot=n_boot, seed=seed, level=level
    )
    method = (
        f"paired task-cluster bootstrap ({n_boot} resamples, seed {seed}); "
        f"two-sided {level:.0%} interval of the mean per-task difference"
    )
    if labels and (metric, k) == ("pass@k", 1):
        return _with_ppi(d, method, base, cand, multi, level)
    return d, method, [], False


def _with_ppi(
    d: PairedDifference,
    method: str,
    base: Sequence[ScoredRun],
    cand: Sequence[ScoredRun],
    multi: bool,
    level: float,
) -> tuple[PairedDifference, str, list[str], bool]:
    """The paired difference with PPI++'s value, interval and per-treatment rates (the
    judge's per-task differences kept for the shared-task count), or unchanged with a
    warning when PPI++ cannot estimate it."""

    def task_of(r: ScoredRun) -> str:
        return task_key(r, multi)

    estimate, _, result = paired_estimates(base, cand, task_of, with_judge=True, level=level)
    if result is None or estimate is None or estimate.value is None:
        why = estimate.note if estimate is not None else "not estimable"
        return (
            d,
            method,
            [
                f"human labels given, but PPI++ could not estimate the difference "
                f"({why}): the interval is the judge's bootstrap"
            ],
            False,
        )
    b_rate, c_rate = paired_rates(base, cand, task_of, result.lam, level=level)
    updated = d.model_copy(
        update={
            "diff": estimate.value,
            "ci95": estimate.ci95,
            "baseline_rate": b_rate,
            "candidate_rate": c_rate,
        }
    )
    text = (
        f"PPI++ (judge on all {result.n_runs} runs of the {result.n_tasks} shared tasks + "
        f"{estimate.n_labels} human labels of a label plan, lambda {result.lam:.2f}); "
        f"two-sided {level:.0%} Student-t interval, cluster-robust over tasks "
        f"({estimate.effective_labels or 0:.1f} effective labels)"
    )
    return updated, text, [], True


def _cannot_support(
    decision: Decision,
    d: PairedDifference,
    base: Sequence[ScoredRun],
    cand: Sequence[ScoredRun],
    gates: HardGateCheck,
    calibrated: bool,
    ppi: bool = False,
) -> list[str]:
    out = []
    if decision == "ship":
        out.append("that the candidate is better: non-inferiority within the margin only")
    if decision == "inconclusive":
        out.append("'no regression': the data cannot rule one out")
    if d.only_baseline or d.only_candidate:
        out.append(
            f"anything about the {d.only_baseline + d.only_candidate} task(s) run "
            "by only one treatment (left out)"
        )
    unscored = sum(r.analysed and r.outcome is None for r in (*base, *cand))
    excluded = sum(not r.analysed for r in (*base, *cand))
    if unscored or excluded:
        out.append(
            f"the {unscored} unscored and {excluded} excluded run(s): they are not in "
            "the comparison"
        )
    review = sum(r.analysed and r.route == "review" for r in (*base, *cand))
    if ppi:
        # PPI++ corrects the judge's errors with the labels; what it cannot see are the
        # reviewers' own errors.
        out.append("labelling mistakes: PPI++ takes the human labels as the truth")
    elif review:
        out.append(f"the {review} verdict(s) still awaiting people: they count as the judge said")
    if any(r.route == "uncalibrated" for r in (*base, *cand)) and not calibrated and not ppi:
        out.append(
            "the judge's own error: its verdicts are uncalibrated (no card), and its "
            "errors are not in the interval"
        )
    if not gates.checked:
        out.append(f"safety on hard gates: {gates.summary}")
    out.append("other tasks, benchmarks or conditions than the shared tasks compared here")
    return out


def gate_from_report(
    report: RunSetReport,
    *,
    baseline: str,
    candidate: str,
    margin: float,
    tolerance: float = DEFAULT_TOLERANCE,
    min_tasks: int = DEFAULT_MIN_TASKS,
    metric: str = "pass@k",
    k: int = 1,
    use_labels: bool = True,
) -> GateResult:
    """Evaluate the gate on a report (its runs, rubric criteria and bootstrap params). With
    human labels valid for PPI (and ``use_labels``), pass@1's interval is PPI++'s; labels that
    are not valid for PPI leave the judge's interval, with a warning."""
    params = report.params
    info = report.labels
    valid = bool(use_labels and info is not None and info.valid_for_ppi)
    result = evaluate_gate(
        report.runs,
        baseline=baseline,
        candidate=candidate,
        margin=margin,
        criteria=report.rubric.criteria if report.rubric is not None else (),
        tolerance=tolerance,
        min_tasks=min_tasks,
        metric=metric,
        k=k,
        n_boot=params.n_boot,
        seed=params.seed,
        level=params.level,
        calibrated=report.card is not None,
        labels=valid,
    )
    if use_labels and info is not None and not info.valid_for_ppi:
        result.warnings.append(
            f"the human labels are not valid for PPI ({info.reason}): the "
            "interval is the judge's bootstrap"
        )
    return result
