"""Render a run-set report dict (:func:`judge.report.build_report`) as Markdown and HTML.

Both come from one list of sections (title, paragraphs, tables, figure names), so they say the
same thing. The HTML is one self-contained file: inline CSS and inline SVG charts
(:mod:`judge.report_plots`), no network.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
    #: Names of charts in :data:`judge.report_plots.CHARTS` (HTML only).
    figures: list[str] = field(default_factory=list)
    #: Long detail: folded in the HTML page.
    collapsed: bool = False


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(ci: Sequence[float] | None) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "—"


def _usd(value: float | None) -> str:
    return f"${value:,.4g}" if value is not None else "—"


def sections(report: Mapping[str, Any]) -> list[Section]:
    """The report's sections in reading order."""
    out = [_headline(report), _scoring(report), _rules(report), _macro(report)]
    out += [s for s in (_balanced(report), _matrix(report), _paired(report)) if s]
    out.append(_per_task(report))
    out.append(_cost(report))
    out += [s for s in (_criteria(report), _gates(report)) if s]
    out.append(_decisions(report))
    out += [s for s in (_card(report), _corrected(report), _gate(report), _unscored(report)) if s]
    return out


def _headline(report: Mapping[str, Any]) -> Section:
    h = report["headline"]
    mode = ("gold labels (no judge)" if report["mode"] == "gold"
            else "judge: " + ", ".join(report.get("judging", {}).get("models", [])))
    return Section(
        "Headline",
        [f"Run set {report['runset']}; outcomes from {mode}. Rates are macro averages over "
         "tasks (each task weighs the same); pass^k and pass@k use the unbiased estimators "
         "(CALIBRATION.md section 6); intervals are 95% task-cluster bootstrap."],
        [Table(list(h["columns"]), [list(r) for r in h["rows"]])],
        ["pass_k_curves"],
    )


def _scoring(report: Mapping[str, Any]) -> Section:
    sec = Section("Raw runs, analysis set, exclusions")
    rows = []
    for t in report["treatments"]:
        c = report["per_treatment"][t]["counts"]
        rows.append([t, str(c["raw"]), str(c["excluded_infra_error"]), str(c["analysis"]),
                     str(c["timeouts_counted_as_fail"]), str(c["unscored"]), str(c["scored"]),
                     str(c["passes"]), str(c["tasks"])])
    sec.tables.append(Table(["treatment", "raw", "excluded (infra_error)", "analysis set",
                             "timeouts (fail)", "unscored", "scored", "passes", "tasks"], rows))
    judging = report.get("judging") or {}
    if report["mode"] == "judge":
        rubric = report.get("rubric") or {}
        sec.paragraphs.append(
            f"Rubric {rubric.get('ref')} ({rubric.get('kind')}, {rubric.get('digest', '')[:19]}); "
            f"{judging.get('judgments', 0)} judgments, {judging.get('called', 0)} called the "
            f"model, {judging.get('cached', 0)} from the store.")
        judges = report.get("judges") or {}
        for j in judges.get("judges", []):
            sec.paragraphs.append(
                f"Judge {j['model']} (family {j['family'] or 'unknown'}) was kept off "
                f"{j['runs_excluded']} run(s) of its own family.")
        if judges.get("runs_with_unknown_agent_family"):
            sec.paragraphs.append(
                f"{judges['runs_with_unknown_agent_family']} run(s) name no agent model of a "
                "known family: self-family exclusion could not be checked for them.")
    sec.paragraphs += list(report.get("notes") or [])
    return sec


def _rules(report: Mapping[str, Any]) -> Section:
    return Section("Declared rules", [f"{k}: {v}" for k, v in report["rules"].items()])


def _macro(report: Mapping[str, Any]) -> Section:
    sec = Section("pass@k and pass^k, macro over tasks")
    for t in report["treatments"]:
        m = report["per_treatment"][t]["macro"]
        rows = []
        for at, hat in zip(m["pass@k"], m["pass^k"], strict=True):
            rows.append([str(at["k"]), _num(at["value"]), _ci(at["ci95"]), _num(hat["value"]),
                         _ci(hat["ci95"]), str(at["n_tasks"]),
                         at["note"] or ""])
        sec.tables.append(Table([f"{t}: k", "pass@k", "95% CI", "pass^k", "95% CI",
                                 "tasks used", "note"], rows))
        pooled = report["per_treatment"][t]["pooled"]
        sec.paragraphs.append(
            f"{t}: pooled over scored runs {pooled['k']}/{pooled['n']} = {_num(pooled['value'])} "
            f"{_ci(pooled['ci95'])}.")
    sec.paragraphs.append("k above a task's number of scored runs is undefined: such tasks are "
                          "omitted at that k (counted in 'note'), never extrapolated.")
    return sec


