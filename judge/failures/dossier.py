"""A cluster's dossier: who is exposed, how often they fail, what it costs, what supports it.

Exposure comes first (DIAGNOSIS.md section 3): a run is *exposed* to a cluster when the
cluster's condition holds on its run features (task and trace fields every run has, not the
critical step's), failed or not; the cluster's members (failed runs assigned to it) count as
exposed even if a feature is missing (:func:`judge.failures.assign.exposure`). The failure
rate is failures / exposed, with a Wilson interval, and the trend compares that rate across
run sets (in ``order``, then name): a cluster whose failure count shrinks because fewer runs
meet its condition (traffic moved) shows an unchanged rate, and the trend says so. Runs the validity
filter excluded (``RunRecord.excluded``: parse or infra errors, invalid tasks) count nowhere.

What was not recorded is written ``not recorded``, never a zero: cost after the first bad
decision, counterfactual replays, a hypothesis.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from calibration.intervals import wilson
from judge.base import Strict
from judge.cases import jsonl_objects, validation_error
from judge.errors import InputError, first_error
from judge.failures.assign import exposure
from judge.failures.models import Cluster, RunRecord

NOT_RECORDED: Literal["not recorded"] = "not recorded"
NotRecorded = Literal["not recorded"]
#: Effects that make a failure severe: they count as irreversible in the impact and trigger
#: the priority's hard override (judge/failures/harm.yaml says which effects override).
SEVERE_EFFECTS = ("irreversible", "data_loss", "safety")
#: Repetitions an eval family asks for (its ship gate is pass^k over them).
FAMILY_REPETITIONS = 3
#: How many counterexample case ids the dossier lists (the count is always complete).
COUNTEREXAMPLES_SHOWN = 20


def task_of(run: RunRecord) -> str:
    """The task a run attempted; its case id when the task is not recorded."""
    return run.task_id or run.case_id


class Rate(Strict):
    """Failures among exposed runs and the 95% Wilson interval of the rate."""

    exposed: int
    failures: int
    #: None when no run is exposed (no rate, not a zero rate).
    rate: float | None
    rate_ci: list[float]

    @classmethod
    def of(cls, failures: int, exposed: int) -> Rate:
        lo, hi = wilson(failures, exposed)
        rate = failures / exposed if exposed else None
        return cls(exposed=exposed, failures=failures, rate=rate, rate_ci=[lo, hi])


class TrendPoint(Rate):
    """One run set's exposure and failures, and the share of its valid runs exposed."""

    run_set: str
    order: int
    runs: int
    exposure_share: float | None


class Trend(Strict):
    """The failure rate across run sets, exposure-normalised."""

    points: list[TrendPoint]
    #: Last minus first rate, in percentage points (None with fewer than two run sets).
    rate_change_pp: float | None
    failures_change: int | None
    exposed_change: int | None
    reading: str


class Population(Strict):
    exposed_runs: int
    failures: int
    rate: float | None
    rate_ci: list[float]
    members: int
    trend: Trend


class Impact(Strict):
    #: Distinct tasks among the failures (a task's case id when its task is not recorded).
    task_failures: int
    failed_runs: int
    #: Failures with each recorded effect.
    effects: dict[str, int]
    duplicate_effects: int
    #: Failures with an irreversible, data-loss or safety effect.
    irreversible_effects: int
    cost_after_fbd_usd: float | NotRecorded
    #: How many failures recorded a cost after the first bad decision ("12 of 37").
    cost_after_fbd_recorded: str


class Evidence(Strict):
    #: Failures whose first bad decision a person (or a replay) confirmed.
    confirmed_fbd: int
    #: Failures with a diagnosed but unconfirmed first bad decision.
    tentative_fbd: int
    #: Failures with no first-bad-decision report at all.
    undiagnosed: int
    #: Replays recovered / replays run, over the failures that recorded any.
    counterfactual_recovered: str


class EvalFamily(Strict):
    """The member tasks to re-run and the ship gate they suggest."""

    name: str
    repetitions: int
    tasks: list[str]
    high_risk_tasks: list[str]
    ship_gate: str


class Counterexamples(Strict):
    """Exposed runs that succeeded: the condition held and the run did not fail."""

    count: int
    case_ids: list[str]


class Dossier(Strict):
    cluster_id: str
    definition: str
    exclusions: list[str]
    condition: dict[str, str]
    population: Population
    impact: Impact
    evidence: Evidence
    owners: list[str]
    hypothesis: str
    eval_family: EvalFamily
    counterexamples: Counterexamples
    lineage: list[str] = Field(default_factory=list)


