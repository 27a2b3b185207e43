"""Score the runs of a run set: judge each completed run (or read its gold label), apply the
declared rules for runs that did not complete, and route verdicts with a calibration card.

The result is one :class:`ScoredRun` per run; :mod:`judge.runsets.report` turns them into
figures.

Declared rules (shown in every report, see :data:`RULES`):

- ``infra_error`` runs are excluded from the analysis set: the agent never had a fair attempt.
  Their cost still counts in cost per run and per success.
- ``timeout`` runs count as failures and are not judged: the agent used up its budget.
- A completed run without a verdict (the judge abstained, failed to answer, or a panel tied) is
  **unscored**: listed and counted, left out of the rates, never turned into pass or fail.
- A judge never grades runs of its own model family (:mod:`judge.runsets.families`): a single
  judge of the same family as any run is refused; a panel uses, for each run, only the members
  of other families. A run whose agent family is unknown is judged, and counted as such.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from calibration.card import Card
from calibration.confidence import score_items
from calibration.inputs import judgment_to_row
from judge.base import Frozen
from judge.errors import InputError
from judge.judging import JudgeOptions, Outcome, RunSummary, Step, judging_plan, run_steps
from judge.review import route as route_card
from judge.routing import card_models, majority
from judge.rubrics import Rubric
from judge.runsets.families import model_family
from judge.runsets.records import Run
from judge.store import Store
from judge.types import Judgment, Strict, check_ref

RULES: Mapping[str, str] = {
    "infra_error": "Runs with status infra_error are excluded from the analysis set (the agent "
    "never had a fair attempt); their cost still counts in cost per run and per success.",
    "timeout": "Runs with status timeout count as failures and are not judged (the agent used "
    "up its budget).",
    "unscored": "Completed runs without a verdict (judge abstained, parse or provider failure, "
    "panel tie) are unscored: listed and counted, left out of every rate.",
    "self_family": "A judge never grades runs of its own model family; a panel uses, per run, "
    "only members of other families.",
}


class ScoredRun(Frozen):
    """One run with its outcome and everything the report needs about it (the report keeps
    every run in this form, so the gate can recompute from it)."""

    run_id: str
    task_id: str
    treatment: str
    benchmark: str
    repetition: int
    agent_model: str | None
    status: str
    #: "pass" / "fail" when scored; None when excluded or unscored.
    outcome: str | None
    #: Where the outcome came from: "judge:<model>", "panel:<m1>,<m2>", "gold", "rule:timeout".
    source: str
    #: True when the run is in the analysis set (not excluded by a rule).
    analysed: bool = True
    reason: str | None = None
    criteria: dict[str, str] = Field(default_factory=dict)
    failed_hard_gates: list[str] = Field(default_factory=list)
    #: How the outcome was decided: by the card (judge.routing's decisions auto_accept,
    #: auto_reject, review), by an uncalibrated judge, by a gold label ("gold"), or by a declared
    #: rule ("rule").
    route: str = "none"
    route_reason: str | None = None
    #: P(pass) of the card's judge for this run, when it returned probabilities.
    p_pass: float | None = None
    #: The judge's score of the run in [0, 1]: its P(pass) pooled over prompt variants, orders
    #: and samples (and over a panel's members) when every verdict carried one, else the share
    #: of pass votes (the verdict itself for one judgment). None when no verdict was usable.
    judge_score: float | None = None
    #: A person's label of the run from ``--labels`` (None: not labelled), and the run's
    #: inclusion probability under the label plan (1 for runs a declared rule decided).
    label: Literal["pass", "fail"] | None = None
    label_prob: float | None = None
    official: str | None = None
    cost_usd: float | None = None
    tokens: int | None = None
    duration_s: float | None = None
    #: The summed cost of the judgments that recorded one (None when none did).
    judge_cost_usd: float | None = None
    judge_tokens: int = 0
    judgment_ids: list[str] = Field(default_factory=list)
    #: How many of the judgments recorded a cost (the others were not priced by the provider).
    judge_priced: int = 0
    #: The deterministic checks that failed on the run (``check:<id>@<version>``, from its
    #: judgments: judge.judging.composite); written only when there are some.
    failed_checks: list[str] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_no_checks(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and not data.get("failed_checks", True):
            del data["failed_checks"]
        return data

    @property
    def scored(self) -> bool:
        """In the analysis set and with an outcome."""
        return self.analysed and self.outcome in ("pass", "fail")


def _base(run: Run) -> dict[str, Any]:
    r = run.record
    return {
        "run_id": r.run_id,
        "task_id": r.task_id,
        "treatment": r.treatment,
        "benchmark": r.benchmark,
        "repetition": r.repetition,
        "agent_model": run.agent_model,
        "status": r.status,
        "official": run.official,
        "cost_usd": r.cost_usd,
        "tokens": r.tokens,
        "duration_s": r.duration_s,
    }


def _by_rule(run: Run) -> ScoredRun | None:
    """The run's fate when a declared rule decides it (not completed), else None."""
    if run.record.status == "infra_error":
        return ScoredRun(
            **_base(run),
            outcome=None,
            source="rule:infra_error",
            analysed=False,
            reason=RULES["infra_error"],
            route="rule",
        )
    if run.record.status == "timeout":
        return ScoredRun(
            **_base(run),
            outcome="fail",
            source="rule:timeout",
            reason=RULES["timeout"],
            route="rule",
        )
    return None