def _balanced(report: Mapping[str, Any]) -> Section | None:
    if len(report["benchmarks"]) < 2:
        return None
    sec = Section("Benchmark-balanced and pooled pass@1")
    rows = []
    for t in report["treatments"]:
        b = report["per_treatment"][t]["balanced"]
        if not b:
            continue
        per = "; ".join(f"{k}: {_num(v['value'])} ({v['tasks']} tasks)"
                        for k, v in b["benchmarks"].items())
        rows.append([t, f"{_num(b['balanced']['value'])} {_ci(b['balanced']['ci95'])}",
                     f"{_num(b['pooled_over_tasks']['value'])} "
                     f"{_ci(b['pooled_over_tasks']['ci95'])}",
                     f"{_num(b['pooled_over_runs']['value'])} "
                     f"{_ci(b['pooled_over_runs']['ci95'])}", per])
        note = b["note"]
    sec.tables.append(Table(["treatment", "benchmark-balanced", "pooled over tasks",
                             "pooled over runs", "per benchmark"], rows))
    if rows:
        sec.paragraphs.append(note)
    return sec


def _matrix(report: Mapping[str, Any]) -> Section:
    m = report["task_matrix"]
    rows = []
    for row in m["rows"]:
        cells = [f"{c['c']}/{c['n']}" if c else "—" for c in row["cells"].values()]
        rows.append([row["task"], *cells])
    return Section("Task matrix (passes / scored runs)", [],
                   [Table(["task", *m["treatments"]], rows)], ["task_matrix"])


def _per_task(report: Mapping[str, Any]) -> Section:
    ks = list(report["params"]["ks"])
    sec = Section("Per-task figures", ["pass rate with its Wilson 95% interval (the runs of one "
                                       "task as independent trials), and the unbiased pass^k and "
                                       "pass@k of the task ('—': k above its runs)."],
                  collapsed=True)
    for t in report["treatments"]:
        rows = []
        for task in report["per_treatment"][t]["tasks"]:
            rows.append([task["task"], f"{task['c']}/{task['n']}", _num(task["rate"]),
                         _ci(task["wilson95"]),
                         *[_num(task["pass^k"].get(str(k))) for k in ks if k > 1],
                         *[_num(task["pass@k"].get(str(k))) for k in ks if k > 1]])
        sec.tables.append(Table([f"{t}: task", "passes", "rate", "Wilson 95%",
                                 *[f"pass^{k}" for k in ks if k > 1],
                                 *[f"pass@{k}" for k in ks if k > 1]], rows))
    return sec


def _paired(report: Mapping[str, Any]) -> Section | None:
    if not report["paired"]:
        return None
    rows = [[p["baseline"], p["candidate"], p["metric"], str(p["n_shared"]),
             f"{p['only_baseline']} / {p['only_candidate']}", _num(p["baseline_rate"]),
             _num(p["candidate_rate"]), _num(p["diff"]), _ci(p["ci95"])]
            for p in report["paired"]]
    return Section(
        "Paired differences on shared tasks (candidate minus baseline)",
        ["Per-task differences of the metric, averaged over the tasks both treatments ran; the "
         "interval resamples tasks (pairs stay together)."],
        [Table(["baseline", "candidate", "metric", "shared tasks", "only in one (b / c)",
                "baseline rate", "candidate rate", "difference", "95% CI"], rows)],
        ["paired"],
    )


def _cost(report: Mapping[str, Any]) -> Section:
    rows = []
    for t in report["treatments"]:
        c = report["per_treatment"][t]["cost"]
        tok, dur = c["tokens"], c["duration_s"]
        rows.append([t, f"{c['runs_with_cost']}/{c['runs']}", _usd(c["total_usd"]),
                     _usd(c["per_run_usd"]), _usd(c["per_success_usd"]),
                     _num(tok["median"], 0), _num(tok["p95"], 0),
                     _num(dur["median"], 1), _num(dur["p95"], 1), _usd(c["judge_usd"])])
    first = report["per_treatment"][report["treatments"][0]]["cost"] if report["treatments"] \
        else {"rule": ""}
    notes = [f"{t}: {report['per_treatment'][t]['cost']['note']}" for t in report["treatments"]
             if report["per_treatment"][t]["cost"]["note"]]
    return Section("Cost, tokens, duration", [f"Cost per success: {first['rule']}.", *notes],
                   [Table(["treatment", "runs with cost", "total", "per run", "per success",
                           "tokens median", "tokens p95", "duration median (s)",
                           "duration p95 (s)", "judging cost"], rows)])


