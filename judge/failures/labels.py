"""Failed runs as :class:`RunRecord`: three labels, an owner and structured features.

Two sources. A **store**: each run some pass/fail judge found failed, or that an ``fbd`` rubric
diagnosed, with its first-bad-decision report (:func:`judge.diagnosis.diagnoses_of`): the
report's symptom, decision and violated invariant become ``symptom``, ``critical_cause`` and
``root_mechanism``, its owner the run's owner. **Recorded files** read by the trace importers
(Who&When folders, AgentRx's tau-bench retail files): the people's critical step and reason are
the report.

The validity filter comes first: a run whose diagnosis ended in a parse or infrastructure error,
or that has no diagnosis at all, is kept with its ``excluded`` reason and never counted as an
agent failure. Runs that passed are kept too (``failed`` False): they count in a cluster's
exposure, never in its failures.

Features are the structured fields of the trace and task, all strings. Run features, which
every run has, failed or not: the task's slices (benchmark, level, language...), the run's
horizon, repeated calls (retries), whether an error shows anywhere in it, and each tool class
it called (``uses.<tool>: yes``). Critical-step features, which only a diagnosed failure has,
named ``step.*`` (:data:`judge.failures.models.STEP_PREFIX`): the step's kind and role, the
tool it called, whether an error came before it, its stage in the run, and its report's owner
and violated invariant. A cluster's exposure is counted over run features only. The system
under test (the agent's model, its harness) goes to ``system``, never to features: the namer is
blind to it. A run's ``judge_score`` is the mean P(pass) of its judges' verdicts that gave
label probabilities (None when none did).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from calibration.inputs import positive_prob
from judge.diagnosis import RunDiagnosis, diagnoses_of
from judge.errors import InputError
from judge.failures.models import STEP_PREFIX, Exclusion, RunRecord
from judge.store import Store
from judge.traces import CriticalStep, ImportResult, import_traces, importers
from judge.traces.stepwise import normalise_category
from judge.types import Case, Owner, TraceTurn

#: Slices that describe the system under test, not the task: they go to ``system``.
SYSTEM_SLICES = frozenset({"model", "agent_model", "harness", "system", "agent", "tool_versions"})
#: Slices that hold people's labels of the failure: never features (they are what clusters are
#: measured against).
LABEL_SLICES = frozenset({"root_cause_category", "critical_owner", "reward", "label", "gold"})
#: Characters of the critical step (and of each neighbour) kept in a run's local summary.
WINDOW_CHARS = 400
_TOOL = re.compile(r"^\[([A-Za-z0-9_.\-]+)\]", re.MULTILINE)
_ERROR = re.compile(r"\b(error|exception|traceback|failed|exitcode: [1-9])\b", re.IGNORECASE)


def _bucket(n: int, edges: Sequence[tuple[int, str]], last: str) -> str:
    return next((name for edge, name in edges if n < edge), last)


def _tool_of(turn: TraceTurn) -> str:
    match = _TOOL.search(turn.content) if turn.kind == "tool_call" else None
    return match.group(1) if match else "none"


def _stage(step: int, n: int) -> str:
    share = step / max(n - 1, 1)
    return "early" if share < 1 / 3 else ("middle" if share < 2 / 3 else "late")


def _errored(turns: Sequence[TraceTurn]) -> bool:
    return any(t.kind == "error" or _ERROR.search(t.content[:2000]) for t in turns)


def run_features(trace: Sequence[TraceTurn]) -> dict[str, str]:
    """Structured fields every run's trace has, failed or not: its horizon, retries, whether
    an error shows in it, and each tool class it called (``uses.<tool>: yes``)."""
    n = len(trace)
    calls = [t for t in trace if t.kind == "tool_call"]
    texts = [t.content for t in calls]
    features = {
        "horizon": _bucket(n, ((10, "short"), (30, "medium")), "long"),
        "retries": _bucket(len(texts) - len(set(texts)), ((1, "0"), (3, "1-2")), "3+"),
        "errors": "yes" if _errored(trace) else "no",
    }
    tools = sorted({_tool_of(t) for t in calls} - {"none"})
    return features | {f"uses.{tool}": "yes" for tool in tools}


def step_features(trace: Sequence[TraceTurn], step: int | None) -> dict[str, str]:
    """Structured fields of a failed run's critical step ``step`` (0-based), named ``step.*``:
    only runs with a first bad decision have them."""
    n = len(trace)
    if step is None or not 0 <= step < n:
        return {f"{STEP_PREFIX}stage": "unknown"}
    turn = trace[step]
    found = {
        "stage": _stage(step, n),
        "kind": turn.kind or "message",
        "role": turn.role or "unknown",
        "tool": _tool_of(turn),
        "error_before": "yes" if _errored(trace[:step]) else "no",
    }
    return {f"{STEP_PREFIX}{k}": v for k, v in found.items()}


def trace_features(trace: Sequence[TraceTurn], step: int | None) -> dict[str, str]:
    """A run's features from its trace: :func:`run_features`, and for a failure with a
    critical step ``step``, :func:`step_features`."""
    features = run_features(trace)
    return features if step is None else features | step_features(trace, step)


def window(trace: Sequence[TraceTurn], step: int | None) -> str:
    """The critical step's text with its neighbours, clipped: the run's local summary."""
    if step is None or not 0 <= step < len(trace):
        return ""
    parts = [trace[i].content[:WINDOW_CHARS] for i in range(max(step - 1, 0), step + 1)]
    return "\n".join(parts)


def _task_features(case: Case) -> tuple[dict[str, str], dict[str, str]]:
    """(features, system) from a case's slices and agent model."""
    features: dict[str, str] = {}
    system: dict[str, str] = {}
    for key, value in sorted(case.slices.items()):
        if value is None or key in LABEL_SLICES or isinstance(value, (dict, list)):
            continue
        (system if key in SYSTEM_SLICES else features)[key] = str(value)
    if case.agent_model:
        system["model"] = case.agent_model
    return features, system