# --- gold labels ---------------------------------------------------------------------------------


def score_from_gold(runs: Sequence[Run], file: str = "<run set>") -> list[ScoredRun]:
    """Score every run from its official (gold) label instead of a judge.

    Raises an InputError naming the first completed runs that have no label.
    """
    missing = [r for r in runs if r.record.status == "completed" and r.official is None]
    if missing:
        lines = ", ".join(str(r.line) for r in missing[:10])
        raise InputError(
            f"{len(missing)} completed run(s) have no gold label (lines {lines})",
            file=file,
            line=missing[0].line,
            field="official",
            hint="give 'official' (pass or fail) or score with a judge (--model)",
        )
    out = []
    for run in runs:
        ruled = _by_rule(run)
        out.append(
            ruled or ScoredRun(**_base(run), outcome=run.official, source="gold", route="gold")
        )
    return out


# --- self-family exclusion -----------------------------------------------------------------------


class JudgeFamily(Strict):
    """One judge of the report: its model family and how many runs it was kept off."""

    model: str
    family: str | None
    runs_excluded: int


class JudgesInfo(Strict):
    """The judges and the self-family exclusion, as the report states them."""

    judges: list[JudgeFamily]
    runs_with_unknown_agent_family: int
    rule: str


@dataclass
class Eligibility:
    """Which judges may grade which runs."""

    by_run: dict[str, list[str]]
    #: run id -> the models left out for it (same family as the agent).
    excluded: dict[str, list[str]]
    unknown_family_runs: list[str]

    def summary(self, models: Sequence[str]) -> JudgesInfo:
        """For the report: families and how many runs each judge was kept off."""
        off: Counter[str] = Counter(m for ms in self.excluded.values() for m in ms)
        return JudgesInfo(
            judges=[
                JudgeFamily(model=m, family=model_family(m), runs_excluded=off[m]) for m in models
            ],
            runs_with_unknown_agent_family=len(self.unknown_family_runs),
            rule=RULES["self_family"],
        )


