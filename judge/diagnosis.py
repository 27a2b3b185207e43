"""Diagnose failed runs: the first bad decision of each, with its step scores and step set.

``diagnose`` judges each failed run with an ``fbd`` rubric (default ``first-bad-decision``)
through the same runner as any verdict: the rubric's prompt, every step numbered (judge.steps),
structured output with re-asks, the store, the cache and resume, the four statuses, provenance
and cost. Repeated samples (``JudgeOptions(samples=N)``) give a distribution over steps; each
run's **step scores** are the mean over its samples of a kernel around the step each sample
named (``2 ** -|j - s|``), so that a sure judge scores one step near 1 and an unsure one spreads
its scores. An ``fbd`` card (calibration.fbd) turns the scores into a certified step set.

What is diagnosed: runs that failed. A record whose gold label is ``pass`` is skipped with that
reason; a record with no label is diagnosed unless the store holds a ``pass`` verdict for it and
no ``fail`` one. A run with no steps is skipped with its reason. Every first bad decision is
``tentative``: only a person's confirmation on the review page or a recorded replay confirms it
(:func:`fbd_status`).

Confirmation is read from the store each time a diagnosis is built: a diagnosis answers one
review item of kind ``fbd`` (:func:`review_item_id`: its run, judge and rubric; queued by
``judge.review.queue_diagnoses``), and it is ``confirmed`` only when that item is done with a
person's critical step (:func:`confirmed_step`): the judge's step when the person confirmed it,
the person's when they moved it (then the judge's was wrong). Nothing else confirms a
diagnosis: not an open or disagreeing item, not "no single step" or "cannot determine", not a
gold file's step, not another judge's item or a pass/fail review of the same run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from calibration.card import GoldRef, JudgeSection, RubricRef
from calibration.fbd import (
    StepCard,
    StepDecision,
    StepRun,
    build_step_card,
    load_recorded_steps,
    route_steps,
    step_run,
    step_set,
    write_step_card,
)
from calibration.options import DEFAULT_VALID_DAYS
from judge import kinds
from judge.cases import load_cases
from judge.digests import bytes_digest, short_hash
from judge.errors import InputError, RubricError
from judge.judging import JudgeOptions, Outcome, RunSummary, Step, judge_cases
from judge.rubrics import Rubric, load_rubric
from judge.steps import candidate_steps
from judge.store import Store
from judge.types import Case, Diagnosis, FbdStatus, Judgment, ReviewItem, Status

#: The diagnosing rubric, pinned (a new version never changes diagnoses silently).
DEFAULT_FBD_RUBRIC = "first-bad-decision@1"
#: A report is long: the judge may answer with this many tokens unless told otherwise.
FBD_MAX_TOKENS = 900


@dataclass(frozen=True)
class Skipped:
    """A run that was not diagnosed, and why."""

    case_id: str
    reason: str


@dataclass
class RunDiagnosis:
    """One run, one judge: the report of its first sample that has one, and its step scores."""

    case_id: str
    model: str
    n_steps: int
    status: Status
    samples: int
    step_scores: tuple[float, ...]
    report: Diagnosis | None
    judgment_ids: list[str]
    rationale: str = ""
    error: str | None = None
    step_set: list[int] | None = None
    fbd_status: FbdStatus = "tentative"
    #: The steps the deterministic checks proposed (recomputed from the stored case).
    proposed: list[dict[str, Any]] = field(default_factory=list)
    #: The diagnosing rubric (id@version of the judgments).
    rubric: str = DEFAULT_FBD_RUBRIC
    #: The review item that answers this diagnosis, when one is queued.
    review_item: str | None = None
    #: The critical step a person confirmed (the judge's step, or the one they moved it to);
    #: set only when ``fbd_status`` is confirmed.
    confirmed_step: int | None = None

    @property
    def critical_step(self) -> str | None:
        return self.report.critical_step if self.report else None

    @property
    def step_index(self) -> int | None:
        return self.report.step_index if self.report else None

    @property
    def located(self) -> bool:
        """The certified step set is a single step (still tentative until a person confirms
        it); False without a card."""
        return self.status == "ok" and self.step_set is not None and len(self.step_set) == 1

    def as_json(self) -> dict[str, Any]:
        """The machine form, one line per run (``judge diagnose --format jsonl``)."""
        return {
            "case_id": self.case_id,
            "model": self.model,
            "status": self.status,
            "critical_step": self.critical_step,
            "step_index": self.step_index,
            "step_set": self.step_set,
            "violated_invariant": self.report.violated_invariant if self.report else None,
            "owner": self.report.owner if self.report else None,
            "fbd_status": self.fbd_status,
            "confirmed_step": self.confirmed_step,
            "review_item": self.review_item,
            "n_steps": self.n_steps,
            "samples": self.samples,
            "step_scores": {str(j): round(s, 6) for j, s in enumerate(self.step_scores) if s},
        }

    def as_report(self) -> dict[str, Any]:
        """The human form practitioners use (YAML per run)."""
        r = self.report

        def step(index: int | None) -> str | None:
            return None if index is None or index < 0 else f"step {index} (E{index + 1})"

        confirmed = (
            {"confirmed_step": step(self.confirmed_step)} if self.confirmed_step is not None else {}
        )
        if r is None:
            return {
                "failure_id": self.case_id,
                "status": self.status,
                "critical_step": None,
                "reason": self.error or self.rationale or "no step named",
                "fbd_status": self.fbd_status,
                **confirmed,
            }

        return {
            "failure_id": self.case_id,
            "status": self.status,
            "symptom": (
                {"step": step(r.symptom.step), "description": r.symptom.text} if r.symptom else None
            ),
            "critical_step": {
                "step": step(r.step_index),
                "decision": r.decision,
                "information_available": [
                    f"{step(c.step)}: {c.text}" for c in r.information_available
                ],
                "violated_invariant": r.violated_invariant,
                **({"invariant_note": r.invariant_note} if r.invariant_note else {}),
            },
            "causal_chain": [f"{step(c.step)}: {c.text}" for c in r.causal_chain],
            "counterfactual": r.counterfactual,
            "confidence": r.confidence,
            "owner": r.owner,
            "recoverable_at_step": step(r.recoverable_at_step),
            "minimal_fix": r.minimal_fix,
            "step_set": self.step_set,
            "checks": self.proposed,
            "fbd_status": self.fbd_status,
            **confirmed,
        }


@dataclass
class DiagnosisResult:
    """Every diagnosed run, the skipped ones, and how the batch went."""

    runs: list[RunDiagnosis]
    skipped: list[Skipped]
    summary: RunSummary | None
    #: The digest of the step card that gave the runs their step sets, if one did.
    card_digest: str | None = None

    def step_runs(self, gold: Mapping[str, int | None] | None = None) -> list[StepRun]:
        """The runs as step scores (``calibration.fbd``), with people's steps when given."""
        gold = gold or {}
        return [
            step_run(
                r.case_id,
                r.model,
                r.n_steps,
                dict(enumerate(r.step_scores)),
                gold.get(r.case_id),
                abstained=r.status == "abstain",
            )
            for r in self.runs
            if r.status in ("ok", "abstain")
        ]