def _owner(value: str | None) -> Owner | None:
    owners: dict[str, Owner] = {
        "model": "model",
        "harness": "harness",
        "tool": "tool",
        "environment": "environment",
        "task": "task",
        "user": "user",
    }
    return owners.get((value or "").lower())


def unlabelled(
    case: Case, *, excluded: Exclusion | None, run_set: str, order: int = 0
) -> RunRecord:
    """A run without labels: a passed run (``excluded`` None; its run-level features count
    for exposure) or a failed one the validity filter keeps out (``excluded``, the reason)."""
    features, system = _task_features(case)
    if excluded is None:
        features |= trace_features(case.trace, None)
    return RunRecord(
        case_id=case.id,
        run_set=run_set,
        order=order,
        system=system,
        failed=excluded is not None,
        excluded=excluded,
        features=features,
    )


# --- From a store ------------------------------------------------------------------------------


def _record_from_diagnosis(case: Case, run: RunDiagnosis, source: str) -> RunRecord:
    if run.status in ("parse_error", "infra_error"):
        return unlabelled(case, excluded=run.status, run_set=source)
    report = run.report
    if run.status != "ok" or report is None or report.step_index is None:
        return unlabelled(case, excluded="no_diagnosis", run_set=source)
    features, system = _task_features(case)
    step = run.confirmed_step if run.confirmed_step is not None else report.step_index
    features |= trace_features(case.trace, step)
    invariant = report.violated_invariant
    note = report.invariant_note
    mechanism = note if invariant == "other" and note else invariant
    if mechanism:
        features[f"{STEP_PREFIX}invariant"] = mechanism
    if report.owner:
        features[f"{STEP_PREFIX}owner"] = report.owner
    chain = " ".join(c.text for c in report.causal_chain)
    summary = " ".join(
        p for p in (report.decision, mechanism or "", chain, window(case.trace, step)) if p
    )
    return RunRecord(
        case_id=case.id,
        run_set=source,
        system=system,
        failed=True,
        symptom=report.symptom.text if report.symptom else None,
        critical_cause=report.decision or None,
        root_mechanism=mechanism,
        owner=report.owner,
        features=features,
        summary=summary,
        fbd_confirmed=run.fbd_status == "confirmed",
    )


