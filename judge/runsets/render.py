"""Render a run-set report (:class:`judge.runsets.models.RunSetReport`) as Markdown and HTML.

Both come from one list of sections (title, paragraphs, tables, figure names), so they say the
same thing; the Jinja2 templates in ``templates/`` lay them out (``report.md``, ``report.html``,
HTML autoescaped). The HTML is one self-contained file: inline CSS and inline SVG charts
(:mod:`judge.runsets.plots`), no network.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from jinja2 import Environment
from markupsafe import Markup, escape

from judge.rubrics import package_environment
from judge.runsets import checks
from judge.runsets.estimates import compared_rows
from judge.runsets.evalcard import CARD_NOTE, card_rows, eval_card
from judge.runsets.models import (
    Correction,
    CostSection,
    LabelEstimate,
    NoCorrection,
    RunSetReport,
    TreatmentSection,
)
from judge.runsets.plots import CHARTS


@dataclass
class Table:
    """A table: header and rows of text."""

    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    """One part of the report."""

    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    #: Names of charts in :data:`judge.runsets.plots.CHARTS` (HTML only).
    figures: list[str] = field(default_factory=list)
    #: Long detail: folded in the HTML page.
    collapsed: bool = False


def _num(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(ci: Sequence[float] | None) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "—"


def _usd(value: float | None) -> str:
    return f"${value:,.4g}" if value is not None else "—"


def judging_cost(cost: CostSection, mode: str) -> str:
    """What judging these runs cost, from the usage their judgments recorded: the providers'
    cost where they priced the calls, and the tokens. "unknown" only when no judgment
    recorded any usage."""
    if mode != "judge":
        return "—"  # gold labels: nothing was judged
    n, priced = cost.judge_judgments, cost.judge_priced
    if n == 0:
        return "no judgments"
    if cost.judge_usd is None and not cost.judge_tokens:
        return "unknown"
    tokens = f"{cost.judge_tokens:,} tokens"
    if cost.judge_usd is None:
        # Tokens were counted, but the provider put no price on them (e.g. a self-hosted model).
        return f"{tokens} (not priced)"
    if n is not None and priced is not None and priced < n:
        return f"{_usd(cost.judge_usd)} for {priced} of {n} judgments ({tokens})"
    return f"{_usd(cost.judge_usd)} ({tokens})"


def sections(report: RunSetReport) -> list[Section]:
    """The report's sections in reading order."""
    out = [_headline(report)]
    out += [s for s in (_labels(report),) if s]
    out += [_scoring(report), _rules(report), _macro(report)]
    # The checks that failed, beside the task matrix (judge.runsets.checks).
    matrix = (_balanced(report), _matrix(report), _failed_checks(report), _paired(report))
    out += [s for s in matrix if s]
    out.append(_per_task(report))
    out.append(_cost(report))
    out += [s for s in (_criteria(report), _gates(report), _first_bad(report)) if s]
    out.append(_decisions(report))
    out += [s for s in (_card(report), _corrected(report), _gate(report), _unscored(report)) if s]
    out.append(_eval_card(report))
    return out


def _headline(report: RunSetReport) -> Section:
    h = report.headline
    models = report.judging.models if report.judging is not None else []
    mode = "gold labels (no judge)" if report.mode == "gold" else "judge: " + ", ".join(models)
    return Section(
        "Headline",
        [
            f"Run set {report.runset}; outcomes from {mode}. Rates are macro averages over "
            "tasks (each task weighs the same); pass^k and pass@k use the unbiased estimators "
            "(docs/metrics.md section 6); intervals are 95% task-cluster bootstrap."
        ],
        [Table(list(h.columns), [list(r) for r in h.rows])],
        ["pass_k_curves"],
    )


def _est(e: LabelEstimate | None) -> str:
    if e is None:
        return "not valid for PPI"
    if e.value is None:
        return "—"
    return f"{e.value:.3f} {_ci(e.ci95)}"


