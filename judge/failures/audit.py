"""Silent wrong successes: a stratified sample of successes for people to review, and the rate
of wrong successes it estimates.

A success that is wrong never reaches a failure cluster (DIAGNOSIS.md section 3), so some are
drawn for review. Strata are the values of the clusters' condition features crossed with the
judge's confidence (``sure``: P(pass) at least ``confident_at``; ``unsure``; ``unjudged``).
Each stratum gets enough runs to see at least one wrong success with probability ``power``
when its rate is ``rate``: 1 - (1 - rate)^n >= power, so n = ceil(log(1 - power) / log(1 -
rate)); for 5% and 95%, log(0.05) / log(0.95) = -2.9957 / -0.051293 = 58.4, n = 59 (or all of
a stratum's successes when it has fewer). Within a stratum the runs with the smallest
``seeded_unit(seed, case_id)`` are drawn: the same seed draws the same runs, whatever order
they come in.

The estimate: with a judge score on every success, PPI++ (``calibration.ppi``) over all of them
with the reviewed runs' labels, each weighted by its stratum's inclusion probability; else (or
when every label is the same class, where PPI's interval degenerates to a point) the stratified
mean sum_h (N_h / N) (wrong_h / n_h) with a Wilson interval on Kish's effective sample size
N^2 / sum_h (N_h^2 / n_h) (equal to n with one stratum or proportional allocation).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field

from calibration.intervals import wilson
from calibration.label_plans import LabelPlan
from calibration.ppi import PPIResult, ppi_mean
from judge.base import Strict
from judge.cases import jsonl_objects
from judge.digests import seeded_unit
from judge.errors import InputError
from judge.failures.assign import assign, exposure_condition
from judge.failures.dossier import valid_runs
from judge.failures.models import Cluster, RunRecord
from judge.review import enqueue_plan, save_plan
from judge.review.planned import plan_item_id
from judge.store import Store

DETECT_RATE = 0.05
DETECT_POWER = 0.95
#: A judge P(pass) at or above this is a "sure" success.
CONFIDENT_AT = 0.9
#: The design name a queued audit's label plan carries.
AUDIT_DESIGN = "stratified"


def per_stratum(rate: float = DETECT_RATE, power: float = DETECT_POWER) -> int:
    """Runs per stratum to see at least one wrong success with probability ``power`` when a
    stratum's rate is ``rate``: ceil(log(1 - power) / log(1 - rate)) (59 for 5% and 95%)."""
    if not 0 < rate < 1 or not 0 < power < 1:
        raise InputError(f"rate {rate} and power {power} must both be in (0, 1)")
    return math.ceil(math.log(1 - power) / math.log(1 - rate))


def arithmetic(rate: float = DETECT_RATE, power: float = DETECT_POWER) -> str:
    """The sample size's arithmetic, as the plan shows it."""
    top, bottom = math.log(1 - power), math.log(1 - rate)
    return (
        f"n = ceil(log(1 - {power:g}) / log(1 - {rate:g})) = ceil({top:.4f} / {bottom:.6f}) "
        f"= ceil({top / bottom:.2f}) = {per_stratum(rate, power)} per stratum (all of a "
        f"stratum with fewer)"
    )


def confidence_band(score: float | None, confident_at: float = CONFIDENT_AT) -> str:
    """The judge-confidence part of a stratum: sure, unsure or unjudged."""
    if score is None:
        return "unjudged"
    return "sure" if score >= confident_at else "unsure"


class Stratum(Strict):
    name: str
    key: dict[str, str]
    successes: int
    drawn: int
    #: drawn / successes: each drawn run's inclusion probability.
    inclusion: float


class AuditPlan(Strict):
    """Which successes people should review, drawn by stratum."""

    seed: int
    rate: float
    power: float
    per_stratum: int
    arithmetic: str
    features: list[str]
    confident_at: float
    successes: int
    strata: list[Stratum]
    chosen: list[str]
    #: case id -> stratum name, for every success (the estimate needs each run's stratum).
    stratum_of: dict[str, str] = Field(repr=False)


def default_features(clusters: Sequence[Cluster]) -> list[str]:
    """The run features the clusters' exposure conditions are written over (never the
    critical step's ``step.*``: a success has none)."""
    return sorted({key for c in clusters for key in exposure_condition(c.condition)})


