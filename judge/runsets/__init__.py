"""Run sets: the runs of agents to score, their outcomes, pass@k / pass^k, the report, the
regression gate, and the report's Markdown, HTML and charts.

Modules, each importing only those before it: :mod:`~judge.runsets.records` (the run-set file),
:mod:`~judge.runsets.passk` (estimators), :mod:`~judge.runsets.scoring` (outcomes of runs),
:mod:`~judge.runsets.models` (the typed report), :mod:`~judge.runsets.labels` (human labels of some
runs, and the label plans that draw them at random), :mod:`~judge.runsets.estimates` (pass@1 from
the labels alone and by PPI++, through calibration.ppi), :mod:`~judge.runsets.correction` (the
judge's card and pass@1 corrected for its errors), :mod:`~judge.runsets.checks` (the deterministic
checks that failed, per treatment), :mod:`~judge.runsets.report` (its figures),
:mod:`~judge.runsets.gating` (ship, block or inconclusive), :mod:`~judge.runsets.evalcard` (the eval
card: every figure with its contract), :mod:`~judge.runsets.plots` (SVG charts) and
:mod:`~judge.runsets.render` (Markdown and HTML through the Jinja2 templates in ``templates/``).
"""

from judge.runsets.correction import rogan_gladen
from judge.runsets.estimates import compared_rows, group_estimates, paired_estimates
from judge.runsets.evalcard import (
    CARD_FILE,
    ClusterSource,
    check_out_dir,
    eval_card,
    load_schema,
    write_eval_card,
)
from judge.runsets.gating import (
    DEFAULT_MIN_TASKS,
    DEFAULT_TOLERANCE,
    evaluate_gate,
    gate_from_report,
)
from judge.runsets.labels import (
    HumanLabels,
    LabelCheck,
    PlanResult,
    check_labels,
    load_labels,
    plan_review,
)
from judge.runsets.models import (
    CardSummary,
    CostSection,
    GateResult,
    GroupSection,
    JudgingInfo,
    PairedDifference,
    RubricCriterion,
    RubricInfo,
    RunSetReport,
    TreatmentSection,
    load_report,
)
from judge.runsets.passk import (
    MacroEstimate,
    TaskCount,
    macro,
    mean_interval,
    pass_at_k,
    pass_hat_k,
    pooled_interval,
)
from judge.runsets.plots import CHARTS, pass_k_curves_svg, pass_k_figure
from judge.runsets.records import (
    LoadedRuns,
    Run,
    RunRecord,
    load_runs,
    runset_from_gold,
    write_runs,
)
from judge.runsets.render import (
    Section,
    Table,
    headline_markdown,
    judging_cost,
    render_html,
    render_markdown,
    sections,
    write_report,
)
from judge.runsets.report import ReportContext, build_report, paired_difference
from judge.runsets.scoring import (
    RULES,
    JudgedRuns,
    JudgesInfo,
    ScoredRun,
    eligibility,
    judge_runs,
    pooled_score,
    score_from_gold,
)
from judge.runsets.workflow import ReportOptions, gate, score_runs

__all__ = [
    "DEFAULT_TOLERANCE",
    "DEFAULT_MIN_TASKS",
    "ReportOptions",
    "gate",
    "score_runs",
    "CHARTS",
    "CardSummary",
    "CostSection",
    "GateResult",
    "GroupSection",
    "HumanLabels",
    "JudgedRuns",
    "JudgesInfo",
    "JudgingInfo",
    "LabelCheck",
    "LoadedRuns",
    "MacroEstimate",
    "PairedDifference",
    "PlanResult",
    "RULES",
    "ReportContext",
    "RubricCriterion",
    "RubricInfo",
    "Run",
    "RunRecord",
    "RunSetReport",
    "ScoredRun",
    "Section",
    "Table",
    "TaskCount",
    "TreatmentSection",
    "build_report",
    "check_labels",
    "compared_rows",
    "eligibility",
    "evaluate_gate",
    "gate_from_report",
    "group_estimates",
    "headline_markdown",
    "judge_runs",
    "headline_markdown",
    "judging_cost",
    "load_labels",
    "load_report",
    "load_runs",
    "macro",
    "mean_interval",
    "paired_difference",
    "paired_estimates",
    "pass_at_k",
    "pass_hat_k",
    "pooled_score",
    "pass_k_curves_svg",
    "pass_k_figure",
    "plan_review",
    "pooled_interval",
    "headline_markdown",
    "render_html",
    "render_markdown",
    "rogan_gladen",
    "CARD_FILE",
    "ClusterSource",
    "check_out_dir",
    "eval_card",
    "load_schema",
    "write_eval_card",
    "runset_from_gold",
    "score_from_gold",
    "sections",
    "write_report",
    "write_runs",
]