def _labels(report: RunSetReport) -> Section | None:
    info = report.labels
    if info is None:
        return None
    sec = Section("Judge only, labels only and PPI++")
    plan = info.plan
    sec.paragraphs.append(
        f"Human labels: {info.file}, {info.n_labels} run(s) labelled ({info.n_pass} pass, "
        f"{info.n_fail} fail)."
        + (
            f" Label plan {plan.id}: a {plan.design} sample of {plan.n_chosen} of "
            f"{plan.n_runs} runs (budget {plan.budget}, seed {plan.seed})."
            if plan
            else ""
        )
    )
    if info.valid_for_ppi:
        sec.paragraphs.append(
            "Valid for PPI: the labelled runs are exactly the label plan's random sample."
        )
    else:
        sec.paragraphs.append(f"**Not valid for PPI**: {info.reason}.")
    sec.paragraphs += info.notes
    rows = []
    for r in compared_rows(report):
        ppi = r.ppi
        effective = (
            f"{ppi.effective_labels:.1f}" if ppi and ppi.effective_labels is not None else "—"
        )
        rows.append(
            [
                r.name,
                f"{_num(r.judge_value)} {_ci(r.judge_ci)}",
                _est(r.labels_only),
                str(r.labels_only.n_labels),
                _est(ppi),
                effective,
                # lambda is in [0, 1]: never print a rounding error as "-0.00".
                _num(abs(ppi.lam), 2) if ppi and ppi.lam is not None else "—",
            ]
        )
        # The two estimates of a row share their sample, so mostly their notes: say each once.
        note = r.labels_only.note
        if note:
            sec.paragraphs.append(f"{r.name}: {note}.")
        if ppi is not None and ppi.note and ppi.note != note:
            sec.paragraphs.append(f"{r.name} (PPI++): {ppi.note}.")
    sec.tables.append(
        Table(
            [
                "estimand",
                "judge only [95% CI]",
                "labels only [95% CI]",
                "labels",
                "PPI++ [95% CI]",
                "effective labels",
                "lambda",
            ],
            rows,
        )
    )
    sec.paragraphs.append(
        f"{info.method} Judge only: the report's bootstrap figures, which trust every verdict. "
        "Effective labels: how many labels alone would give an interval as narrow as PPI++'s; "
        "their excess over the labels used is what the judge was worth. Measured coverage and "
        "widths on real judges: CALIBRATION_RESULTS.md section 7."
    )
    sec.figures.append("ppi_forest")
    return sec


def _treatment_table(
    report: RunSetReport,
    part: Callable[[TreatmentSection], object],
    columns: Sequence[tuple[str, str]],
) -> Table:
    """One row per treatment: its name, then each field of ``part`` of its section that
    ``columns`` name, under the column's header (``columns``: (header, field) pairs)."""
    rows = [
        [t, *(str(getattr(part(report.per_treatment[t]), name)) for _, name in columns)]
        for t in report.treatments
    ]
    return Table(["treatment", *(header for header, _ in columns)], rows)


#: The counts table's columns: (header, field of the treatment's counts).
_COUNT_COLUMNS = (
    ("raw", "raw"),
    ("excluded (infra_error)", "excluded_infra_error"),
    ("analysis set", "analysis"),
    ("timeouts (fail)", "timeouts_counted_as_fail"),
    ("unscored", "unscored"),
    ("scored", "scored"),
    ("passes", "passes"),
    ("tasks", "tasks"),
)

#: The "Who decided" table's columns: (header, field of the treatment's routing counts).
_DECISION_COLUMNS = (
    ("auto-decided", "auto_decided"),
    ("awaiting people", "awaiting_people"),
    ("uncalibrated", "uncalibrated"),
    ("gold", "gold"),
    ("by rule", "by_rule"),
)


def _scoring(report: RunSetReport) -> Section:
    sec = Section("Raw runs, analysis set, exclusions")
    sec.tables.append(_treatment_table(report, lambda s: s.counts, _COUNT_COLUMNS))
    if report.mode == "judge":
        rubric, judging = report.rubric, report.judging
        sec.paragraphs.append(
            f"Rubric {rubric.ref if rubric else None} ({rubric.kind if rubric else None}, "
            f"{rubric.digest[:19] if rubric else ''}); "
            f"{judging.judgments if judging else 0} judgments, "
            f"{judging.called if judging else 0} called the model, "
            f"{judging.cached if judging else 0} from the store."
        )
        judges = report.judges
        for j in judges.judges if judges else []:
            sec.paragraphs.append(
                f"Judge {j.model} (family {j.family or 'unknown'}) was kept off "
                f"{j.runs_excluded} run(s) of its own family."
            )
        if judges and judges.runs_with_unknown_agent_family:
            sec.paragraphs.append(
                f"{judges.runs_with_unknown_agent_family} run(s) name no agent model of a "
                "known family: self-family exclusion could not be checked for them."
            )
    sec.paragraphs += list(report.notes)
    return sec