def plan_audit(
    runs: Sequence[RunRecord],
    clusters: Sequence[Cluster] = (),
    *,
    features: Sequence[str] | None = None,
    seed: int = 0,
    rate: float = DETECT_RATE,
    power: float = DETECT_POWER,
    confident_at: float = CONFIDENT_AT,
) -> AuditPlan:
    """Draw successes for review: ``per_stratum(rate, power)`` per stratum (or all).

    InputError when no valid run succeeded (nothing to audit)."""
    successes = [r for r in valid_runs(runs) if not r.failed]
    if not successes:
        raise InputError(
            "no successful run to audit",
            hint="the audit draws from valid runs that did not fail; give the whole run set",
        )
    # Default: the clusters' run features that some success has (a feature no success has
    # would only lengthen the strata's names).
    names = (
        list(features)
        if features is not None
        else [f for f in default_features(clusters) if any(f in r.features for r in successes)]
    )
    n = per_stratum(rate, power)
    groups: dict[str, list[RunRecord]] = defaultdict(list)
    keys: dict[str, dict[str, str]] = {}
    for run in successes:
        key = {f: run.features.get(f, "-") for f in names}
        key["judge"] = confidence_band(run.judge_score, confident_at)
        name = ", ".join(f"{k}={v}" for k, v in key.items())
        groups[name].append(run)
        keys[name] = key
    strata, chosen = [], []
    for name in sorted(groups):
        members = sorted(groups[name], key=lambda r: (seeded_unit(seed, r.case_id), r.case_id))
        drawn = members[:n]
        chosen += [r.case_id for r in drawn]
        strata.append(
            Stratum(
                name=name,
                key=keys[name],
                successes=len(members),
                drawn=len(drawn),
                inclusion=len(drawn) / len(members),
            )
        )
    return AuditPlan(
        seed=seed,
        rate=rate,
        power=power,
        per_stratum=n,
        arithmetic=arithmetic(rate, power),
        features=names,
        confident_at=confident_at,
        successes=len(successes),
        strata=strata,
        chosen=sorted(chosen),
        stratum_of={r.case_id: name for name, rs in groups.items() for r in rs},
    )


class StratumEstimate(Strict):
    name: str
    successes: int
    reviewed: int
    wrong: int


class AuditEstimate(Strict):
    """The estimated share of successes that are wrong, with its 95% interval."""

    rate: float
    rate_ci: list[float]
    #: "ppi++" (judge scores on every success plus the labels) or "stratified-wilson".
    method: str
    successes: int
    reviewed: int
    wrong: int
    strata: list[StratumEstimate]
    notes: list[str] = Field(default_factory=list)


def _checked_labels(plan: AuditPlan, labels: Mapping[str, bool]) -> dict[str, bool]:
    chosen = set(plan.chosen)
    unplanned = sorted(set(labels) - chosen)
    if unplanned:
        raise InputError(
            f"{len(unplanned)} labelled run(s) were not drawn by the audit, e.g. {unplanned[0]!r}",
            field="labels",
            hint="label the drawn runs only (same runs, seed and features as the plan)",
        )
    if not labels:
        raise InputError(
            "no drawn run is labelled yet", field="labels", hint="review the drawn runs first"
        )
    return dict(labels)


def _stratified(
    plan: AuditPlan, per: Sequence[StratumEstimate]
) -> tuple[float, tuple[float, float], list[str]]:
    notes = []
    covered = [s for s in per if s.reviewed]
    left = [s.name for s in per if not s.reviewed]
    if left:
        notes.append(
            f"{len(left)} stratum(s) with no reviewed run are left out of the estimate "
            f"(e.g. {left[0]!r}): review their drawn runs"
        )
    total = sum(s.successes for s in covered)
    rate = sum(s.successes / total * s.wrong / s.reviewed for s in covered)
    n_eff = total**2 / sum(s.successes**2 / s.reviewed for s in covered)
    lo, hi = wilson(min(round(rate * n_eff), round(n_eff)), round(n_eff))
    return rate, (lo, hi), notes


def estimate(
    plan: AuditPlan, runs: Sequence[RunRecord], labels: Mapping[str, bool]
) -> AuditEstimate:
    """The silent-wrong-success rate from people's labels of drawn runs (case id -> True when
    the success was wrong). Drawn runs left unlabelled lower their stratum's sample (noted);
    a label on a run the plan did not draw is an InputError (hand-picked labels bias it)."""
    given = _checked_labels(plan, labels)
    per = []
    for stratum in plan.strata:
        mine = [c for c, s in plan.stratum_of.items() if s == stratum.name and c in given]
        per.append(
            StratumEstimate(
                name=stratum.name,
                successes=stratum.successes,
                reviewed=len(mine),
                wrong=sum(1 for c in mine if given[c]),
            )
        )
    notes = []
    missing = len(plan.chosen) - len(given)
    if missing:
        notes.append(f"{missing} drawn run(s) not reviewed yet")
    successes = {r.case_id: r for r in valid_runs(runs) if not r.failed}
    reviewed, wrong = len(given), sum(given.values())
    method = "stratified-wilson"
    scored = all(successes[c].judge_score is not None for c in plan.stratum_of if c in successes)
    if scored and 0 < wrong < reviewed:
        result = _ppi(plan, per, successes, given)
        value, interval, method = result.value, result.ci95, "ppi++"
        if result.note:
            notes.append(result.note)
    else:
        if scored:
            notes.append(
                "every review gave the same label: PPI's interval would be a point, so the "
                "stratified Wilson interval is given"
            )
        value, interval, more = _stratified(plan, per)
        notes += more
    return AuditEstimate(
        rate=value,
        rate_ci=list(interval),
        method=method,
        successes=plan.successes,
        reviewed=reviewed,
        wrong=wrong,
        strata=per,
        notes=notes,
    )