def _criteria(report: Mapping[str, Any]) -> Section | None:
    sec = Section("Rubric criteria")
    for t in report["treatments"]:
        crit = report["per_treatment"][t]["criteria"]
        if not crit:
            continue
        rows = [[c["id"], "yes" if c["hard_gate"] else "", _num(c["weight"], 2),
                 f"{c['pass']}/{c['pass'] + c['fail']}", _num(c["value"]), _ci(c["ci95"]),
                 str(c["not_applicable"])] for c in crit["criteria"]]
        w = crit["weighted_overall"]
        rows.append(["weighted overall", "", "", f"{w['n_runs']} runs", _num(w["value"]),
                     _ci(w["ci95"]), ""])
        sec.tables.append(Table([f"{t}: criterion", "hard gate", "weight", "passed",
                                 "rate", "95% CI", "n/a"], rows))
    return sec if sec.tables else None


def _gates(report: Mapping[str, Any]) -> Section | None:
    fails = report["hard_gate_failures"]
    if not fails and not any(report["per_treatment"][t]["criteria"] for t in report["treatments"]):
        return None
    rows = [[f["run_id"], f["treatment"], f["task"], str(f["repetition"]), ", ".join(f["gates"])]
            for f in fails]
    return Section("Failed hard gates",
                   [f"{len(fails)} run(s) failed at least one hard gate."] if fails
                   else ["No run failed a hard gate."],
                   [Table(["run", "treatment", "task", "repetition", "gates"], rows)]
                   if rows else [])


def _decisions(report: Mapping[str, Any]) -> Section:
    rows = []
    for t in report["treatments"]:
        r = report["per_treatment"][t]["routing"]
        rows.append([t, str(r["auto_decided"]), str(r["awaiting_people"]),
                     str(r["uncalibrated"]), str(r["gold"]), str(r["by_rule"])])
    text = {
        "gold": "Outcomes are gold labels: no judge decided anything.",
        "judge": "Auto-decided: the card's certified bands decide the verdict alone. Awaiting "
        "people: the verdict fell in the review band (it is counted in the rates as the judge "
        "said, until a person labels it). Uncalibrated: no card was given.",
    }[report["mode"]]
    return Section("Who decided", [text],
                   [Table(["treatment", "auto-decided", "awaiting people", "uncalibrated",
                           "gold", "by rule"], rows)])


def _card(report: Mapping[str, Any]) -> Section | None:
    card = report.get("card")
    if not card:
        if report["mode"] == "judge":
            return Section("Judge calibration", [
                "No calibration card was given: the judge's error rates on these runs are "
                "unknown, and no verdict is certified. Calibrate with `judge calibrate`."])
        return None
    far, frr = card["false_accept_rate"] or {}, card["false_reject_rate"] or {}
    gold = card["gold"]
    return Section("Judge calibration card", [
        f"Card {card['card_digest'][:19]} for {card['model']}, calibrated on {gold['name']} "
        f"({gold['n']} items, {gold['source']}); expires {card['expires_at']}.",
        f"False accept rate {_num(far.get('value'))} {_ci(far.get('ci95'))}; false reject rate "
        f"{_num(frr.get('value'))} {_ci(frr.get('ci95'))}.",
        card["guarantee"],
        f"Routing: {card['human_review_rule']} (coverage on gold {_num(card['coverage'])}).",
    ])


def _corrected(report: Mapping[str, Any]) -> Section | None:
    if not report["params"].get("correct_for_judge"):
        return None
    sec = Section("pass@1 corrected for the judge's error rates")
    rows = []
    for t in report["treatments"]:
        c = report["per_treatment"][t].get("corrected") or {}
        if not c.get("available"):
            sec.paragraphs.append(f"{t}: not corrected: {c.get('reason')}.")
            continue
        for name in ("pooled", "macro"):
            fig = c.get(name)
            if fig:
                rows.append([t, name, _num(fig["observed"]), _num(fig["value"]),
                             _ci(fig["ci95"])])
        method = [f"{c['method']}.", f"Assumption: {c['assumption']}."]
        if method[0] not in sec.paragraphs:
            sec.paragraphs = method + sec.paragraphs
    if rows:
        sec.tables.append(Table(["treatment", "rate", "as judged", "corrected", "95% CI"], rows))
    return sec


