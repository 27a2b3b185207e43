"""pass@1 from human labels, alone and with the judge (PPI++), for the report and the gate.

The estimators are :mod:`calibration.ppi`'s; this module only says which runs go in and with
what score, label and inclusion probability (CALIBRATION_RESULTS.md section 7 measures them):

- The population is a group's analysis set (its runs not excluded by a rule), and the estimand
  the report's pass@1: the macro average over tasks of each task's pass rate. Unlike the judge's
  own figure, which leaves unscored runs out, runs the judge gave no verdict stay in.
- A run's judge score is :attr:`ScoredRun.judge_score` (P(pass) pooled over prompt variants,
  else the verdict); a run without one gets :data:`NEUTRAL_SCORE` (no information, which PPI++
  tolerates: it stays unbiased whatever the scores).
- A person's label counts as observed with the run's inclusion probability under the label
  plan. A run a declared rule decided (a timeout: a failure) is observed with certainty: label
  fail, probability 1, judge score 0.
- Intervals respect task clustering (``population="tasks"``); 95% Student t, as calibration.ppi.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from calibration.ppi import Population, PPIResult, labels_only, ppi_difference, ppi_mean
from judge.errors import InputError
from judge.runsets.models import GroupSection, LabelEstimate, RunSetReport
from judge.runsets.scoring import ScoredRun

#: The judge score of an analysed run the judge left without a usable verdict.
NEUTRAL_SCORE = 0.5
#: The metric the label figures are keyed by in report.json.
METRIC = "pass@1"
#: calibration.ppi's population used throughout (cluster-robust over tasks).
POPULATION: Population = "tasks"
METHOD = (
    "PPI++ (Angelopoulos et al. 2023): the judge's score on every analysed run plus human labels "
    "on a random sample, inverse-probability weighted, lambda tuned to minimise the variance "
    "(0 = labels only); 95% Student-t intervals cluster-robust over tasks (calibration/ppi.py). "
    "Runs decided by a rule count as observed failures; runs the judge left unscored keep the "
    f"neutral score {NEUTRAL_SCORE} and stay in the estimate."
)

TaskOf = Callable[[ScoredRun], str]


@dataclass(frozen=True)
class Inputs:
    """One row per analysed run: what calibration.ppi takes."""

    run_ids: list[str]
    scores: list[float]
    labels: list[float | None]
    probs: list[float]
    tasks: list[str]
    treatments: list[str]
    #: Human labels among them (rule-decided runs not counted).
    n_human: int


def _decided_by_rule(run: ScoredRun) -> bool:
    return run.route == "rule" and run.outcome in ("pass", "fail")


def inputs(runs: Sequence[ScoredRun], task_of: TaskOf) -> Inputs:
    """The analysed runs of ``runs`` as calibration.ppi's inputs. A labelled run without an
    inclusion probability is an error (the report sets one for every run with labels)."""
    ids, scores, labels, probs, tasks, treatments = [], [], [], [], [], []
    n_human = 0
    for r in runs:
        if not r.analysed:
            continue
        label: float | None = None
        prob = r.label_prob
        if _decided_by_rule(r):
            # Observed with certainty; the score is the outcome (nothing left to predict).
            label = score = float(r.outcome == "pass")
            prob = 1.0
        else:
            score = r.judge_score if r.judge_score is not None else NEUTRAL_SCORE
            if r.label is not None:
                label = float(r.label == "pass")
                n_human += 1
        if prob is None:
            if label is not None:
                raise InputError(
                    f"run {r.run_id} is labelled but has no inclusion probability",
                    field="label_prob",
                )
            prob = 1.0  # unlabelled: its probability does not enter the estimate
        ids.append(r.run_id)
        scores.append(score)
        labels.append(label)
        probs.append(prob)
        tasks.append(task_of(r))
        treatments.append(r.treatment)
    return Inputs(ids, scores, labels, probs, tasks, treatments, n_human)


def _estimate(result: PPIResult, n_human: int, *, tuned: bool) -> LabelEstimate:
    effective = None
    if tuned:
        effective = (
            n_human * (result.se_labels_only / result.se) ** 2
            if result.se > 0
            else (float("inf") if result.se_labels_only > 0 else float(n_human))
        )
    return LabelEstimate(
        value=result.value,
        ci95=list(result.ci95),
        n_labels=n_human,
        se=result.se,
        method=result.method,
        lam=abs(result.lam),
        effective_labels=effective,
        labelled_units=result.df + 1,
        note=result.note,
    )


def _missing(n_human: int, reason: str) -> LabelEstimate:
    return LabelEstimate(value=None, ci95=None, n_labels=n_human, note=reason)


def _clustered(x: Inputs, level: float) -> dict[str, Any]:
    """The keywords every one-group estimator of calibration.ppi takes from ``x``: tasks,
    runs, inclusion probabilities, the population and the level."""
    return {
        "task_ids": x.tasks,
        "run_ids": x.run_ids,
        "probs": x.probs,
        "population": POPULATION,
        "level": level,
    }


def group_estimates(
    runs: Sequence[ScoredRun], task_of: TaskOf, *, with_judge: bool, level: float = 0.95
) -> tuple[LabelEstimate | None, LabelEstimate]:
    """(PPI++, labels only) for pass@1 of one group; PPI++ None when ``with_judge`` is False
    (labels not valid for PPI). A figure that cannot be estimated has value None and a note."""
    x = inputs(runs, task_of)
    if x.n_human == 0:
        reason = "no human label in this group"
        return (_missing(0, reason) if with_judge else None), _missing(0, reason)
    try:
        alone = labels_only(x.labels, **_clustered(x, level))
        both = ppi_mean(x.scores, x.labels, **_clustered(x, level)) if with_judge else None
    except InputError as exc:
        return (_missing(x.n_human, exc.reason) if with_judge else None), _missing(
            x.n_human, exc.reason
        )
    return (
        _estimate(both, x.n_human, tuned=True) if both is not None else None,
        _estimate(alone, x.n_human, tuned=False),
    )


def paired_estimates(
    baseline: Sequence[ScoredRun],
    candidate: Sequence[ScoredRun],
    task_of: TaskOf,
    *,
    with_judge: bool,
    level: float = 0.95,
) -> tuple[LabelEstimate | None, LabelEstimate, PPIResult | None]:
    """(PPI++, labels only) for pass@1(candidate) - pass@1(baseline) on their shared tasks,
    and the PPI++ result itself (None when not computed): calibration.ppi.ppi_difference, one
    lambda for both treatments, a task's runs of both summed before squaring (paired)."""
    base = baseline[0].treatment if baseline else ""
    cand = candidate[0].treatment if candidate else ""
    x = inputs([*baseline, *candidate], task_of)
    shared = {t for t, tr in zip(x.tasks, x.treatments, strict=True) if tr == base} & {
        t for t, tr in zip(x.tasks, x.treatments, strict=True) if tr == cand
    }
    humans = {
        tr: sum(
            1
            for r in runs
            if r.analysed
            and r.label is not None
            and not _decided_by_rule(r)
            and task_of(r) in shared
        )
        for tr, runs in ((base, baseline), (cand, candidate))
    }
    n_human = sum(humans.values())
    lacking = [tr for tr, n in humans.items() if n == 0]
    reason = None
    both: PPIResult | None = None
    alone: PPIResult | None = None
    if lacking:
        reason = (
            f"no human label on a shared task of treatment {lacking[0]!r}: both "
            "treatments need some"
        )
    else:
        difference = partial(
            ppi_difference,
            x.scores,
            x.labels,
            x.treatments,
            x.tasks,
            first=cand,
            second=base,
            run_ids=x.run_ids,
            probs=x.probs,
            population=POPULATION,
            level=level,
        )
        try:
            alone = difference(lam=0.0)
            if with_judge:
                both = difference()
        except InputError as exc:
            reason, alone, both = exc.reason, None, None
    if alone is None:
        why = reason or "not estimable"
        return (_missing(n_human, why) if with_judge else None), _missing(n_human, why), None
    return (
        _estimate(both, n_human, tuned=True) if both is not None else None,
        _estimate(alone, n_human, tuned=False),
        both,
    )


