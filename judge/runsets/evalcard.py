"""The eval card: every figure of a scored run set with its contract (DIAGNOSIS.md section 4).

``judge score --out-dir DIR`` and ``judge gate`` write ``eval-card.yaml``; it is built from the
run-set report alone (:class:`~judge.runsets.models.RunSetReport`, and its gate when one ran),
so every number in it is one the report computed. Sections, in order: identity, claim,
task_set (population, version, sources, validity audit counts), systems, protocol, scoring,
results (per treatment: macro pass@1, pass^k and cost per verified success, each with its
interval; the gate's paired difference), failures, statistics, artifacts (files with
digests) and decision.

What the report does not know is written as ``null`` (or an empty list) and its reason is
in the section's ``unknown`` mapping under the same key: a figure is never invented.
:func:`missing_reasons` lists the nulls that lack one (none, for a card this module wrote).
``eval-card.schema.json`` beside this module (package data) is the JSON schema that every
card validates against.

Failure clusters come from elsewhere (:mod:`judge.failures` ranks them): pass a
:data:`ClusterSource` as ``clusters=`` and its rows (``cluster_id``, ``definition``,
``priority``, ``override``) become ``failures.top_clusters``; without one the list is empty
and the reason says why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from judge.digests import bytes_digest, digest
from judge.errors import InputError
from judge.runsets.models import GroupSection, MacroFigure, RunSetReport
from judge.version import __version__

#: The card's format version (``card_version`` in every card).
CARD_VERSION = 1
#: The card's file name, in the report's folder.
CARD_FILE = "eval-card.yaml"
#: The JSON schema every card validates against (package data).
SCHEMA_FILE = Path(__file__).with_name("eval-card.schema.json")

#: A source of ranked failure clusters for the card: rows of ``{cluster_id, definition,
#: priority, override}``, highest priority first (``judge.failures``' ``top_clusters``).
ClusterSource = Callable[[RunSetReport], Sequence[Mapping[str, Any]]]
NO_CLUSTER_SOURCE = (
    "no failure clusters were given to the card (failure clustering is a separate step; "
    "its ranked clusters are not part of the run-set report)"
)
#: What the report page says above the card's table.
CARD_NOTE = (
    f"Every figure with its contract, as {CARD_FILE} beside this report holds it (schema: "
    "judge/runsets/eval-card.schema.json); a figure that is not known says why."
)
NO_GATE = "no gate ran (judge gate, or judge score --baseline --candidate --margin)"


def load_schema() -> dict[str, Any]:
    """The eval card's JSON schema."""
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


def _section(fields: Mapping[str, Any], unknown: Mapping[str, str | None]) -> dict[str, Any]:
    """A card section: ``fields``, and for each key of ``unknown`` with a reason, that key
    set to null (or kept when it is an empty list) and the reason in ``unknown``."""
    out = dict(fields)
    reasons = {key: reason for key, reason in unknown.items() if reason}
    for key in reasons:
        if out.get(key) != []:
            out[key] = None
    out["unknown"] = reasons
    return out


def _interval(ci: Sequence[float] | None) -> list[float] | None:
    return [float(ci[0]), float(ci[1])] if ci else None


def _figure(fig: MacroFigure | None, what: str) -> dict[str, Any]:
    """A macro figure with its interval and method; null value with its reason when undefined."""
    if fig is None:
        return _section({"value": None, "ci95": None}, {"value": f"{what} was not computed"})
    fields = {
        "value": fig.value,
        "ci95": _interval(fig.ci95),
        "method": fig.method,
        "n_tasks": fig.n_tasks,
        "n_omitted": fig.n_omitted,
    }
    return _section(
        fields,
        {
            "value": fig.note or f"{what} is undefined on these tasks"
            if fig.value is None
            else None,
            "ci95": "no interval: fewer than two tasks, or no resamples"
            if fig.value is not None and not fig.ci95
            else None,
        },
    )


def _k(figures: Sequence[MacroFigure], k: int) -> MacroFigure | None:
    return next((f for f in figures if f.k == k), None)


def _identity(report: RunSetReport) -> dict[str, Any]:
    return _section(
        {
            "name": report.title,
            "result_id": digest(report.model_dump(mode="json")),
            "owner": None,
            "executed_at": report.created_at,
            "runset": report.runset,
        },
        {"owner": "the run set and the report record no owner"},
    )