def _rules(report: RunSetReport) -> Section:
    return Section("Declared rules", [f"{k}: {v}" for k, v in report.rules.items()])


def _macro(report: RunSetReport) -> Section:
    sec = Section("pass@k and pass^k, macro over tasks")
    for t in report.treatments:
        m = report.per_treatment[t].macro
        rows = []
        for at, hat in zip(m.pass_at_k, m.pass_hat_k, strict=True):
            rows.append(
                [
                    str(at.k),
                    _num(at.value),
                    _ci(at.ci95),
                    _num(hat.value),
                    _ci(hat.ci95),
                    str(at.n_tasks),
                    at.note or "",
                ]
            )
        sec.tables.append(
            Table([f"{t}: k", "pass@k", "95% CI", "pass^k", "95% CI", "tasks used", "note"], rows)
        )
        pooled = report.per_treatment[t].pooled
        sec.paragraphs.append(
            f"{t}: pooled over scored runs {pooled.k}/{pooled.n} = {_num(pooled.value)} "
            f"{_ci(pooled.ci95)}."
        )
    sec.paragraphs.append(
        "k above a task's number of scored runs is undefined: such tasks are "
        "omitted at that k (counted in 'note'), never extrapolated."
    )
    return sec


def _balanced(report: RunSetReport) -> Section | None:
    if len(report.benchmarks) < 2:
        return None
    sec = Section("Benchmark-balanced and pooled pass@1")
    rows = []
    note = ""
    for t in report.treatments:
        b = report.per_treatment[t].balanced
        if not b:
            continue
        per = "; ".join(f"{k}: {_num(v.value)} ({v.tasks} tasks)" for k, v in b.benchmarks.items())
        rows.append(
            [
                t,
                f"{_num(b.balanced.value)} {_ci(b.balanced.ci95)}",
                f"{_num(b.pooled_over_tasks.value)} {_ci(b.pooled_over_tasks.ci95)}",
                f"{_num(b.pooled_over_runs.value)} {_ci(b.pooled_over_runs.ci95)}",
                per,
            ]
        )
        note = b.note
    sec.tables.append(
        Table(
            [
                "treatment",
                "benchmark-balanced",
                "pooled over tasks",
                "pooled over runs",
                "per benchmark",
            ],
            rows,
        )
    )
    if rows:
        sec.paragraphs.append(note)
    return sec


def _matrix(report: RunSetReport) -> Section:
    m = report.task_matrix
    rows = []
    for row in m.rows:
        cells = [f"{c.c}/{c.n}" if c else "—" for c in row.cells.values()]
        rows.append([row.task, *cells])
    return Section(
        "Task matrix (passes / scored runs)",
        [],
        [Table(["task", *m.treatments], rows)],
        ["task_matrix"],
    )


def _per_task(report: RunSetReport) -> Section:
    ks = list(report.params.ks)
    sec = Section(
        "Per-task figures",
        [
            "pass rate with its Wilson 95% interval (the runs of one "
            "task as independent trials), and the unbiased pass^k and "
            "pass@k of the task ('—': k above its runs)."
        ],
        collapsed=True,
    )
    for t in report.treatments:
        rows = []
        for task in report.per_treatment[t].tasks:
            rows.append(
                [
                    task.task,
                    f"{task.c}/{task.n}",
                    _num(task.rate),
                    _ci(task.wilson95),
                    *[_num(task.pass_hat_k.get(str(k))) for k in ks if k > 1],
                    *[_num(task.pass_at_k.get(str(k))) for k in ks if k > 1],
                ]
            )
        sec.tables.append(
            Table(
                [
                    f"{t}: task",
                    "passes",
                    "rate",
                    "Wilson 95%",
                    *[f"pass^{k}" for k in ks if k > 1],
                    *[f"pass@{k}" for k in ks if k > 1],
                ],
                rows,
            )
        )
    return sec