def kernel_scores(steps: Sequence[int | None], n_steps: int) -> tuple[float, ...]:
    """Mean over samples of ``2 ** -|j - s|`` around each named step ``s`` (a sample that named
    none adds nothing)."""
    if not steps:
        return tuple(0.0 for _ in range(n_steps))
    totals = [0.0] * n_steps
    for s in steps:
        if s is None:
            continue
        for j in range(n_steps):
            totals[j] += 2.0 ** -abs(j - s)
    return tuple(t / len(steps) for t in totals)


def _stored_outcome(store: Store, case_id: str) -> str | None:
    """ "fail" or "pass" when the store's verdicts on a run (of any pass/fail rubric) say so;
    None when they say nothing or both."""
    labels = {
        j.verdict.label
        for j in store.judgments(case_id=case_id, status="ok")
        if j.verdict is not None and j.provenance.masked_from is None
    }
    labels &= {"pass", "fail"}
    return next(iter(labels)) if len(labels) == 1 else None


def failed_runs(
    cases: Iterable[Case], gold: Mapping[str, str], store: Store | None = None
) -> tuple[list[Case], list[Skipped]]:
    """The runs to diagnose (see the module docstring) and the ones skipped, with reasons."""
    keep: list[Case] = []
    skipped: list[Skipped] = []
    for case in cases:
        label = gold.get(case.id)
        if case.kind != "agent_run":
            skipped.append(Skipped(case.id, "a pairwise case has no steps to diagnose"))
        elif not case.trace:
            skipped.append(Skipped(case.id, "the run has no steps (its trace is empty)"))
        elif label == "pass":
            skipped.append(Skipped(case.id, "the run passed (gold label pass)"))
        elif label is None and store is not None and _stored_outcome(store, case.id) == "pass":
            skipped.append(Skipped(case.id, "the run was judged pass and never fail"))
        else:
            keep.append(case)
    return keep, skipped


