"""Run perturbation probes on a judge: perturb real gold cases, judge originals and perturbations
in one batch, and measure, per probe, how often the verdict moved as it should.

``run_probes`` is the library call under ``judge probe``. Every perturbed case is judged and
stored as its own case (``<id>#probe:<name>@v<version>``, lineage in ``meta["probe"]``); the
originals are judged as they are. Scores are pooled per case the way routing pools them (mean
P(pass), or P(A) for pairs, over prompt variants, orders and samples); the verdict is the side
of 0.5 the score is on.

- degradation: over the originals the judge passed, the share whose perturbation it fails;
- invariance: over every case judged both ways, the share whose verdict is unchanged (for the
  answer-order swap: swapped);
- both: the mean shift of P(pass) from original to perturbation (the swap: from 1 - P(A)).
Intervals are 95% and clustered by task (``slices.task_id``, else the case): see
:mod:`judge.probes.stats`.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from calibration.card import ProbeEntry, ProbesSection
from calibration.confidence import score_items
from calibration.inputs import judgment_to_row
from judge.cases import load_cases
from judge.digests import bytes_digest, utcnow
from judge.errors import InputError
from judge.judging import JudgeOptions, Outcome, RunSummary, Step, judge_cases
from judge.kinds import for_case
from judge.probes.stats import (
    Rate,
    Shift,
    clustered_mean,
    clustered_rate,
    status_of,
    verdict_of,
)
from judge.probes.transforms import (
    Applied,
    Probe,
    ProbeContext,
    Skipped,
    apply_probe,
    select_probes,
)
from judge.rubrics import Rubric, load_rubric
from judge.store import Store
from judge.types import Case, Judgment

#: A probe passes when the lower end of its as-expected rate's 95% interval reaches this.
DEFAULT_BAR = 0.8


@dataclass(frozen=True)
class ProbeOptions:
    """Which probes, on how many cases, against which bar."""

    #: Probe names (None: every probe).
    probes: Sequence[str] | None = None
    #: The first N cases of the gold file (None: all).
    limit: int | None = None
    bar: float = DEFAULT_BAR


@dataclass(frozen=True)
class CaseResult:
    """One original and its perturbation, as judged."""

    original_id: str
    perturbed_id: str
    cluster: str
    original_score: float | None
    perturbed_score: float | None
    original_verdict: str | None
    perturbed_verdict: str | None
    #: Counts towards the as-expected rate (degradations: the original was judged pass).
    eligible: bool
    as_expected: bool | None
    shift: float | None


@dataclass
class ProbeReport:
    """One probe's results."""

    probe: Probe
    applied: int
    skipped: int
    skip_reasons: dict[str, int]
    #: Applied cases without a score on one side (parse, provider errors, abstentions).
    unscored: int
    as_expected: Rate
    shift: Shift
    status: str
    results: list[CaseResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The report's entry in probes.json."""
        p = self.probe
        return {
            "name": p.name,
            "version": p.version,
            "seed": p.seed,
            "kind": p.kind,
            "case_kind": p.case_kind,
            "description": p.description,
            "applied": self.applied,
            "skipped": self.skipped,
            "skip_reasons": dict(self.skip_reasons),
            "unscored": self.unscored,
            "as_expected": {
                "rate": self.as_expected.rate,
                "k": self.as_expected.k,
                "n": self.as_expected.n,
                "ci95": list(self.as_expected.ci95) if self.as_expected.ci95 else None,
                "design_effect": self.as_expected.design_effect,
                "method": "Wilson on n / design effect over task clusters",
            },
            "p_pass_shift": {
                "value": self.shift.mean,
                "n": self.shift.n,
                "ci95": list(self.shift.ci95) if self.shift.ci95 else None,
                "method": "task-cluster percentile bootstrap, 2000 resamples",
            },
            "status": self.status,
        }

    def card_entry(self) -> ProbeEntry:
        """The report as a card's probe entry."""
        r, s = self.as_expected, self.shift
        return ProbeEntry(
            name=self.probe.name,
            version=self.probe.version,
            kind=self.probe.kind,
            applied=self.applied,
            skipped=self.skipped,
            n=r.n,
            as_expected_rate=r.rate,
            as_expected_ci95=list(r.ci95) if r.ci95 else None,
            p_pass_shift=s.mean,
            p_pass_shift_ci95=list(s.ci95) if s.ci95 else None,
            status=self.status,
        )


@dataclass
class ProbeRun:
    """A probe run: what was probed, on which judge, and each probe's report."""

    gold: str
    gold_digest: str
    model: str
    rubric: str
    n_cases: int
    n_passing: int
    bar: float
    reports: list[ProbeReport]
    summary: RunSummary | None
    #: Median trace length (turns) of the cases probed.
    median_turns: int | None
    seconds: float = 0.0
    run_at: Any = None
    #: Wall seconds of each part: "prepare" (load, perturb), "judge", "analyse".
    timings: dict[str, float] = field(default_factory=dict)

    def failed(self) -> list[str]:
        """Names of the probes this judge fails."""
        return [r.probe.name for r in self.reports if r.status == "fail"]

    def to_json(self) -> list[dict[str, Any]]:
        """probes.json: one object per probe."""
        return [r.to_json() for r in self.reports]

    def card_section(self) -> ProbesSection:
        """The card's probes section."""
        return ProbesSection(
            gold=self.gold,
            gold_digest=self.gold_digest,
            model=self.model,
            rubric=self.rubric,
            run_at=(self.run_at or utcnow()).replace(microsecond=0),
            bar=self.bar,
            failed=self.failed(),
            inconclusive=[r.probe.name for r in self.reports if r.status == "inconclusive"],
            long_trace_turns=self.median_turns,
            probes=[r.card_entry() for r in self.reports],
        )


@dataclass(frozen=True)
class Plan:
    """What a probe run will judge."""

    probes: list[Probe]
    originals: list[Case]
    applied: list[Applied]
    skipped: list[Skipped]
    gold: Mapping[str, str]

    def applicability(self) -> list[dict[str, Any]]:
        """Per probe: cases applied to and skipped (with reasons), and the share applied among
        the passing runs (agent-run probes) or the pairs (pairwise probes): the cases a
        degradation is meant for, and the same yardstick for invariances."""
        passing = {
            c.id for c in self.originals if c.kind == "pairwise" or self.gold.get(c.id) == "pass"
        }
        out = []
        for probe in self.probes:
            mine = [a for a in self.applied if a.probe is probe]
            reasons = Counter(s.reason for s in self.skipped if s.probe is probe)
            meant = [c for c in self.originals if c.kind == probe.case_kind and c.id in passing]
            hit = sum(1 for a in mine if a.original.id in passing)
            out.append(
                {
                    "name": probe.name,
                    "kind": probe.kind,
                    "applied": len(mine),
                    "skipped": sum(reasons.values()),
                    "skip_reasons": dict(reasons),
                    "meant_for": len(meant),
                    "applied_to_meant": hit,
                    "applicability": hit / len(meant) if meant else None,
                }
            )
        return out


def case_cluster(case: Case) -> str:
    """The task a case belongs to (the unit the intervals resample)."""
    task = case.slices.get("task_id")
    return str(task) if task is not None else case.id


def plan_probes(
    cases: Sequence[Case],
    gold: Mapping[str, str],
    probes: Sequence[Probe],
    judge_model: str | None,
) -> Plan:
    """Every probe applied to every case it can be (pure: nothing judged or stored)."""
    applied: list[Applied] = []
    skipped: list[Skipped] = []
    for case in cases:
        context = ProbeContext(gold=gold.get(case.id), judge_model=judge_model)
        for probe in probes:
            out = apply_probe(probe, case, context)
            (applied if isinstance(out, Applied) else skipped).append(out)  # type: ignore[arg-type]
    return Plan(list(probes), list(cases), applied, skipped, dict(gold))


def check_gold(cases: Sequence[Case], gold: Mapping[str, str], probes: Sequence[Probe]) -> None:
    """Refuse a set a degradation probe cannot use: agent runs with no passing run."""
    runs = [c for c in cases if c.kind == "agent_run"]
    degradations = [
        p.name for p in probes if p.kind == "degradation" and p.case_kind == "agent_run"
    ]
    if runs and degradations and not any(gold.get(c.id) == "pass" for c in runs):
        labelled = Counter(gold.get(c.id, "(no label)") for c in runs)
        shown = ", ".join(f"{label} {n}" for label, n in sorted(labelled.items()))
        raise InputError(
            f"the gold set has no passing run ({shown}): degradation probes turn a passing run "
            "into a failing one and need runs labelled pass",
            field="gold",
            hint="give a gold set with passing runs, or choose invariance probes only "
            "(--probe length-padding --probe verbose-final ...)",
        )


def pooled_scores(
    judged: Sequence[tuple[str, Judgment]], kinds: Mapping[str, str]
) -> dict[str, float]:
    """Per case: the pooled P(pass) (or P(A)) over its usable judgments, given as (case id,
    judgment) pairs: two cases with the same content share judgments (one cache key), so the
    case is the step's, not the judgment's. Masked checks and cases without a usable verdict
    are left out."""
    by_kind: dict[str, list[Any]] = defaultdict(list)
    for case_id, j in judged:
        if j.provenance.masked_from is not None or case_id not in kinds:
            continue
        row = replace(judgment_to_row(j), item_id=case_id, task_id=case_id)
        by_kind[kinds[case_id]].append(row)
    out: dict[str, float] = {}
    for kind, rows in by_kind.items():
        for item in score_items(rows, kind=kind).items:  # type: ignore[arg-type]
            out[item.item_id] = item.score
    return out


def analyse(plan: Plan, scores: Mapping[str, float], bar: float = DEFAULT_BAR) -> list[ProbeReport]:
    """Each probe's report from the pooled scores of originals and perturbations."""
    reports = []
    for probe in plan.probes:
        mine = [a for a in plan.applied if a.probe is probe]
        reasons = Counter(s.reason for s in plan.skipped if s.probe is probe)
        results: list[CaseResult] = []
        for a in mine:
            kind = for_case(a.original.kind).scoring
            s0, s1 = scores.get(a.original.id), scores.get(a.case.id)
            v0 = verdict_of(s0, kind) if s0 is not None else None
            v1 = verdict_of(s1, kind) if s1 is not None else None
            both = v0 is not None and v1 is not None
            if probe.kind == "degradation":
                eligible = both and v0 == for_case(a.original.kind).positive
                hit = (v1 == for_case(a.original.kind).negative) if eligible else None
            else:
                eligible = both
                hit = (v1 == probe.label_map.get(v0 or "", v0)) if eligible else None
            shift = None
            if s0 is not None and s1 is not None:
                shift = s1 - (1.0 - s0 if probe.flips_score else s0)
            results.append(
                CaseResult(
                    a.original.id,
                    a.case.id,
                    case_cluster(a.original),
                    s0,
                    s1,
                    v0,
                    v1,
                    eligible,
                    hit,
                    shift,
                )
            )
        counted = [r for r in results if r.eligible]
        rate = clustered_rate([bool(r.as_expected) for r in counted], [r.cluster for r in counted])
        shifted = [(r.shift, r.cluster) for r in results if r.shift is not None]
        mean_shift = clustered_mean([s for s, _ in shifted], [c for _, c in shifted])
        reports.append(
            ProbeReport(
                probe=probe,
                applied=len(mine),
                skipped=sum(reasons.values()),
                skip_reasons=dict(reasons),
                unscored=sum(1 for r in results if r.shift is None),
                as_expected=rate,
                shift=mean_shift,
                status=status_of(rate, bar),
                results=results,
            )
        )
    return reports


def shared_prefix(original: Case, perturbed: Case) -> int:
    """How much of the original's prompt the perturbation leaves as it was, in the order the
    prompt shows it (task, diff, trace turns): the number of leading parts unchanged."""
    parts = 0
    for a, b in ((original.task, perturbed.task), (original.diff, perturbed.diff)):
        if a != b:
            return parts
        parts += 1
    for turn, other in zip(original.trace, perturbed.trace, strict=False):
        if turn != other:
            break
        parts += 1
    return parts


def judging_order(originals: Sequence[Case], applied: Sequence[Applied]) -> list[Case]:
    """Each original, then its perturbations, those that keep more of its prompt first: a
    local model judging one case after another reuses the prompt prefix it has already read
    (llama.cpp keeps the previous prompt's KV cache), so a perturbation near the end of a
    trace costs little more than its new tokens. Hosted judges are indifferent to the order."""
    by_original: dict[str, list[Applied]] = defaultdict(list)
    for a in applied:
        by_original[a.original.id].append(a)
    out: list[Case] = []
    for case in originals:
        mine = sorted(by_original[case.id], key=lambda a: -shared_prefix(case, a.case))
        out += [case, *(a.case for a in mine)]
    return out


def load_gold_cases(
    path: str | Path, limit: int | None = None
) -> tuple[list[Case], dict[str, str], str]:
    """The cases and gold labels of a gold file, and the file's digest."""
    loaded = load_cases(path, limit=limit)
    if loaded.errors:
        first = loaded.errors[0]
        raise first
    if not loaded.cases:
        raise InputError("the file holds no case", file=str(path))
    digest = bytes_digest(Path(path).read_bytes())
    return list(loaded.cases), dict(loaded.gold), digest


def run_probes(
    store: Store,
    gold: str | Path,
    *,
    rubric: str | Rubric,
    model: str,
    options: JudgeOptions | None = None,
    probe_options: ProbeOptions | None = None,
    on_start: Callable[[list[Step]], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> ProbeRun:
    """Probe the judge ``model`` with ``rubric`` on the cases of the gold file ``gold``: build
    the perturbations, judge originals and perturbations in one batch (stored in ``store``,
    already-paid judgments reused), and report each probe (:class:`ProbeRun`)."""
    probe_options = probe_options or ProbeOptions()
    started = time.perf_counter()
    probes = select_probes(probe_options.probes)
    cases, labels, digest = load_gold_cases(gold, probe_options.limit)
    check_gold(cases, labels, probes)
    chosen = load_rubric(rubric) if isinstance(rubric, str) else rubric
    plan = plan_probes(cases, labels, probes, model)
    used = {a.original.id for a in plan.applied}
    originals = [c for c in cases if c.id in used]
    to_judge = judging_order(originals, plan.applied)
    timings = {"prepare": time.perf_counter() - started}
    summary = None
    scores: dict[str, float] = {}
    if to_judge:
        summary = judge_cases(
            store,
            to_judge,
            rubric=chosen,
            models=[model],
            options=options,
            on_start=on_start,
            on_done=on_done,
            source=f"judge probe {gold}",
        )
        kinds = {c.id: for_case(c.kind).scoring for c in to_judge}
        scores = pooled_scores([(o.step.case.id, o.judgment) for o in summary.outcomes], kinds)
    timings["judge"] = time.perf_counter() - started - timings["prepare"]
    reports = analyse(plan, scores, probe_options.bar)
    timings["analyse"] = time.perf_counter() - started - timings["prepare"] - timings["judge"]
    turns = [len(c.trace) for c in originals if c.kind == "agent_run"]
    return ProbeRun(
        gold=Path(gold).name,
        gold_digest=digest,
        model=model,
        rubric=chosen.ref,
        n_cases=len(cases),
        n_passing=sum(1 for c in cases if labels.get(c.id) == "pass"),
        bar=probe_options.bar,
        reports=reports,
        summary=summary,
        median_turns=int(statistics.median(turns)) if turns else None,
        seconds=time.perf_counter() - started,
        run_at=utcnow(),
        timings=timings,
    )