def _paired(report: RunSetReport) -> Section | None:
    if not report.paired:
        return None
    rows = [
        [
            p.baseline,
            p.candidate,
            p.metric,
            str(p.n_shared),
            f"{p.only_baseline} / {p.only_candidate}",
            _num(p.baseline_rate),
            _num(p.candidate_rate),
            _num(p.diff),
            _ci(p.ci95),
        ]
        for p in report.paired
    ]
    return Section(
        "Paired differences on shared tasks (candidate minus baseline)",
        [
            "Per-task differences of the metric, averaged over the tasks both treatments ran; the "
            "interval resamples tasks (pairs stay together)."
        ],
        [
            Table(
                [
                    "baseline",
                    "candidate",
                    "metric",
                    "shared tasks",
                    "only in one (b / c)",
                    "baseline rate",
                    "candidate rate",
                    "difference",
                    "95% CI",
                ],
                rows,
            )
        ],
        ["paired"],
    )


def _cost(report: RunSetReport) -> Section:
    rows = []
    for t in report.treatments:
        c = report.per_treatment[t].cost
        tok, dur = c.tokens, c.duration_s
        rows.append(
            [
                t,
                f"{c.runs_with_cost}/{c.runs}",
                _usd(c.total_usd),
                _usd(c.per_run_usd),
                _usd(c.per_success_usd),
                _num(tok.median, 0),
                _num(tok.p95, 0),
                _num(dur.median, 1),
                _num(dur.p95, 1),
                judging_cost(c, report.mode),
            ]
        )
    rule = report.per_treatment[report.treatments[0]].cost.rule if report.treatments else ""
    notes = [
        f"{t}: {report.per_treatment[t].cost.note}"
        for t in report.treatments
        if report.per_treatment[t].cost.note
    ]
    return Section(
        "Cost, tokens, duration",
        [f"Cost per success: {rule}.", *notes],
        [
            Table(
                [
                    "treatment",
                    "runs with cost",
                    "total",
                    "per run",
                    "per success",
                    "tokens median",
                    "tokens p95",
                    "duration median (s)",
                    "duration p95 (s)",
                    "judging cost",
                ],
                rows,
            )
        ],
    )


def _criteria(report: RunSetReport) -> Section | None:
    sec = Section("Rubric criteria")
    for t in report.treatments:
        crit = report.per_treatment[t].criteria
        if not crit:
            continue
        rows = [
            [
                c.id,
                "yes" if c.hard_gate else "",
                _num(c.weight, 2),
                f"{c.passes}/{c.passes + c.fail}",
                _num(c.value),
                _ci(c.ci95),
                str(c.not_applicable),
            ]
            for c in crit.criteria
        ]
        w = crit.weighted_overall
        rows.append(
            ["weighted overall", "", "", f"{w.n_runs} runs", _num(w.value), _ci(w.ci95), ""]
        )
        sec.tables.append(
            Table(
                [f"{t}: criterion", "hard gate", "weight", "passed", "rate", "95% CI", "n/a"], rows
            )
        )
    return sec if sec.tables else None


def _gates(report: RunSetReport) -> Section | None:
    fails = report.hard_gate_failures
    if not fails and not any(report.per_treatment[t].criteria for t in report.treatments):
        return None
    rows = [[f.run_id, f.treatment, f.task, str(f.repetition), ", ".join(f.gates)] for f in fails]
    return Section(
        "Failed hard gates",
        [f"{len(fails)} run(s) failed at least one hard gate."]
        if fails
        else ["No run failed a hard gate."],
        [Table(["run", "treatment", "task", "repetition", "gates"], rows)] if rows else [],
    )


def _failed_checks(report: RunSetReport) -> Section | None:
    rows = checks.failed_checks_rows(report)
    return Section("Failed checks", [checks.TEXT], [Table(checks.HEADER, rows)]) if rows else None


def _by_judge(name: str, counts: list[tuple[str, dict[str, int]]]) -> Table:
    """Located runs by ``name`` (owner or invariant): a column per judge."""
    keys = list(dict.fromkeys(k for _, c in counts for k in c))
    return Table(
        [name, *[f"{judge}: located runs" for judge, _ in counts]],
        [[k, *[str(c.get(k, 0)) for _, c in counts]] for k in keys],
    )