def _gate(report: Mapping[str, Any]) -> Section | None:
    gate = report.get("gate")
    if not gate:
        return None
    ni = gate["non_inferiority"]
    paras = [
        f"Decision: **{gate['decision'].upper()}** ({gate['candidate']} against "
        f"{gate['baseline']}, margin {gate['margin']}). "
        f"{gate['reason'][:1].upper()}{gate['reason'][1:]}.",
        f"Hard gates: {gate['hard_gates']['summary']}",
        f"Non-inferiority on {ni['metric']}: difference {_num(ni.get('diff'))} "
        f"{_ci(ni.get('ci95'))} over {ni['n_shared']} shared tasks; {ni['summary']}",
    ]
    moved = [d for d in gate["dimensions"] if d["moved"]]
    paras.append("Dimensions past the tolerance: " + (
        "; ".join(f"{d['id']} {d['diff']:+.3f}" for d in moved) if moved else "none"))
    paras += [f"Cannot support: {c}" for c in gate["cannot_support"]]
    return Section("Regression gate", paras)


def _unscored(report: Mapping[str, Any]) -> Section | None:
    rows = [[u["run_id"], u["treatment"], u["task"], u["reason"] or ""]
            for u in report["unscored"]]
    if not rows:
        return None
    return Section("Unscored runs (no verdict; left out of the rates)", [],
                   [Table(["run", "treatment", "task", "reason"], rows)])


# --- Markdown ------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(_md_cell(h) for h in table.header) + " |",
             "|" + "---|" * len(table.header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown."""
    parts = [f"# {report['title']}", f"_{report['created_at']}_"]
    for sec in sections(report):
        parts.append(f"## {sec.title}")
        parts += sec.paragraphs
        parts += [markdown_table(t) for t in sec.tables]
    return "\n\n".join(parts) + "\n"


# --- HTML ----------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:70rem;padding:0 1rem;color:#212121}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;
border-bottom:1px solid #e0e0e0}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #e0e0e0;padding:.2rem .5rem;
text-align:right}th{background:#fafafa}td:first-child,th:first-child{text-align:left}
.figs{display:flex;flex-wrap:wrap;gap:1rem}svg{max-width:100%;height:auto}.muted{color:#616161}
"""


def _html_text(text: str) -> str:
    escaped = html.escape(text)
    # The one piece of Markdown the sections use: **bold**.
    parts = escaped.split("**")
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))


def html_table(table: Table) -> str:
    """An HTML table with escaped cells."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in table.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: Mapping[str, Any], *, charts: bool = True) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG)."""
    from judge.runsets.plots import CHARTS

    body = [f"<h1>{html.escape(report['title'])}</h1>",
            f"<p class='muted'>{html.escape(report['created_at'])}</p>"]
    for sec in sections(report):
        body.append(f"<h2>{html.escape(sec.title)}</h2>")
        body += [f"<p>{_html_text(p)}</p>" for p in sec.paragraphs]
        tables = "".join(html_table(t) for t in sec.tables)
        if sec.collapsed and tables:
            tables = f"<details><summary>show the tables</summary>{tables}</details>"
        body.append(tables)
        if charts:
            svgs = [CHARTS[name](report) for name in sec.figures]
            svgs = [s for s in svgs if s]
            if svgs:
                body.append("<div class='figs'>" + "".join(f"<div>{s}</div>" for s in svgs)
                            + "</div>")
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(report['title'])}</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def write_report(report: Mapping[str, Any], out_dir: str | Path, *, charts: bool = True
                 ) -> dict[str, Path]:
    """Write report.json, report.md and report.html into ``out_dir``; return their paths."""
    import json

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "report.json", "md": folder / "report.md",
             "html": folder / "report.html"}
    paths["json"].write_text(json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False)
                             + "\n", encoding="utf-8")
    paths["md"].write_text(render_markdown(report), encoding="utf-8")
    paths["html"].write_text(render_html(report, charts=charts), encoding="utf-8")
    return paths