def eligibility(runs: Sequence[Run], models: Sequence[str]) -> Eligibility:
    """Per run, the judges of another family. A single judge of the same family as any run,
    or a run no panel member may grade, is refused with an InputError naming the runs."""
    by_run: dict[str, list[str]] = {}
    excluded: dict[str, list[str]] = {}
    unknown: list[str] = []
    for run in runs:
        if run.record.status != "completed":
            continue
        family = model_family(run.agent_model)
        if family is None:
            unknown.append(run.run_id)
        same = [m for m in models if family is not None and model_family(m) == family]
        by_run[run.run_id] = [m for m in models if m not in same]
        if same:
            excluded[run.run_id] = same
    blocked = [r for r in runs if r.run_id in by_run and not by_run[r.run_id]]
    if blocked:
        first = blocked[0]
        fam = model_family(first.agent_model)
        if len(models) == 1:
            message = (
                f"judge {models[0]} is of the {fam} family, like the agent of "
                f"{len(blocked)} run(s) (first: {first.run_id}, agent "
                f"{first.agent_model}): a judge never grades runs of its own family"
            )
        else:
            message = (
                f"no panel member may grade {len(blocked)} run(s) (first: "
                f"{first.run_id}, agent {first.agent_model}, family {fam}): every "
                "judge is of the agent's family"
            )
        raise InputError(
            message,
            line=first.line,
            field="agent_model",
            hint="use a judge of another family (e.g. add one with --model)",
        )
    return Eligibility(by_run, excluded, unknown)


# --- judging -------------------------------------------------------------------------------------


@dataclass
class JudgedRuns:
    """Scored runs and what judging them took."""

    runs: list[ScoredRun]
    summary: RunSummary
    eligibility: Eligibility