def valid_runs(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs the validity filter kept."""
    return [r for r in runs if r.excluded is None]


def _trend_reading(points: Sequence[TrendPoint]) -> str:
    if len(points) < 2:
        return "one run set: no trend"
    first, last = points[0], points[-1]
    if first.rate is None or last.rate is None:
        return "a run set with no exposed run: no rate to compare"
    overlap = first.rate_ci[0] <= last.rate_ci[1] and last.rate_ci[0] <= first.rate_ci[1]
    moved = f"{first.rate:.1%} -> {last.rate:.1%} of exposed runs"
    if not overlap:
        word = "rose" if last.rate > first.rate else "fell"
        return f"the failure rate {word} ({moved}; the 95% intervals do not overlap)"
    text = f"the failure rate is unchanged within 95% intervals ({moved})"
    if last.failures < first.failures and last.exposed < first.exposed:
        text += (
            f"; failures fell {first.failures} -> {last.failures} because exposed runs fell "
            f"{first.exposed} -> {last.exposed}: traffic moved, not a fix"
        )
    elif last.failures > first.failures and last.exposed > first.exposed:
        text += (
            f"; failures rose {first.failures} -> {last.failures} with exposed runs "
            f"{first.exposed} -> {last.exposed}: more traffic, not a regression"
        )
    return text


def trend(cluster: Cluster, runs: Sequence[RunRecord]) -> Trend:
    """The exposure-normalised failure rate of each run set, in (order, run set) order."""
    exposed_runs, failed = exposure(cluster, runs)
    sets = sorted({(r.order, r.run_set) for r in valid_runs(runs)})
    points = []
    for order, name in sets:
        total = sum(1 for r in valid_runs(runs) if (r.order, r.run_set) == (order, name))
        here = [r for r in exposed_runs if (r.order, r.run_set) == (order, name)]
        k = sum(1 for r in here if r.case_id in failed)
        rate = Rate.of(k, len(here))
        points.append(
            TrendPoint(
                **rate.model_dump(),
                run_set=name,
                order=order,
                runs=total,
                exposure_share=len(here) / total if total else None,
            )
        )
    two = len(points) >= 2
    first, last = (points[0], points[-1]) if two else (None, None)
    change = (
        round(100 * (last.rate - first.rate), 2)
        if first is not None
        and last is not None
        and first.rate is not None
        and last.rate is not None
        else None
    )
    return Trend(
        points=points,
        rate_change_pp=change,
        failures_change=last.failures - first.failures if first and last else None,
        exposed_change=last.exposed - first.exposed if first and last else None,
        reading=_trend_reading(points),
    )


def impact(failures: Sequence[RunRecord]) -> Impact:
    """What the failures cost: tasks failed, effects, cost spent after the first bad decision."""
    effects: Counter[str] = Counter()
    for run in failures:
        effects.update(set(run.effects))
    costs = [r.cost_after_fbd_usd for r in failures if r.cost_after_fbd_usd is not None]
    return Impact(
        task_failures=len({task_of(r) for r in failures}),
        failed_runs=len(failures),
        effects=dict(sorted(effects.items())),
        duplicate_effects=effects["duplicate"],
        irreversible_effects=sum(1 for r in failures if set(r.effects) & set(SEVERE_EFFECTS)),
        cost_after_fbd_usd=round(sum(costs), 6) if costs else NOT_RECORDED,
        cost_after_fbd_recorded=f"{len(costs)} of {len(failures)}" if costs else NOT_RECORDED,
    )


def evidence(failures: Sequence[RunRecord]) -> Evidence:
    """How well the failures' first bad decisions are supported."""
    confirmed = sum(1 for r in failures if r.fbd_confirmed)
    diagnosed = sum(1 for r in failures if not r.fbd_confirmed and r.critical_cause is not None)
    replayed = [r for r in failures if r.replays]
    recovered = (
        f"{sum(r.replays_recovered or 0 for r in replayed)}/{sum(r.replays or 0 for r in replayed)}"
        if replayed
        else NOT_RECORDED
    )
    return Evidence(
        confirmed_fbd=confirmed,
        tentative_fbd=diagnosed,
        undiagnosed=len(failures) - confirmed - diagnosed,
        counterfactual_recovered=recovered,
    )


def _high_risk(run: RunRecord) -> bool:
    return run.features.get("risk") == "high" or bool(set(run.effects) & set(SEVERE_EFFECTS))


def eval_family(
    cluster: Cluster, exposed_runs: Sequence[RunRecord], repetitions: int = FAMILY_REPETITIONS
) -> EvalFamily:
    """The exposed runs' tasks as a family to re-run ``repetitions`` times, and its gate:
    pass^k = 100% on the high-risk subset (tasks with ``risk: high`` or a severe effect) when
    there is one, else pass^k not below the baseline's on the whole family."""
    tasks = sorted({task_of(r) for r in exposed_runs})
    risky = sorted({task_of(r) for r in exposed_runs if _high_risk(r)})
    if risky:
        gate = f"pass^{repetitions} = 100% on the high-risk subset ({len(risky)} tasks)"
    else:
        gate = f"pass^{repetitions} on the family's {len(tasks)} tasks not below the baseline's"
    return EvalFamily(
        name=f"{cluster.cluster_id}@{repetitions}",
        repetitions=repetitions,
        tasks=tasks,
        high_risk_tasks=risky,
        ship_gate=gate,
    )


def _owners(cluster: Cluster, failures: Sequence[RunRecord]) -> list[str]:
    if cluster.owners:
        return list(cluster.owners)
    counts = Counter(r.owner for r in failures if r.owner is not None)
    return [owner for owner, _ in counts.most_common()]


def dossier(
    cluster: Cluster, runs: Sequence[RunRecord], *, repetitions: int = FAMILY_REPETITIONS
) -> Dossier:
    """The dossier of ``cluster`` over ``runs`` (every run of the run sets, failed or not)."""
    exposed_runs, failed = exposure(cluster, runs)
    failures = [r for r in exposed_runs if r.case_id in failed]
    succeeded = [r for r in exposed_runs if not r.failed and r.case_id not in failed]
    rate = Rate.of(len(failures), len(exposed_runs))
    return Dossier(
        cluster_id=cluster.cluster_id,
        definition=cluster.definition,
        exclusions=list(cluster.exclusions),
        condition=dict(cluster.condition),
        population=Population(
            exposed_runs=len(exposed_runs),
            failures=len(failures),
            rate=rate.rate,
            rate_ci=rate.rate_ci,
            members=len(cluster.members),
            trend=trend(cluster, runs),
        ),
        impact=impact(failures),
        evidence=evidence(failures),
        owners=_owners(cluster, failures),
        hypothesis=cluster.hypothesis or NOT_RECORDED,
        eval_family=eval_family(cluster, exposed_runs, repetitions),
        counterexamples=Counterexamples(
            count=len(succeeded),
            case_ids=sorted(r.case_id for r in succeeded)[:COUNTEREXAMPLES_SHOWN],
        ),
        lineage=list(cluster.lineage),
    )


def family_runset(family: EvalFamily, sources: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The lines of the run-set files ``sources`` whose task is in the family, as they are:
    the run-set file to re-run (``judge score`` reads it). InputError when none matches."""
    wanted = set(family.tasks)
    chosen = [
        record
        for source in sources
        for _, record in jsonl_objects(source)
        if {str(record.get("task_id")), str(record.get("run_id"))} & wanted
    ]
    if not chosen:
        raise InputError(
            f"no line of {', '.join(str(s) for s in sources)} runs a task of {family.name}",
            hint="give the run-set files the cluster's runs came from",
        )
    return chosen


def read_records(path: str | Path) -> list[RunRecord]:
    """Runs as the failure analysis sees them, one :class:`RunRecord` JSON object a line.
    InputError naming the line and field of a bad record."""
    found = []
    for number, record in jsonl_objects(path):
        try:
            found.append(RunRecord.model_validate(record))
        except ValidationError as err:
            raise validation_error(err, str(path), number) from err
    return found


def read_clusters(path: str | Path) -> list[Cluster]:
    """Named clusters: a YAML list of :class:`Cluster` records (or ``clusters:`` holding one),
    or JSONL, one a line."""
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    lines = [x for x in text.splitlines() if x.strip()]
    if lines and all(x.lstrip().startswith("{") for x in lines):
        data: Any = [record for _, record in jsonl_objects(path)]
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise InputError(f"not YAML: {err}", file=str(path)) from err
    if isinstance(data, dict) and "clusters" in data:
        data = data["clusters"]
    if not isinstance(data, list):
        raise InputError("expected a list of clusters", file=str(path))
    try:
        return TypeAdapter(list[Cluster]).validate_python(data)
    except ValidationError as err:
        raise first_error(err, file=str(path)) from err