def _claim(report: RunSetReport) -> dict[str, Any]:
    gate = report.gate
    benchmarks = ", ".join(report.benchmarks)
    scope = (
        f"the {report.overall.tasks} tasks of {benchmarks} in run set {report.runset}, "
        f"treatments {', '.join(report.treatments)}, k up to {max(report.params.ks, default=1)}"
    )
    if gate is None:
        primary = f"macro pass@1 of each treatment on run set {report.runset}"
        unsupported = [
            "any ship or no-regression decision: " + NO_GATE,
            "tasks, benchmarks or traffic outside this run set",
        ]
    else:
        ni = gate.non_inferiority
        primary = (
            f"{gate.candidate} is non-inferior to {gate.baseline} on {ni.metric} within a "
            f"margin of {gate.margin} ({ni.n_shared} shared tasks)"
        )
        unsupported = list(gate.cannot_support)
    return _section(
        {
            "primary": primary,
            "decision": gate.decision if gate else None,
            "supported_scope": scope,
            "unsupported_claims": unsupported,
        },
        {"decision": None if gate else NO_GATE},
    )


def _task_set(report: RunSetReport) -> dict[str, Any]:
    o = report.overall
    return _section(
        {
            "population": None,
            "version": None,
            "n_tasks": o.tasks,
            "benchmarks": list(report.benchmarks),
            "sources": [report.runset],
            "validity_audit": {
                "raw_runs": o.raw,
                "excluded": o.excluded,
                "excluded_infra_error": o.excluded_infra_error,
                "analysed": o.analysis,
                "timeouts_counted_as_fail": o.timeouts_counted_as_fail,
                "unscored": o.unscored,
                "scored": o.scored,
            },
            "exclusion_rules": dict(report.rules),
        },
        {
            "population": "the run set names no target population, sampling frame or "
            "traffic weights: the figures describe these tasks only",
            "version": "the run-set file records no task-set version",
        },
    )


def _systems(report: RunSetReport) -> dict[str, Any]:
    gate = report.gate
    models: dict[str, list[str]] = {}
    for run in report.runs:
        if run.agent_model:
            models.setdefault(run.treatment, [])
            if run.agent_model not in models[run.treatment]:
                models[run.treatment].append(run.agent_model)
    shared = _section(
        {
            "benchmarks": list(report.benchmarks),
            "judge_models": list(report.judging.models) if report.judging else [],
            "rubric": report.rubric.ref if report.rubric else None,
            "calibration_card": report.card.card_digest if report.card else None,
            "shared_tasks": gate.non_inferiority.n_shared if gate else None,
        },
        {
            "rubric": None if report.rubric else "no rubric (scored from gold labels)",
            "calibration_card": None if report.card else "no calibration card",
            "shared_tasks": None if gate else NO_GATE,
        },
    )
    return _section(
        {
            "baseline": gate.baseline if gate else None,
            "candidate": gate.candidate if gate else None,
            "treatments": list(report.treatments),
            "agent_models": models,
            "shared": shared,
        },
        {"baseline": None if gate else NO_GATE, "candidate": None if gate else NO_GATE},
    )


def _repetitions(sec: GroupSection) -> dict[str, int]:
    per_task = [t.n for t in sec.tasks]
    return {"min": min(per_task, default=0), "max": max(per_task, default=0)}


def _protocol(report: RunSetReport) -> dict[str, Any]:
    return _section(
        {
            "paired": bool(report.paired),
            "pairing": "per task: each treatment's runs of a task against the other's"
            if report.paired
            else None,
            "repetitions": {t: _repetitions(s) for t, s in report.per_treatment.items()},
            "budgets": None,
            "retry_policy": None,
        },
        {
            "pairing": None if report.paired else "one treatment, or no shared tasks",
            "budgets": "the run records carry no budget; runs that ran out of it are the "
            "timeouts in task_set.validity_audit",
            "retry_policy": "the run records do not say whether or how runs were retried",
        },
    )