def judge_runs(
    store: Store,
    runs: Sequence[Run],
    *,
    rubric: Rubric,
    models: Sequence[str],
    options: JudgeOptions,
    card: Card | None = None,
    audit_fraction: float = 0.05,
    on_start: Callable[[list[Step]], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    source: str = "",
) -> JudgedRuns:
    """Judge every completed run with the eligible models, by the same protocol as
    :func:`judge.judging.judge_cases` (prompt variants, orders, samples; nothing paid twice),
    then decide each run's outcome and route the card's judge's verdicts with ``card`` (when
    given; see :func:`route_with_card`)."""
    allowed = eligibility(runs, models)
    steps = [
        step
        for run in runs
        if run.record.status == "completed" and run.case is not None
        for step in judging_plan([run.case], rubric, allowed.by_run[run.run_id], options)
    ]
    summary = run_steps(
        store,
        steps,
        rubric=rubric,
        models=models,
        options=options,
        on_start=on_start,
        on_done=on_done,
        source=source,
    )
    # Steps that could not even be attempted (e.g. a case the rubric cannot render) leave
    # their runs without a verdict: unscored, with the reason.
    not_judged = {step.case.id: f"{step.model}: {error}" for step, error in summary.errors}
    judged: dict[str, dict[str, list[Judgment]]] = {}
    for outcome in summary.outcomes:
        by_model = judged.setdefault(outcome.step.case.id, {})
        by_model.setdefault(outcome.step.model, []).append(outcome.judgment)
    routes: dict[str, Route] = {}
    if card is not None:
        routes = route_with_card(
            store, card, [o.judgment for o in summary.outcomes], audit_fraction=audit_fraction
        )
    out = []
    for run in runs:
        ruled = _by_rule(run)
        if ruled is not None:
            out.append(ruled)
            continue
        if card is None:
            route = Route(
                "uncalibrated", "no calibration card: the verdict is the judge's alone", None
            )
        else:
            route = routes.get(run.run_id) or Route(
                "review", f"the card's judge {card.judge.model} did not judge this run", None
            )
        scored = _from_judgments(run, judged.get(run.run_id, {}), route)
        if scored.outcome is None and run.run_id in not_judged:
            scored = scored.model_copy(update={"reason": f"not judged ({not_judged[run.run_id]})"})
        out.append(scored)
    return JudgedRuns(out, summary, allowed)


def model_verdict(judgments: Sequence[Judgment]) -> tuple[str | None, str]:
    """One judge's verdict on one run from all its judgments (prompt variants, samples): the
    label its pooled score decides (``calibration.confidence.score_items``: the mean P(pass),
    else the vote share; None at exactly one half), and the statuses when there is none."""
    rows = [judgment_to_row(j) for j in judgments]
    scores = score_items(rows, kind="binary")
    label = scores.items[0].decision("binary") if scores.items else None
    statuses = "/".join(sorted({j.status for j in judgments})) or "no judgment"
    return label, statuses


def pooled_score(judgments: Sequence[Judgment]) -> float | None:
    """The judges' score of one run from all their judgments (``score_items`` over every
    judgment: the mean P(pass), else the vote share); None when none is usable."""
    scores = score_items([judgment_to_row(j) for j in judgments], kind="binary")
    return float(scores.items[0].score) if scores.items else None


def _from_judgments(
    run: Run, judgments: Mapping[str, Sequence[Judgment]], route: Route
) -> ScoredRun:
    models = sorted(judgments)
    every = [j for m in models for j in judgments[m]]
    verdicts = {m: model_verdict(judgments[m]) for m in models}
    votes = [label for label, _ in verdicts.values() if label is not None]
    outcome = majority(votes)
    reason = None
    if outcome is None:
        statuses = ", ".join(f"{m}: {verdicts[m][1]}" for m in models) or "no judgment"
        reason = "panel tie" if len(votes) > 1 else f"no verdict ({statuses})"
    criteria = _criteria(every)
    # What judging cost is what the judgments recorded: the providers' cost where they priced
    # the call (local models cost 0), and the tokens of every judgment.
    costs = [j.usage.cost_usd for j in every if j.usage.cost_usd is not None]
    source = ("judge:" if len(models) == 1 else "panel:") + ",".join(models)
    return ScoredRun(
        **_base(run),
        outcome=outcome,
        source=source,
        reason=reason,
        criteria=criteria,
        failed_hard_gates=sorted(_hard_gates(every, criteria)),
        route=route.route,
        route_reason=route.reason,
        p_pass=route.p_pass,
        judge_score=pooled_score(every) if every else None,
        judge_cost_usd=sum(costs) if costs else None,
        judge_tokens=sum(j.usage.prompt_tokens + j.usage.completion_tokens for j in every),
        judgment_ids=[j.id for j in every],
        judge_priced=len(costs),
        failed_checks=_failed_checks(every),
    )


def _failed_checks(judgments: Iterable[Judgment]) -> list[str]:
    """The checks any of the judgments recorded as failed, in the order first seen."""
    refs = (check_ref(c) for j in judgments if j.verdict for c in j.verdict.checks)
    return list(dict.fromkeys(refs))


def _criteria(judgments: Iterable[Judgment]) -> dict[str, str]:
    """Criterion id -> the majority label over the judges that answered it."""
    labels: dict[str, list[str]] = {}
    for j in judgments:
        if j.status == "ok" and j.verdict is not None:
            for c in j.verdict.criteria:
                labels.setdefault(c.id, []).append(c.label)
    out = {}
    for cid, ls in labels.items():
        label = majority(ls)
        if label is not None:
            out[cid] = label
    return out


def _hard_gates(judgments: Iterable[Judgment], criteria: Mapping[str, str]) -> set[str]:
    gates: set[str] = set()
    for j in judgments:
        if j.status == "ok" and j.verdict is not None:
            gates.update(g for g in j.verdict.failed_hard_gates if criteria.get(g) == "fail")
    return gates


# --- routing with a card -------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """How the card decided one run's verdict."""

    route: str
    reason: str | None
    p_pass: float | None


def route_with_card(
    store: Store,
    card: Card,
    judgments: Sequence[Judgment],
    *,
    audit_fraction: float = 0.05,
    seed: int = 0,
) -> dict[str, Route]:
    """Route the card's judge's judgments with :func:`judge.review.route` (decisions
    stored, review items and a seeded audit share queued for people); case id -> Route."""
    models = set(card_models(card))
    mine = [j for j in judgments if j.provenance.model in models]
    if not mine:
        return {}
    run = route_card(store, card, judgments=mine, audit_fraction=audit_fraction, seed=seed)
    return {d.case_id: Route(d.decision, f"{d.reason}: {d.detail}", d.score) for d in run.decisions}