def _first_bad(report: RunSetReport) -> Section | None:
    fbd = report.first_bad_decisions
    if fbd is None:
        return None
    undiagnosed = len(fbd.undiagnosed)
    sec = Section(
        "First bad decisions",
        [
            f"{fbd.failed_runs} failed run(s) (completed, judged fail or labelled fail): "
            f"{fbd.diagnosed_runs} diagnosed by `judge diagnose`, {undiagnosed} not "
            f"(diagnoses read from {fbd.db}; nothing was called for this report). Located: "
            "the judge named the critical step. Confirmed: "
            f"{sum(j.confirmed for j in fbd.judges)} ({fbd.status})."
        ],
    )
    sec.tables.append(
        Table(
            [
                "judge",
                "fbd rubric",
                "diagnosed",
                "located",
                "no single step or abstained",
                "diagnosis failed",
                "confirmed",
                "queued for review",
            ],
            [
                [
                    j.model,
                    j.rubric,
                    str(j.diagnosed),
                    str(j.located),
                    str(j.no_single_step),
                    str(j.failed),
                    str(j.confirmed),
                    str(j.queued_for_review),
                ]
                for j in fbd.judges
            ],
        )
    )
    # A column per judge, named by its model (and its rubric when a model used several).
    models = [j.model for j in fbd.judges]
    names = [
        j.model if models.count(j.model) == 1 else f"{j.model} ({j.rubric})" for j in fbd.judges
    ]
    owners = [(n, j.by_owner) for n, j in zip(names, fbd.judges, strict=True)]
    invariants = [(n, j.by_invariant) for n, j in zip(names, fbd.judges, strict=True)]
    if any(c for _, c in owners):
        sec.tables.append(_by_judge("owner", owners))
    if any(c for _, c in invariants):
        sec.tables.append(_by_judge("violated invariant", invariants))
    if fbd.command is not None:
        text = (
            f"{undiagnosed} failed run(s) have no diagnosis: `{fbd.command}` diagnoses the runs "
            "the store's judges found failed (those diagnosed already come from the store)."
        )
        if fbd.undiagnosed_not_judged_fail:
            text += (
                " Not judged fail (their official label is fail), so left out by `judge "
                f"diagnose --db`: {fbd.undiagnosed_not_judged_fail}; give those to `judge "
                "diagnose FILE` as records labelled fail."
            )
        sec.paragraphs.append(text)
    return sec


def _decisions(report: RunSetReport) -> Section:
    text = {
        "gold": "Outcomes are gold labels: no judge decided anything.",
        "judge": "Auto-decided: the card's certified bands decide the verdict alone. Awaiting "
        "people: the verdict fell in the review band (it is counted in the rates as the judge "
        "said, until a person labels it). Uncalibrated: no card was given.",
    }[report.mode]
    return Section(
        "Who decided",
        [text],
        [_treatment_table(report, lambda s: s.routing, _DECISION_COLUMNS)],
    )


def _card(report: RunSetReport) -> Section | None:
    card = report.card
    if not card:
        if report.mode == "judge":
            return Section(
                "Judge calibration",
                [
                    "No calibration card was given: the judge's error rates on these runs are "
                    "unknown, and no verdict is certified. Calibrate with `judge calibrate`."
                ],
            )
        return None
    far, frr = card.false_accept_rate, card.false_reject_rate
    gold = card.gold
    return Section(
        "Judge calibration card",
        [
            f"Card {card.card_digest[:19]} for {card.model}, calibrated on {gold.name} "
            f"({gold.n} items, {gold.source}); expires {card.expires_at}.",
            f"False accept rate {_num(far.value if far else None)} "
            f"{_ci(far.ci95 if far else None)};"
            f" false reject rate {_num(frr.value if frr else None)} "
            f"{_ci(frr.ci95 if frr else None)}.",
            card.guarantee,
            f"Routing: {card.human_review_rule} (coverage on gold {_num(card.coverage)}).",
        ],
    )