def _outcomes(
    store: Store,
) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, float]]:
    """Per judged run: the labels of its ok verdicts, the statuses of its failed calls, and
    the mean P(pass) of its pass/fail verdicts that gave label probabilities."""
    labels: dict[str, set[str]] = {}
    errors: dict[str, set[str]] = {}
    probs: dict[str, list[float]] = {}
    for j in store.judgments():
        if j.provenance.masked_from is not None:
            continue
        labels.setdefault(j.case_id, set())
        if j.status == "ok" and j.verdict is not None:
            labels.setdefault(j.case_id, set()).add(j.verdict.label)
            if j.verdict.label in ("pass", "fail"):
                p = positive_prob(j.verdict.label_probs)
                if p is not None:
                    probs.setdefault(j.case_id, []).append(p)
        elif j.status in ("parse_error", "infra_error"):
            errors.setdefault(j.case_id, set()).add(j.status)
    return labels, errors, {c: sum(ps) / len(ps) for c, ps in probs.items()}


def records_from_store(store: Store) -> list[RunRecord]:
    """Every judged run of ``store`` as a record: failed runs with their labels (from the
    diagnosis of the first diagnosing judge, by model name), excluded ones with their reason,
    passed ones as exposure; each with its judges' P(pass) as ``judge_score`` where one was
    stored. No model is called."""
    labels, errors, scores = _outcomes(store)
    ids = sorted(set(labels) | set(errors))
    stored = diagnoses_of(store, ids)
    diagnosed: dict[str, RunDiagnosis] = {}
    for _judge, runs in sorted(stored.by_judge.items()):
        for run in runs:
            diagnosed.setdefault(run.case_id, run)
    cases = store.get_cases(ids)
    out: list[RunRecord] = []
    for case_id in ids:
        case = cases.get(case_id)
        said = labels.get(case_id, set()) & {"pass", "fail"}
        if case is None:
            continue
        if case_id in diagnosed:
            out.append(_record_from_diagnosis(case, diagnosed[case_id], store.location))
        elif said == {"pass"}:
            out.append(unlabelled(case, excluded=None, run_set=store.location))
        elif "fail" in said or case_id in errors:
            reason: Exclusion = "no_diagnosis"
            if "fail" not in said:
                reason = "parse_error" if "parse_error" in errors[case_id] else "infra_error"
            out.append(unlabelled(case, excluded=reason, run_set=store.location))
    return [
        r.model_copy(update={"judge_score": scores[r.case_id]}) if r.case_id in scores else r
        for r in out
    ]


# --- From recorded files -----------------------------------------------------------------------


def _recorded(case: Case, critical: CriticalStep) -> dict[str, Any]:
    """The recorded report of a run: (symptom, cause, mechanism, owner, category, summary)."""
    root = case.meta.get("root_cause")
    if isinstance(root, dict):  # AgentRx: the root cause of its ground truth
        category = str(case.slices.get("root_cause_category") or "") or None
        user = case.slices.get("critical_owner") == "user"
        cause = str(root.get("step_reason") or root.get("reason") or "")
        return {
            "symptom": str(root.get("summary") or "the task failed (reward 0)"),
            "critical_cause": cause or None,
            "root_mechanism": category,
            "owner": "user" if user else "model",
            "category": category,
            "reason": " ".join(str(root.get(k) or "") for k in ("step_reason", "reason")),
        }
    reason = str(case.meta.get("mistake_reason") or "")
    agent = critical.agent or "unknown"
    return {  # Who&When: the mistaken agent and the people's reason
        "symptom": "wrong final answer",
        "critical_cause": reason or None,
        "root_mechanism": None,
        "owner": "tool" if agent.lower() == "computer_terminal" else "model",
        "category": normalise_category(agent) or None,
        "reason": reason,
    }


