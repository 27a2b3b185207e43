"""Human labels for some runs of a run set, and the label plans that make them a random sample.

The labels file (``judge score --labels LABELS.jsonl``) holds gold-format records, as
``judge gold export`` writes them; only ``id`` (the run id, which is the case id) and ``gold``
(pass or fail) are required, and the other gold fields are checked against the run when present
(a record whose task or trace differs from its run's comes from another run set). Errors name
the file, the line and the field.

A label plan (``judge review plan``) draws the runs to label at random, with recorded inclusion
probabilities (:func:`calibration.ppi.plan_labels`), keeps the plan in the store and queues the
drawn runs for blind review. Its population is the run set's completed runs (those with a case
a person can label); runs a declared rule decides (timeouts count as failures, infra errors are
excluded) need no label. :func:`check_labels` finds the plan drawn from exactly these runs and
checks with :func:`calibration.ppi.plan_covers` that the labelled runs are its sample; only
then are prediction-powered (PPI++) figures valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from calibration.ppi import LabelPlan, PlanCheck, plan_covers, plan_labels
from judge import kinds
from judge.cases import iter_jsonl, validation_error
from judge.errors import InputError
from judge.review import StoredPlan, enqueue_plan, plans_for, save_plan
from judge.runsets.records import Run, id_as_text
from judge.runsets.scoring import pooled_score
from judge.safety.redact import redact_case
from judge.store import Store
from judge.types import Case, Judgment, Strict

LABELS_HINT = (
    "a labels file holds gold-format records (as `judge gold export` writes them); "
    "each needs 'id' (the run id) and 'gold' (pass or fail)"
)
#: The uniform share mixed into active plans (calibration.ppi.plan_labels's default).
DEFAULT_MIX = 0.2
#: The score an active plan gives a run the judge left without a usable verdict: the most
#: uncertain one, so such runs are drawn at least as often as any other.
UNSCORED_PLAN_SCORE = 0.5


class LabelRecord(Strict):
    """One line of a labels file: a gold-format record of which only ``id`` and ``gold`` are
    required."""

    id: str = Field(min_length=1)
    gold: str
    source: str | None = None
    license: str | None = None
    kind: str | None = None
    task: str | None = None
    candidates: dict[str, str] | None = None
    diff: str | None = None
    trace: list[dict[str, Any]] | None = None
    agent_model: str | None = None
    gold_source: str | None = None
    slices: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    lineage: dict[str, Any] | None = None
    #: A failed run's critical step and agent (a gold record's first bad decision): read, unused.
    critical_step: int | None = None
    critical_agent: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        # Run ids are compared as text (run sets number their runs too).
        return id_as_text(value)


@dataclass(frozen=True)
class HumanLabels:
    """The labels of a file: run id -> pass/fail, and the line each came from."""

    path: str
    labels: dict[str, str]
    lines: dict[str, int]

    @property
    def counts(self) -> dict[str, int]:
        """Labels by value."""
        out: dict[str, int] = {}
        for value in self.labels.values():
            out[value] = out.get(value, 0) + 1
        return out


def population(runs: Sequence[Run]) -> list[Run]:
    """The runs a label plan draws from: completed runs with a case, in file order."""
    return [r for r in runs if r.record.status == "completed" and r.case is not None]


def load_labels(path: str | Path, runs: Sequence[Run], *, kind: str = "binary") -> HumanLabels:
    """Read and check a labels file against the runs it labels.

    Refused with an InputError naming file, line and field: a record that is not a gold-format
    record, a label outside the rubric kind's gold labels, a second label for one run, a label
    for a run the run set does not have (every label: the file is from another run set), a
    record whose task or trace differs from its run's (another run set with the same run ids),
    a label for a run a declared rule decides.
    """
    file = str(path)
    if not Path(path).is_file():
        raise InputError("no such file", file=file, hint=LABELS_HINT)
    records = _read_records(file, kinds.kind(kind).gold_labels)
    _check_runs(records, {r.run_id: r for r in runs}, file)
    return HumanLabels(
        path=file,
        labels={r.id: r.gold for _, r in records},
        lines={r.id: n for n, r in records},
    )


def _read_records(file: str, allowed: Sequence[str]) -> list[tuple[int, LabelRecord]]:
    """The records of a labels file with their line numbers: each a gold-format record with one
    of the ``allowed`` labels, one per run, and at least one."""
    lines: dict[str, int] = {}
    records: list[tuple[int, LabelRecord]] = []
    for number, obj in iter_jsonl(Path(file)):
        if isinstance(obj, InputError):
            raise obj
        try:
            record = LabelRecord.model_validate(obj)
        except ValidationError as exc:
            error = validation_error(exc, file, number)
            raise InputError(
                error.reason, file=file, line=number, field=error.field, hint=LABELS_HINT
            ) from exc
        if record.gold not in allowed:
            raise InputError(
                f"label {record.gold!r} is not one of the rubric's labels ({', '.join(allowed)})",
                file=file,
                line=number,
                field="gold",
                hint="a run the reviewer could not decide has no label: leave it "
                "out (its plan is then incomplete)",
            )
        if record.id in lines:
            raise InputError(
                f"a second label for run {record.id!r} (the first is on line {lines[record.id]})",
                file=file,
                line=number,
                field="id",
                hint="keep one label per run",
            )
        lines[record.id] = number
        records.append((number, record))
    if not records:
        raise InputError("the labels file is empty", file=file, hint=LABELS_HINT)
    return records


def _check_runs(
    records: Sequence[tuple[int, LabelRecord]], by_id: Mapping[str, Run], file: str
) -> None:
    """Refuse labels of runs the run set does not have (all of them: another run set's file),
    of runs a declared rule decides, and of runs whose case is not the record's."""
    unknown = [(n, r) for n, r in records if r.id not in by_id]
    if len(unknown) == len(records):
        n, r = unknown[0]
        raise InputError(
            f"no label names a run of this run set (the first names {r.id!r}): "
            "the labels file is from another run set",
            file=file,
            line=n,
            field="id",
            hint="export the labels of this run set's review plan (`judge gold export --plan ID`)",
        )
    if unknown:
        n, r = unknown[0]
        raise InputError(
            f"label for an unknown run {r.id!r} ({len(unknown)} such label(s)): "
            "the run set has no run with this id",
            file=file,
            line=n,
            field="id",
            hint="label only runs of this run set",
        )
    for n, r in records:
        run = by_id[r.id]
        if run.record.status != "completed":
            raise InputError(
                f"run {r.id!r} has status {run.record.status}: a declared rule "
                "decides it, a label does not",
                file=file,
                line=n,
                field="id",
                hint="remove the label",
            )
        mismatch = _other_case(r, run.case)
        if mismatch is not None:
            raise InputError(
                f"the record's {mismatch} is not run {r.id!r}'s: the labels "
                "file is from another run set that reuses its run ids",
                file=file,
                line=n,
                field=mismatch,
                hint="label the runs of this run set",
            )


def _other_case(record: LabelRecord, case: Case | None) -> str | None:
    """The first field (task, diff, trace) in which ``record`` describes another case than
    ``case`` (as given, or as the store keeps it: redacted); None when all that it gives fits."""
    if case is None:
        return None
    stored = redact_case(case)[0]
    if record.task is not None and record.task not in (case.task, stored.task):
        return "task"
    if record.diff is not None and record.diff not in (case.diff, stored.diff):
        return "diff"
    if record.trace:
        given = [str(t.get("content", "")) for t in record.trace]
        if given not in ([t.content for t in case.trace], [t.content for t in stored.trace]):
            return "trace"
    return None


# --- plans -----------------------------------------------------------------------------------


@dataclass
class LabelCheck:
    """Whether the labels are a label plan's sample, and each run's inclusion probability."""

    valid: bool
    reason: str | None
    plan: StoredPlan | None
    check: PlanCheck | None
    #: Inclusion probability of every run of the plan's population (the plan's when valid;
    #: as if drawn uniformly otherwise, for the labels-only figure).
    probs: dict[str, float]
    notes: list[str] = field(default_factory=list)


def check_labels(store: Store, runs: Sequence[Run], labels: HumanLabels) -> LabelCheck:
    """Find the stored plan drawn from exactly these runs and check the labels are its sample.

    Several plans from the same runs: the one whose sample the labels are (else the newest).
    Without a valid plan the labels are "not valid for PPI": the report gives labels-only
    figures with a warning (a hand-picked sample says nothing reliable about the others), and
    the gate keeps the judge's interval.
    """
    pool = [r.run_id for r in population(runs)]
    labelled = set(labels.labels)
    as_if_uniform = {r: len(labelled & set(pool)) / len(pool) for r in pool} if pool else {}
    plans = plans_for(store, pool) if pool else []
    if not plans:
        return LabelCheck(
            False,
            "no label plan of exactly these runs is stored in "
            f"{store.location} (draw one with `judge review plan`), so the "
            "labelled runs are not known to be a random sample",
            None,
            None,
            as_if_uniform,
        )
    checks = [(p, plan_covers(p.plan, labelled)) for p in plans]
    good = [(p, c) for p, c in checks if c.valid]
    notes = []
    if len(plans) > 1:
        notes.append(
            f"{len(plans)} label plans were drawn from these runs; the labels were "
            "checked against each"
        )
    if good:
        plan, check = good[-1]
        return LabelCheck(True, None, plan, check, plan.plan.prob_of(), notes)
    plan, check = checks[-1]
    return LabelCheck(
        False,
        f"the labels are not the sample of label plan {plan.id}: {check.reason}",
        plan,
        check,
        as_if_uniform,
        notes,
    )


@dataclass
class PlanResult:
    """What ``judge review plan`` did."""

    stored: StoredPlan
    new: bool
    enqueued: int
    #: Runs of the population with a judge score (active plans), and notes for the user.
    scored: int = 0
    notes: list[str] = field(default_factory=list)


def plan_review(
    store: Store,
    runs: Sequence[Run],
    *,
    source: str,
    budget: int,
    seed: int,
    active: bool = False,
    models: Sequence[str] = (),
    rubric: str | None = None,
    mix: float = DEFAULT_MIX,
) -> PlanResult:
    """Draw ``budget`` runs to label (uniformly, or with ``active`` from the judge's stored
    scores of the runs: judge them first), keep the plan in ``store`` and queue the drawn runs
    for blind review. The labels exported from review (``judge gold export --plan ID``) are
    then valid for ``judge score --labels``."""
    pool = population(runs)
    if not pool:
        raise InputError(
            "the run set has no completed run with a case to label", file=source, field="status"
        )
    ids = [r.run_id for r in pool]
    if not 1 <= budget <= len(ids):
        raise InputError(
            f"budget {budget} is not between 1 and the {len(ids)} runs to draw from",
            field="budget",
            hint=f"give a budget of at most {len(ids)}",
        )
    notes: list[str] = []
    scored = 0
    scores_info: dict[str, Any] = {}
    if active:
        scores, info = _stored_scores(store, ids, models, rubric)
        scored = sum(s is not None for s in scores)
        if not scored:
            raise InputError(
                f"no stored judgment of these runs in {store.location}"
                + (f" by {', '.join(models)}" if models else "")
                + (f" with rubric {rubric}" if rubric else ""),
                field="active",
                hint="judge them first (`judge score RUNS --rubric R --model M "
                "--db DB`), or draw a uniform plan (without --active)",
            )
        if scored < len(ids):
            notes.append(
                f"{len(ids) - scored} run(s) have no usable judge score: they get "
                f"{UNSCORED_PLAN_SCORE} (the most uncertain) in the active plan"
            )
        values = [UNSCORED_PLAN_SCORE if s is None else s for s in scores]
        scores_info = {**info, "scored": scored, "unscored_score": UNSCORED_PLAN_SCORE}
    else:
        values = [UNSCORED_PLAN_SCORE] * len(ids)  # a uniform plan ignores the scores
    plan: LabelPlan = plan_labels(values, budget, active=active, seed=seed, run_ids=ids, mix=mix)
    stored, new = save_plan(store, plan, runset=source, scores=scores_info)
    chosen = set(plan.chosen)
    cases = [redact_case(r.case)[0] for r in pool if r.run_id in chosen and r.case is not None]
    enqueued = enqueue_plan(store, stored, cases)
    others = [p for p in plans_for(store, ids) if p.id != stored.id]
    if others:
        notes.append(
            f"{len(others)} other label plan(s) were drawn from these runs "
            f"({', '.join(p.id for p in others[:3])}): the labels of one plan are a "
            "valid sample, labels of several mixed are not"
        )
    return PlanResult(stored=stored, new=new, enqueued=enqueued, scored=scored, notes=notes)


def _stored_scores(
    store: Store, ids: Sequence[str], models: Sequence[str], rubric: str | None
) -> tuple[list[float | None], dict[str, Any]]:
    """Each run's pooled judge score from the stored judgments (None: none usable), and which
    judges and rubric they came from. Several rubrics without ``rubric``: refused."""
    found: dict[str, list[Judgment]] = {}
    for run_id in ids:
        js = [
            j
            for j in store.judgments(case_id=run_id)
            if (not models or j.provenance.model in models)
            and (rubric is None or j.provenance.rubric_id == rubric)
        ]
        found[run_id] = js
    rubrics = sorted({j.provenance.rubric_id for js in found.values() for j in js})
    if len(rubrics) > 1:
        raise InputError(
            f"the runs were judged with several rubrics ({', '.join(rubrics)})",
            field="rubric",
            hint="name the one to plan from with --rubric",
        )
    judges = sorted({j.provenance.model for js in found.values() for j in js})
    scores = [pooled_score(found[r]) if found[r] else None for r in ids]
    return scores, {"models": judges, "rubric": rubrics[0] if rubrics else None}