def _scoring(report: RunSetReport) -> dict[str, Any]:
    rubric, card, judging = report.rubric, report.card, report.judging
    gold = report.mode == "gold"
    band = (
        {
            "auto_accept_threshold": card.auto_accept_threshold,
            "auto_reject_threshold": card.auto_reject_threshold,
            "human_review_rule": card.human_review_rule,
            "awaiting_people": report.overall.routing.awaiting_people,
        }
        if card
        else None
    )
    no_judge = "scored from gold labels: no judge" if gold else None
    return _section(
        {
            "mode": report.mode,
            "primary_metric": "macro pass@1 over tasks",
            "hard_gates": [c.id for c in rubric.criteria if c.hard_gate] if rubric else [],
            "judge_models": list(judging.models) if judging else None,
            "rubric_version": f"{rubric.id}@{rubric.version}" if rubric else None,
            "rubric_digest": rubric.digest if rubric else None,
            "calibration_card_digest": card.card_digest if card else None,
            "review_band": band,
        },
        {
            "hard_gates": None if rubric else no_judge or "no rubric",
            "judge_models": None if judging else no_judge or "no judging recorded",
            "rubric_version": None if rubric else no_judge or "no rubric",
            "rubric_digest": None if rubric else no_judge or "no rubric",
            "calibration_card_digest": None if card else no_judge or "no calibration card",
            "review_band": None if card else no_judge or "no calibration card: no review band",
        },
    )


def _cost(sec: GroupSection) -> dict[str, Any]:
    c = sec.cost
    reason = None
    if c.per_success_usd is None:
        reason = c.note or "no run records a cost"
    return _section(
        {
            "value_usd": c.per_success_usd,
            "ci95": None,
            "rule": c.rule,
            "basis": "successes as scored (judge verdicts or gold labels)",
            "runs_with_cost": c.runs_with_cost,
            **({"note": c.note} if c.note else {}),
        },
        {"value_usd": reason, "ci95": "the report computes no interval for cost per success"},
    )


def _treatment_results(report: RunSetReport, sec: GroupSection) -> dict[str, Any]:
    ks = list(report.params.ks)
    return {
        "primary": _figure(_k(sec.macro.pass_at_k, 1), "pass@1"),
        "pass_hat_k": [{"k": k, **_figure(_k(sec.macro.pass_hat_k, k), f"pass^{k}")} for k in ks],
        "cost_per_verified_success": _cost(sec),
    }


def _results(report: RunSetReport) -> dict[str, Any]:
    gate = report.gate
    comparison = None
    if gate is not None:
        ni = gate.non_inferiority
        comparison = {
            "metric": ni.metric,
            "baseline": ni.baseline,
            "candidate": ni.candidate,
            "delta": ni.diff,
            "ci95": _interval(ni.ci95),
            "method": ni.method,
            "n_shared": ni.n_shared,
        }
    return _section(
        {
            "per_treatment": {
                t: _treatment_results(report, s) for t, s in report.per_treatment.items()
            },
            "comparison": comparison,
        },
        {"comparison": None if gate else NO_GATE},
    )


def _failures(report: RunSetReport, clusters: ClusterSource | None) -> dict[str, Any]:
    fbd = report.first_bad_decisions
    top = [dict(row) for row in clusters(report)] if clusters else []
    return _section(
        {
            "infra_errors": report.overall.excluded_infra_error,
            "timeouts": report.overall.timeouts_counted_as_fail,
            "refusals": None,
            "unscored": len(report.unscored),
            "hard_gate_failures": len(report.hard_gate_failures),
            "top_clusters": top,
            "first_bad_decision_review_n": sum(j.confirmed for j in fbd.judges) if fbd else None,
            "first_bad_decisions_diagnosed": fbd.diagnosed_runs if fbd else None,
            "failed_runs": fbd.failed_runs if fbd else None,
        },
        {
            "refusals": "the run records do not mark refusals",
            "top_clusters": None
            if top
            else NO_CLUSTER_SOURCE
            if clusters is None
            else "the cluster source returned no cluster",
            "first_bad_decision_review_n": None
            if fbd
            else "the store holds no first bad decision of these runs (judge diagnose)",
            "first_bad_decisions_diagnosed": None if fbd else "no diagnosis stored",
            "failed_runs": None if fbd else "no diagnosis stored",
        },
    )


def _statistics(report: RunSetReport) -> dict[str, Any]:
    p = report.params
    method = "task-cluster bootstrap, percentile intervals (tasks resampled)"
    if report.labels is not None and report.labels.valid_for_ppi:
        method += "; PPI++ on judge verdicts plus human labels for pass@1 and the gate"
    multiplicity = (
        "one primary test (the gate's non-inferiority on its metric); every other figure is "
        "descriptive, with an unadjusted interval"
        if report.gate
        else "no test: every interval is per figure, unadjusted"
    )
    return {
        "method": method,
        "level": p.level,
        "replicates": p.n_boot,
        "seed": p.seed,
        "ks": list(p.ks),
        "multiplicity_policy": multiplicity,
        "unknown": {},
    }