def records_from_cases(
    cases: Iterable[Case],
    gold: Mapping[str, str],
    critical: Mapping[str, CriticalStep],
    *,
    run_set: str = "",
    order: int = 0,
    summary: str = "report",
) -> list[RunRecord]:
    """Records of imported runs with people's critical steps. ``summary``: ``report`` (the
    recorded reason and the critical-step window) or ``window`` (the trace window only, no
    person's words)."""
    out: list[RunRecord] = []
    for case in cases:
        label = gold.get(case.id)
        step = critical.get(case.id)
        if label == "pass" or step is None:
            excluded: Exclusion | None = None if label == "pass" else "no_diagnosis"
            out.append(unlabelled(case, excluded=excluded, run_set=run_set, order=order))
            continue
        features, system = _task_features(case)
        report = _recorded(case, step)
        owner = _owner(report["owner"])
        features |= trace_features(case.trace, step.step)
        if owner:
            features[f"{STEP_PREFIX}owner"] = owner
        text = window(case.trace, step.step)
        out.append(
            RunRecord(
                case_id=case.id,
                run_set=run_set,
                order=order,
                system=system,
                failed=True,
                symptom=report["symptom"],
                critical_cause=report["critical_cause"],
                root_mechanism=report["root_mechanism"],
                owner=owner,
                features=features,
                summary=text if summary == "window" else f"{report['reason']}\n{text}",
                fbd_confirmed=True,
                category=report["category"],
            )
        )
    return out


def _load(path: Path) -> ImportResult:
    """A recorded file, or a folder one importer recognises (Who&When's N.json files)."""
    if not path.is_dir():
        return import_traces(path)
    for _name, importer in sorted(importers().items()):
        sniff = getattr(importer, "sniff", None)
        if sniff is not None and sniff(path):
            loaded: ImportResult = importer.load(path)
            return loaded
    raise InputError(
        "no importer recognises this folder",
        file=str(path),
        hint="give a folder of Who&When runs (N.json), or a file of runs",
    )


def records_from_files(paths: Sequence[str | Path], *, summary: str = "report") -> list[RunRecord]:
    """Records of recorded run sets with people's critical steps (Who&When, AgentRx...), one
    run set per path in the order given (its ``order``). A file none of whose runs is labelled
    with a critical step is refused: it holds no first-bad-decision reports."""
    out: list[RunRecord] = []
    for order, path in enumerate(paths):
        result = _load(Path(path))
        if not result.cases:
            problems = "; ".join(str(e) for e in result.errors[:3]) or "no runs"
            raise InputError(f"no runs could be read: {problems}", file=str(path))
        if not result.critical:
            raise InputError(
                "no run in it has a first-bad-decision report (a labelled critical step)",
                file=str(path),
                hint="diagnose the runs first (judge diagnose FILE --db DB), then run "
                "judge failures --db DB",
            )
        out += records_from_cases(
            result.cases,
            result.gold,
            result.critical,
            run_set=str(path),
            order=order,
            summary=summary,
        )
    return out


def failure_records(
    store: Store | None = None, files: Sequence[str | Path] = (), *, summary: str = "report"
) -> list[RunRecord]:
    """The runs to analyse: the recorded run sets ``files`` (in time or version order) when
    given, else every judged run of ``store`` with its stored diagnosis."""
    if files:
        return records_from_files(files, summary=summary)
    if store is None:
        raise InputError("nothing to read: give a store (--db) or recorded run files")
    return records_from_store(store)