def _ppi(
    plan: AuditPlan,
    per: Sequence[StratumEstimate],
    successes: Mapping[str, RunRecord],
    given: Mapping[str, bool],
) -> PPIResult:
    """PPI++ over every success: the judge's P(wrong) = 1 - P(pass), the labels, and each
    run's inclusion probability (reviewed / successes of its stratum)."""
    inclusion = {s.name: s.reviewed / s.successes for s in per}
    ids = sorted(plan.stratum_of)
    scores = [1.0 - (successes[c].judge_score or 0.0) for c in ids]
    labels = [(1 if given[c] else 0) if c in given else None for c in ids]
    probs = [max(inclusion[plan.stratum_of[c]], 1e-9) for c in ids]
    return ppi_mean(scores, labels, run_ids=ids, probs=probs, population="runs")


def confirmed_wrong(runs: Sequence[RunRecord], labels: Mapping[str, bool]) -> list[RunRecord]:
    """The successes people found wrong, as failed runs (their symptom says how they were
    found when none was recorded; their first bad decision is not diagnosed yet)."""
    return [
        r.model_copy(
            update={"failed": True, "symptom": r.symptom or "silent wrong success (audit)"}
        )
        for r in runs
        if labels.get(r.case_id) and not r.failed
    ]


def join_clusters(
    clusters: Sequence[Cluster], confirmed: Sequence[RunRecord]
) -> tuple[list[Cluster], list[str]]:
    """Each confirmed wrong success joins the named cluster whose condition it meets, as later
    failures do (:func:`judge.failures.assign.assign`: the most specific condition, then the
    cluster id); the clusters with their new members (a lineage line says how many came from
    the audit), and the case ids no cluster took."""
    home = assign(confirmed, clusters)
    joined = []
    for cluster in clusters:
        added = [c for c, k in home.items() if k == cluster.cluster_id and c not in cluster.members]
        if added:
            cluster = cluster.model_copy(
                update={
                    "members": [*cluster.members, *added],
                    "lineage": [
                        *cluster.lineage,
                        f"audit: +{len(added)} confirmed silent wrong successes",
                    ],
                }
            )
        joined.append(cluster)
    return joined, [r.case_id for r in confirmed if r.case_id not in home]


# --- the review queue ---------------------------------------------------------------------------


def queue_audit(store: Store, plan: AuditPlan, *, source: str) -> tuple[str, int, list[str]]:
    """Keep the draw as a label plan and queue one blind review item per drawn run whose case
    is stored; the plan id, how many items are new, and the drawn case ids not stored."""
    ids = sorted(plan.stratum_of)
    inclusion = {s.name: s.inclusion for s in plan.strata}
    label_plan = LabelPlan(
        run_ids=tuple(ids),
        probs=tuple(inclusion[plan.stratum_of[c]] for c in ids),
        chosen=tuple(plan.chosen),
        seed=plan.seed,
        budget=len(plan.chosen),
        design=AUDIT_DESIGN,
    )
    stored, _ = save_plan(
        store, label_plan, runset=f"audit:{source}", scores={"strata": plan.features}
    )
    cases = store.get_cases(plan.chosen)
    new = enqueue_plan(store, stored, [cases[c] for c in plan.chosen if c in cases])
    return stored.id, new, [c for c in plan.chosen if c not in cases]


def queue_labels(store: Store, plan_id: str, plan: AuditPlan) -> dict[str, bool]:
    """People's final labels of a queued audit's items: case id -> True when they said
    ``fail`` (the success was wrong); items not finished are left out."""
    found: dict[str, bool] = {}
    for case_id in plan.chosen:
        item = store.review_item(plan_item_id(plan_id, case_id))
        if item is not None and item.final_label in ("pass", "fail"):
            found[case_id] = item.final_label == "fail"
    return found


def read_labels(path: str | Path) -> dict[str, bool]:
    """Audit labels from a JSONL file: ``{"case_id": ..., "label": "pass"|"fail"}`` a line
    (``fail``: the success was wrong)."""
    found: dict[str, bool] = {}
    for number, record in jsonl_objects(path):
        if record.get("label") not in ("pass", "fail"):
            raise InputError(
                "expected {'case_id': ..., 'label': 'pass' or 'fail'}",
                file=str(path),
                line=number,
                field="label",
            )
        found[str(record.get("case_id"))] = record["label"] == "fail"
    return found
