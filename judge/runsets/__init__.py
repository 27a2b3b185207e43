"""Run sets: the runs of agents to score, their outcomes, pass@k / pass^k, the report, the
regression gate, and the report's Markdown, HTML and charts.

Modules, each importing only those before it: :mod:`~judge.runsets.records` (the run-set file),
:mod:`~judge.runsets.passk` (estimators), :mod:`~judge.runsets.scoring` (outcomes of runs),
:mod:`~judge.runsets.report` (the typed report), :mod:`~judge.runsets.gate` (ship, block or
inconclusive), :mod:`~judge.runsets.plots` and :mod:`~judge.runsets.render` (Markdown, HTML).
"""

from judge.runsets.gate import evaluate_gate, gate_from_report
from judge.runsets.passk import (
    MacroEstimate,
    TaskCount,
    macro,
    mean_interval,
    pass_at_k,
    pass_hat_k,
    pooled_interval,
)
from judge.runsets.records import (
    LoadedRuns,
    Run,
    RunRecord,
    load_runs,
    runset_from_gold,
    write_runs,
)
from judge.runsets.render import render_html, render_markdown, write_report
from judge.runsets.report import ReportContext, build_report, card_summary, rogan_gladen
from judge.runsets.scoring import (
    RULES,
    JudgedRuns,
    ScoredRun,
    eligibility,
    judge_runs,
    route_with_card,
    score_from_gold,
)

__all__ = [
    "RULES",
    "JudgedRuns",
    "LoadedRuns",
    "MacroEstimate",
    "ReportContext",
    "Run",
    "RunRecord",
    "ScoredRun",
    "TaskCount",
    "build_report",
    "card_summary",
    "eligibility",
    "evaluate_gate",
    "gate_from_report",
    "judge_runs",
    "load_runs",
    "macro",
    "mean_interval",
    "pass_at_k",
    "pass_hat_k",
    "pooled_interval",
    "render_html",
    "render_markdown",
    "rogan_gladen",
    "route_with_card",
    "runset_from_gold",
    "score_from_gold",
    "write_report",
    "write_runs",
]
