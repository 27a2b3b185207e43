"""Perturbation probes: the judge's own eval set (``judge probe``), and drift checks on an anchor
set (``judge drift check``).

``transforms`` is the registry of the probes (named, versioned, seeded transforms of a real case
whose right answer is known), which live by family in ``degradations``, ``invariances`` and
``pairwise`` (``probe`` is their type, ``editing`` the trace edits they share); ``workflow``
perturbs a gold set, judges originals and perturbations in one batch and reports each probe;
``stats`` the task-clustered intervals; ``report`` the files; ``drift`` the anchor re-checks,
their control charts and the alarm that marks a card stale.
"""

from judge.probes import drift
from judge.probes.drift import (
    ChartParams,
    ChartPoint,
    Charts,
    CheckStats,
    DriftCheck,
    charts,
    check_drift,
    drift_history,
    ewma_chart,
)
from judge.probes.report import write_reports
from judge.probes.stats import Rate, Shift, clustered_mean, clustered_rate, status_of
from judge.probes.transforms import (
    PROBES,
    PROBES_BY_NAME,
    Applied,
    Probe,
    ProbeContext,
    Skipped,
    apply_probe,
    is_test_path,
    perturbed_id,
    probe_origin,
    select_probes,
    split_diff,
)
from judge.probes.workflow import (
    DEFAULT_BAR,
    Plan,
    ProbeOptions,
    ProbeReport,
    ProbeRun,
    analyse,
    load_gold_cases,
    plan_probes,
    run_probes,
)

__all__ = [
    "drift",
    "ChartParams",
    "ChartPoint",
    "Charts",
    "CheckStats",
    "DriftCheck",
    "charts",
    "check_drift",
    "drift_history",
    "ewma_chart",
    "DEFAULT_BAR",
    "PROBES",
    "PROBES_BY_NAME",
    "Applied",
    "Plan",
    "Probe",
    "ProbeContext",
    "ProbeOptions",
    "ProbeReport",
    "ProbeRun",
    "Rate",
    "Shift",
    "Skipped",
    "analyse",
    "load_gold_cases",
    "apply_probe",
    "is_test_path",
    "clustered_mean",
    "clustered_rate",
    "perturbed_id",
    "plan_probes",
    "probe_origin",
    "run_probes",
    "select_probes",
    "split_diff",
    "status_of",
    "write_reports",
]