def _file(path: Path, folder: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return _section(
            {"path": str(path), "sha256": None, "bytes": None},
            {"sha256": f"cannot read it: {exc.strerror}", "bytes": "cannot read it"},
        )
    try:
        name = str(path.resolve().relative_to(folder.resolve()))
    except ValueError:
        name = str(path)
    return {"path": name, "sha256": bytes_digest(data), "bytes": len(data), "unknown": {}}


def _artifacts(
    report: RunSetReport, files: Sequence[Path] | None, folder: Path | None
) -> dict[str, Any]:
    if files is None or folder is None:
        return _section({"files": []}, {"files": f"listed with their digests in {CARD_FILE}"})
    listed = [*files, Path(report.runset)]
    return {
        "files": [_file(p, folder) for p in dict.fromkeys(listed)],
        "code": {"package": "judge", "version": __version__},
        "unknown": {},
    }


def _decision(report: RunSetReport) -> dict[str, Any]:
    gate = report.gate
    if gate is None:
        return _section({"value": None, "reason": NO_GATE}, {"value": NO_GATE})
    return {"value": gate.decision, "reason": gate.reason, "unknown": {}}


def eval_card(
    report: RunSetReport,
    *,
    artifacts: Sequence[Path] | None = None,
    folder: Path | None = None,
    clusters: ClusterSource | None = None,
) -> dict[str, Any]:
    """The eval card of ``report`` (and its gate, if one ran). ``artifacts``: the files written
    with it, digested relative to ``folder``; without them the card says where they are."""
    return {
        "card_version": CARD_VERSION,
        "identity": _identity(report),
        "claim": _claim(report),
        "task_set": _task_set(report),
        "systems": _systems(report),
        "protocol": _protocol(report),
        "scoring": _scoring(report),
        "results": _results(report),
        "failures": _failures(report, clusters),
        "statistics": _statistics(report),
        "artifacts": _artifacts(report, artifacts, folder),
        "decision": _decision(report),
    }


def check_out_dir(folder: str | Path) -> Path:
    """``folder`` as a Path, refused with a clear message when it is an existing file."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise InputError(
            "the output folder is a file",
            file=str(path),
            hint="give --out-dir a folder; it is created when missing",
        )
    return path


def write_eval_card(
    report: RunSetReport,
    folder: str | Path,
    *,
    artifacts: Sequence[Path] = (),
    clusters: ClusterSource | None = None,
) -> Path:
    """Write ``folder/eval-card.yaml`` (the folder is created) and return its path."""
    path = check_out_dir(folder)
    path.mkdir(parents=True, exist_ok=True)
    card = eval_card(report, artifacts=list(artifacts), folder=path, clusters=clusters)
    target = path / CARD_FILE
    target.write_text(
        yaml.safe_dump(card, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
    )
    return target


#: Fields whose null is a value, not an unknown: a cluster without a hard override.
NULL_MEANS_NONE = frozenset({"override"})


def missing_reasons(card: Mapping[str, Any], where: str = "") -> list[str]:
    """The dotted paths of the card's null values whose section gives no reason for them."""
    out = []
    reasons = card.get("unknown", {})
    for key, value in card.items():
        path = f"{where}.{key}" if where else key
        if value is None and key not in reasons and key not in NULL_MEANS_NONE:
            out.append(path)
        elif isinstance(value, Mapping) and key != "unknown":
            out += missing_reasons(value, path)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    out += missing_reasons(item, f"{path}.{i}")
    return out


def card_rows(card: Mapping[str, Any], where: str = "") -> list[list[str]]:
    """The card flattened for a page: one row (dotted field, value) per figure; a null
    figure shows its reason."""
    rows: list[list[str]] = []
    reasons = card.get("unknown", {})
    for key, value in card.items():
        path = f"{where}.{key}" if where else key
        if key == "unknown":
            continue
        if isinstance(value, Mapping):
            rows += card_rows(value, path)
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):
                rows += card_rows(item, f"{path}.{i}")
        elif value is None or value == []:
            reason = reasons.get(key)
            rows.append([path, f"unknown: {reason}" if reason else "none"])
        else:
            rows.append([path, _text(value)])
    return rows


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)