def paired_rates(
    baseline: Sequence[ScoredRun],
    candidate: Sequence[ScoredRun],
    task_of: TaskOf,
    lam: float,
    *,
    level: float = 0.95,
) -> tuple[float, float]:
    """Each treatment's PPI pass@1 on the shared tasks at the paired difference's ``lam``: with
    one lambda the two are exactly the terms of the difference (candidate - baseline = diff,
    before clipping)."""
    xb, xc = inputs(baseline, task_of), inputs(candidate, task_of)
    shared = set(xb.tasks) & set(xc.tasks)
    out = []
    for x in (xb, xc):
        keep = [i for i, t in enumerate(x.tasks) if t in shared]
        result = ppi_mean(
            [x.scores[i] for i in keep],
            [x.labels[i] for i in keep],
            task_ids=[x.tasks[i] for i in keep],
            run_ids=[x.run_ids[i] for i in keep],
            probs=[x.probs[i] for i in keep],
            lam=lam,
            population=POPULATION,
            level=level,
        )
        out.append(result.value)
    return out[0], out[1]


@dataclass(frozen=True)
class ComparedRow:
    """One estimand of a report with labels: the judge's figure beside labels only and PPI++."""

    name: str
    judge_value: float | None
    judge_ci: list[float] | None
    labels_only: LabelEstimate
    ppi: LabelEstimate | None
    difference: bool = False


def compared_rows(report: RunSetReport) -> list[ComparedRow]:
    """pass@1 per treatment (and per benchmark) and the paired differences, each with its
    three estimates, in the report's order; empty without labels."""
    rows: list[ComparedRow] = []
    if report.labels is None:
        return rows
    for t in report.treatments:
        sec = report.per_treatment[t]
        groups: list[tuple[str, GroupSection]] = [(f"{t} {METRIC}", sec)]
        groups += [(f"{t} / {b} {METRIC}", bsec) for b, bsec in sec.by_benchmark.items()]
        for name, g in groups:
            at1 = next((f for f in g.macro.pass_at_k if f.k == 1), None)
            if g.labels_only is None:
                continue
            rows.append(
                ComparedRow(
                    name=name,
                    judge_value=at1.value if at1 else None,
                    judge_ci=at1.ci95 if at1 else None,
                    labels_only=g.labels_only[METRIC],
                    ppi=g.ppi[METRIC] if g.ppi else None,
                )
            )
    for p in report.paired:
        if p.labels_only is not None:
            rows.append(
                ComparedRow(
                    name=f"{p.candidate} - {p.baseline} {p.metric}",
                    judge_value=p.diff,
                    judge_ci=p.ci95,
                    labels_only=p.labels_only,
                    ppi=p.ppi,
                    difference=True,
                )
            )
    return rows