def stored_failures(store: Store) -> list[Case]:
    """The stored runs some pass/fail judge found failed (and none found passed)."""
    failing: dict[str, set[str]] = defaultdict(set)
    for j in store.judgments(status="ok"):
        if j.verdict is not None and j.provenance.masked_from is None:
            failing[j.case_id].add(j.verdict.label)
    ids = [cid for cid, labels in failing.items() if "fail" in labels and "pass" not in labels]
    found = store.get_cases(ids)
    return [found[i] for i in ids if i in found]


def fbd_status(confirmed: bool) -> FbdStatus:
    """Tentative unless a person or a recorded replay confirmed it."""
    return "confirmed" if confirmed else "tentative"


# --- Confirmation by people (the review queue's fbd items) ------------------------------------


def review_item_id(case_id: str, model: str, rubric: str) -> str:
    """The id of the review item that answers the diagnosis of run ``case_id`` by ``model``
    with ``rubric`` (id@version): one item per diagnosis, however often it is queued."""
    return "f-" + short_hash(f"{case_id}\n{model}\n{rubric}")


def confirmed_step(item: ReviewItem) -> int | None:
    """The critical step people settled on in a finished ``fbd`` item (None while it is open
    or awaits adjudication, and when they said "no single step" or "cannot determine")."""
    if item.kind != "fbd" or item.status != "done" or item.final_label != "located":
        return None
    return item.final_step


def with_reviews(store: Store, runs: list[RunDiagnosis]) -> list[RunDiagnosis]:
    """``runs`` with what people said in their review items: the item of each (when queued),
    and ``fbd_status`` confirmed with the person's step when the item confirms one; every other
    run stays tentative."""
    items = {i.id: i for i in store.fbd_items([r.case_id for r in runs])}
    for run in runs:
        item = items.get(review_item_id(run.case_id, run.model, run.rubric))
        run.review_item = item.id if item else None
        step = confirmed_step(item) if item else None
        run.confirmed_step = step
        run.fbd_status = fbd_status(step is not None)
    return runs


def run_diagnosis(
    case: Case, model: str, judgments: list[Judgment], card: StepCard | None = None
) -> RunDiagnosis:
    """One run's diagnosis by one judge from its stored judgments (all samples), with its
    step set when ``card`` is given; tentative (:func:`with_reviews` reads confirmations)."""
    judgments = sorted(judgments, key=lambda j: j.provenance.sample)
    answered = [j for j in judgments if j.status in ("ok", "abstain")]
    n_steps = len(case.trace)
    named = [
        j.verdict.diagnosis.step_index
        if j.status == "ok" and j.verdict and j.verdict.diagnosis and j.verdict.label == "located"
        else None
        for j in answered
    ]
    scores = kernel_scores(named, n_steps)
    first = next(
        (j for j in answered if j.verdict is not None and j.verdict.diagnosis is not None), None
    )
    status: Status = (
        first.status if first is not None else (judgments[0].status if judgments else "infra_error")
    )
    report = first.verdict.diagnosis if first is not None and first.verdict else None
    judged: dict[int, str] = {c.step: c.judged for c in report.candidates} if report else {}
    proposed: list[dict[str, Any]] = [
        {
            "step": c.step,
            "invariant": c.invariant,
            "check": c.check,
            "reason": c.reason,
            "judged": judged.get(c.step, "unjudged"),
        }
        for c in candidate_steps(case.trace)
    ]
    sets = None
    if card is not None and answered:
        sets = step_set(
            step_run(case.id, model, n_steps, dict(enumerate(scores)), None),
            card.policy.threshold,
        )
    p = judgments[0].provenance if judgments else None
    return RunDiagnosis(
        case_id=case.id,
        model=model,
        rubric=f"{p.rubric_id}@{p.rubric_version}" if p else DEFAULT_FBD_RUBRIC,
        n_steps=n_steps,
        status=status,
        samples=len(answered),
        step_scores=scores,
        report=report,
        judgment_ids=[j.id for j in judgments],
        rationale=first.verdict.rationale if first is not None and first.verdict else "",
        error=next((j.error for j in judgments if j.error), None),
        step_set=sets,
        proposed=proposed,
    )