def _corrected(report: RunSetReport) -> Section | None:
    if not report.params.correct_for_judge:
        return None
    sec = Section("pass@1 corrected for the judge's error rates")
    rows = []
    for t in report.treatments:
        c = report.per_treatment[t].corrected
        if not isinstance(c, Correction):
            reason = c.reason if isinstance(c, NoCorrection) else None
            sec.paragraphs.append(f"{t}: not corrected: {reason}.")
            continue
        for name, fig in (("pooled", c.pooled), ("macro", c.macro)):
            if fig:
                rows.append([t, name, _num(fig.observed), _num(fig.value), _ci(fig.ci95)])
        method = [f"{c.method}.", f"Assumption: {c.assumption}."]
        if method[0] not in sec.paragraphs:
            sec.paragraphs = method + sec.paragraphs
    if rows:
        sec.tables.append(Table(["treatment", "rate", "as judged", "corrected", "95% CI"], rows))
    return sec


def _gate(report: RunSetReport) -> Section | None:
    gate = report.gate
    if not gate:
        return None
    ni = gate.non_inferiority
    paras = [
        f"Decision: **{gate.decision.upper()}** ({gate.candidate} against "
        f"{gate.baseline}, margin {gate.margin}). "
        f"{gate.reason[:1].upper()}{gate.reason[1:]}.",
        f"Hard gates: {gate.hard_gates.summary}",
        f"Non-inferiority on {ni.metric}: difference {_num(ni.diff)} "
        f"{_ci(ni.ci95)} over {ni.n_shared} shared tasks; {ni.summary}",
        f"Interval: {ni.method}.",
    ]
    moved = [d for d in gate.dimensions if d.moved]
    paras.append(
        "Dimensions past the tolerance: "
        + ("; ".join(f"{d.id} {d.diff:+.3f}" for d in moved) if moved else "none")
    )
    paras += [f"Warning: {w}" for w in gate.warnings]
    paras += [f"Cannot support: {c}" for c in gate.cannot_support]
    return Section("Regression gate", paras)


def _eval_card(report: RunSetReport) -> Section:
    rows = card_rows(eval_card(report))
    return Section("Eval card", [CARD_NOTE], [Table(["field", "value"], rows)], collapsed=True)


def _unscored(report: RunSetReport) -> Section | None:
    rows = [[u.run_id, u.treatment, u.task, u.reason or ""] for u in report.unscored]
    if not rows:
        return None
    return Section(
        "Unscored runs (no verdict; left out of the rates)",
        [],
        [Table(["run", "treatment", "task", "reason"], rows)],
    )


# --- the templates -------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _strong(text: str) -> Markup:
    # The one piece of Markdown the sections use: **bold**. Escaped first, then marked up.
    parts = str(escape(text)).split("**")
    return Markup("".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts)))


@cache
def _environment() -> Environment:
    # report.html is escaped; report.md and table.md are Markdown, not HTML.
    env = package_environment("judge.runsets", keep_trailing_newline=True)
    env.filters.update(md_cell=_md_cell, strong=_strong)
    return env


def markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table."""
    text: str = _environment().get_template("table.md").module.table(table)  # type: ignore[attr-defined]
    return text


def render_markdown(report: RunSetReport) -> str:
    """The report as Markdown."""
    return _environment().get_template("report.md").render(report=report, sections=sections(report))


def render_html(report: RunSetReport, *, charts: bool = True) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG)."""
    parts = []
    for sec in sections(report):
        svgs = [CHARTS[name](report) for name in sec.figures] if charts else []
        # The SVG is matplotlib's own output (no report text in it unescaped): trusted markup.
        parts.append((sec, [Markup(s) for s in svgs if s]))
    return _environment().get_template("report.html").render(report=report, sections=parts)


def write_report(
    report: RunSetReport, out_dir: str | Path, *, charts: bool = True
) -> dict[str, Path]:
    """Write report.json, report.md and report.html into ``out_dir``; return their paths."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": folder / "report.json",
        "md": folder / "report.md",
        "html": folder / "report.html",
    }
    paths["json"].write_text(
        json.dumps(report.model_dump(mode="json"), indent=1, ensure_ascii=False, allow_nan=False)
        + "\n",
        encoding="utf-8",
    )
    paths["md"].write_text(render_markdown(report), encoding="utf-8")
    paths["html"].write_text(render_html(report, charts=charts), encoding="utf-8")
    return paths


def headline_markdown(report: RunSetReport) -> str:
    """The report's headline table as Markdown (what ``judge score`` prints)."""
    return markdown_table(
        Table(list(report.headline.columns), [list(r) for r in report.headline.rows])
    )