def diagnose(
    store: Store,
    cases: Sequence[Case],
    *,
    models: Sequence[str],
    rubric: str | Rubric = DEFAULT_FBD_RUBRIC,
    options: JudgeOptions | None = None,
    gold: Mapping[str, str] | None = None,
    card: StepCard | None = None,
    on_start: Callable[[list[Step]], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> DiagnosisResult:
    """Diagnose the failed runs among ``cases`` with each of ``models`` (see the module
    docstring); every judgment is stored as it finishes, and a second call pays for none."""
    chosen = load_rubric(rubric) if isinstance(rubric, str) else rubric
    if not kinds.kind(chosen.kind).steps:
        raise InputError(
            f"rubric {chosen.ref} is {chosen.kind}: diagnosing needs an fbd rubric",
            field="rubric",
            hint="use first-bad-decision",
        )
    options = options or JudgeOptions()
    if options.max_tokens < FBD_MAX_TOKENS:
        options = replace(options, max_tokens=FBD_MAX_TOKENS)
    keep, skipped = failed_runs(cases, gold or {}, store)
    if not keep:
        return DiagnosisResult([], skipped, None)
    summary = judge_cases(
        store,
        keep,
        rubric=chosen,
        models=models,
        options=options,
        on_start=on_start,
        on_done=on_done,
        source="diagnose",
    )
    by_run: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for outcome in summary.outcomes:
        j = outcome.judgment
        if j.provenance.masked_from is None:
            by_run[(j.case_id, j.provenance.model)].append(j)
    rows = []
    for case in keep:
        for model in models:
            judgments = by_run.get((case.id, model), [])
            if judgments:
                rows.append(run_diagnosis(case, model, judgments, card))
    for step, err in summary.errors:
        skipped.append(Skipped(step.case.id, str(err)))
    digest = (card.card_digest or card.computed_digest()) if card is not None else None
    return DiagnosisResult(with_reviews(store, rows), skipped, summary, digest)


# --- Calibration and routing of step scores ---------------------------------------------------


def stored_diagnoses(
    store: Store, cases: Sequence[Case], *, model: str, rubric: str | Rubric = DEFAULT_FBD_RUBRIC
) -> list[RunDiagnosis]:
    """The diagnoses already stored for ``cases`` by ``model`` with ``rubric`` (no call)."""
    chosen = load_rubric(rubric) if isinstance(rubric, str) else rubric
    rows = []
    for case in cases:
        judgments = [
            j
            for j in store.judgments(rubric_id=chosen.id, model=model, case_id=case.id)
            if j.provenance.rubric_digest == chosen.digest and j.provenance.masked_from is None
        ]
        if judgments:
            rows.append(run_diagnosis(case, model, judgments))
    return with_reviews(store, rows)


def step_card(
    runs: Sequence[StepRun],
    *,
    judge: str,
    source: str,
    gold_name: str,
    gold_digest: str,
    alpha: float,
    rubric: Rubric | None = None,
    valid_days: int | None = None,
) -> StepCard:
    """A first-bad-decision card for one judge's step scores (see calibration.fbd)."""
    mine = [r for r in runs if r.judge == judge]
    if not mine:
        raise InputError(f"no step scores of judge {judge!r}", field="judge")
    labelled = sum(1 for r in mine if r.gold_step is not None)
    if labelled == 0:
        raise InputError(
            "no run has a gold critical step: calibrating needs people's steps "
            "(gold records with critical_step, or gold_step in recorded scores)",
            field="critical_step",
        )
    section = JudgeSection(
        model=judge,
        source=source,
        rubric=(
            RubricRef(id=rubric.id, version=rubric.version, digest=rubric.digest)
            if rubric is not None
            else RubricRef()
        ),
    )
    gold = GoldRef(name=gold_name, digest=gold_digest, n=len(mine), source=source)
    return build_step_card(
        mine,
        judge=section,
        gold=gold,
        alpha=alpha,
        valid_days=DEFAULT_VALID_DAYS if valid_days is None else valid_days,
    )


@dataclass(frozen=True)
class StepCalibration:
    """A first-bad-decision card, where it was written, and the runs it was measured on."""

    card: StepCard
    path: str
    runs: list[StepRun]

    def lines(self) -> list[str]:
        """What ``judge calibrate --kind fbd`` prints."""
        m = self.card.calibration.metrics
        sets = self.card.calibration.sets
        base = self.card.calibration.baselines

        def pct(rate: Mapping[str, Any]) -> str:
            value = rate.get("rate")
            ci = rate.get("ci95")
            if value is None:
                return "-"
            return f"{value:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

        return [
            f"{self.card.judge.model}: {m['n_gold_step']} runs with a critical step "
            f"({m['n_no_single_step']} without one)",
            f"  exact {pct(m['exact'])}, within 1 {pct(m['within_1'])}, "
            f"within 3 {pct(m['within_3'])}, same agent {pct(m['same_agent'])}, "
            f"abstained {pct(m['abstention'])}",
            f"  baselines, exact: random {pct(base['random']['exact'])}, "
            f"first {pct(base['first']['exact'])}, last {pct(base['last']['exact'])}",
            f"  step set: {self.card.policy.statement}",
            f"  mean set {sets['mean_set_share']} of a run; located (one step) "
            f"{pct(sets['located'])}; coverage here {pct(sets['coverage'])}",
        ]


def calibrate_steps(
    *,
    alpha: float,
    recorded: str | None = None,
    store: Store | None = None,
    gold: str | None = None,
    judge: str | None = None,
    rubric: str | Rubric = DEFAULT_FBD_RUBRIC,
    out: str | None = None,
    valid_days: int | None = None,
) -> StepCalibration:
    """Measure a diagnosing judge against people's critical steps and certify its step set:
    from recorded step scores (``recorded``, one JSON line per run and judge), or from the
    diagnoses in ``store`` of the runs of ``gold`` (gold records with ``critical_step``)."""
    if recorded is not None:
        runs = load_recorded_steps(recorded)
        judges = sorted({r.judge for r in runs})
        chosen = judge or (judges[0] if len(judges) == 1 else None)
        if chosen is None:
            raise InputError(
                f"the file holds step scores of {len(judges)} judges: pick one with --judge",
                file=recorded,
                hint=", ".join(judges),
            )
        source, labels, bound = "recorded step scores", Path(recorded), None
    else:
        if store is None or gold is None or judge is None:
            raise InputError(
                "calibrating step scores needs --recorded FILE, or --db, --gold and --judge",
                field="recorded",
            )
        loaded = load_cases(Path(gold))
        if loaded.errors:
            raise loaded.errors[0]
        chosen_rubric = load_rubric(rubric) if isinstance(rubric, str) else rubric
        rows = stored_diagnoses(store, loaded.cases, model=judge, rubric=chosen_rubric)
        if not rows:
            raise InputError(
                f"no stored diagnosis by {judge} of the runs of this gold set: run "
                "judge diagnose first",
                file=gold,
            )
        runs = DiagnosisResult(rows, [], None).step_runs(loaded.critical)
        chosen, source, labels, bound = judge, "judge store", Path(gold), chosen_rubric
    card = step_card(
        runs,
        judge=chosen,
        source=source,
        gold_name=labels.name,
        gold_digest=bytes_digest(labels.read_bytes()),
        alpha=alpha,
        rubric=bound,
        valid_days=valid_days,
    )
    path = out or f"{chosen.replace('/', '_')}.fbd.card.yaml"
    write_step_card(card, path)
    return StepCalibration(card, path, [r for r in runs if r.judge == chosen])


def route_steps_of(
    card: StepCard, *, recorded: str | None = None, store: Store | None = None
) -> list[StepDecision]:
    """Route runs with a first-bad-decision card: recorded step scores (``recorded``), or the
    card judge's stored diagnoses. A run whose set is one step is located; any other goes to
    review with its set."""
    if recorded is not None:
        runs = load_recorded_steps(recorded, judge=card.judge.model)
        if not runs:
            raise InputError(
                f"no step scores of the card's judge {card.judge.model}", file=recorded
            )
        return route_steps(card, runs)
    if store is None:
        raise InputError("route step scores from --recorded FILE or a store", field="recorded")
    rubric_id = card.judge.rubric.id or load_rubric(DEFAULT_FBD_RUBRIC).id
    ids = sorted({j.case_id for j in store.judgments(rubric_id=rubric_id, model=card.judge.model)})
    cases = list(store.get_cases(ids).values())
    rubric = load_rubric(
        f"{rubric_id}@{card.judge.rubric.version}" if card.judge.rubric.version else rubric_id
    )
    rows = stored_diagnoses(store, cases, model=card.judge.model, rubric=rubric)
    return route_steps(card, DiagnosisResult(rows, [], None).step_runs())


# --- What the store holds about some runs (the run-set report) --------------------------------

#: Review items read per query when looking for the diagnoses that await people.
_REVIEW_PAGE = 500


@dataclass
class StoredDiagnoses:
    """Every diagnosis the store holds of some runs, by diagnosing judge, and the ones whose
    review item awaits a person (what the run-set report summarises; nothing is called)."""

    #: The store they were read from.
    location: str
    #: (model, fbd rubric id@version) -> that judge's diagnoses, one per run it diagnosed.
    by_judge: dict[tuple[str, str], list[RunDiagnosis]] = field(default_factory=dict)
    #: (run id, model, rubric id) of the diagnoses with a review item open or in adjudication.
    awaiting_review: set[tuple[str, str, str]] = field(default_factory=set)

    def awaits_review(self, run: RunDiagnosis, rubric: str) -> bool:
        """Is ``run`` (diagnosed with ``rubric``, id@version) in the review queue?"""
        return (run.case_id, run.model, rubric.split("@", 1)[0]) in self.awaiting_review


def _fbd_rubric(ref: str) -> Rubric | None:
    """The fbd rubric ``ref`` (id@version), or None when it is of another kind or the rubric
    folders no longer hold it."""
    try:
        rubric = load_rubric(ref)
    except RubricError:
        return None
    return rubric if kinds.kind(rubric.kind).steps else None


def diagnoses_of(store: Store, case_ids: Iterable[str]) -> StoredDiagnoses:
    """The diagnoses ``store`` holds of the runs ``case_ids``, by every judge and with every
    fbd rubric they were made with (:func:`stored_diagnoses` of each), and which of them await
    a person in the review queue. No model is called."""
    ids = list(dict.fromkeys(case_ids))
    rubrics: dict[str, Rubric | None] = {}
    runs_of: dict[tuple[str, str], list[str]] = defaultdict(list)
    for case_id in ids:
        judges: set[tuple[str, str]] = set()
        for j in store.judgments(case_id=case_id):
            p = j.provenance
            ref = f"{p.rubric_id}@{p.rubric_version}"
            if ref not in rubrics:
                rubrics[ref] = _fbd_rubric(ref)
            chosen = rubrics[ref]
            if chosen is not None and chosen.digest == p.rubric_digest and p.masked_from is None:
                judges.add((p.model, ref))
        for judge_ in judges:
            runs_of[judge_].append(case_id)
    found = StoredDiagnoses(store.location)
    if not runs_of:
        return found
    cases = store.get_cases(ids)
    for (model, ref), diagnosed in sorted(runs_of.items()):
        chosen = rubrics[ref]
        assert chosen is not None
        rows = stored_diagnoses(
            store, [cases[c] for c in diagnosed if c in cases], model=model, rubric=chosen
        )
        if rows:
            found.by_judge[(model, ref)] = rows
    wanted = set(ids)
    rubric_ids = {ref.split("@", 1)[0] for _, ref in found.by_judge}
    for status in ("open", "adjudicate"):
        offset = 0
        while True:
            page = store.review_items(status=status, limit=_REVIEW_PAGE, offset=offset)
            found.awaiting_review |= {
                (i.case_id, i.model or "", i.rubric_id or "")
                for i in page
                if i.case_id in wanted and i.rubric_id in rubric_ids
            }
            if len(page) < _REVIEW_PAGE:
                break
            offset += _REVIEW_PAGE
    return found
