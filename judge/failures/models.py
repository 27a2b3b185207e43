"""The records of failure clusters: one failed (or audited) run's labels, and a named cluster.

A run carries three orthogonal labels, never one flat error code (DIAGNOSIS.md section 3):
``symptom`` (what was finally seen), ``critical_cause`` (what the critical step did) and
``root_mechanism`` (which component or contract let it happen), plus its ``owner``. A cluster is
defined by a condition a rule can check on a run's structured features, so that its exposure
(every run where the condition holds, failed or not) can be counted, not only its failures.

Features come in two kinds. Run features (task metadata, the tool classes the trace used, its
horizon, retries, errors...) every run has, failed or not: the part of a condition over them is
what exposure is counted with. Critical-step features (the step's kind, role, tool, stage, the
owner and invariant of its first-bad-decision report) only a diagnosed failure has: their names
start with :data:`STEP_PREFIX`, and a condition's pairs over them only say which failures join
the cluster (:func:`judge.failures.assign.exposure_condition`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge.base import Strict
from judge.types import Owner

#: The prefix of a critical-step feature's name (``step.tool``): a feature only failed runs have.
STEP_PREFIX = "step."

#: Why a run is outside the failure analysis: not an agent failure (DIAGNOSIS.md: the validity
#: and infrastructure filter comes first).
Exclusion = Literal["parse_error", "infra_error", "invalid_task", "no_diagnosis"]


class RunRecord(Strict):
    """One run as the failure analysis sees it: its outcome, its labels and its features."""

    case_id: str
    #: The run set (or store) the run came from, and its place in time or version order.
    run_set: str = ""
    order: int = 0
    #: The system under test (model, harness...): kept, but never shown to the namer.
    system: dict[str, str] = Field(default_factory=dict)
    failed: bool
    excluded: Exclusion | None = None
    symptom: str | None = None
    critical_cause: str | None = None
    root_mechanism: str | None = None
    owner: Owner | None = None
    #: Structured fields of the trace and task (tool classes used, errors, retries, language,
    #: horizon, risk...; the critical step's under ``step.``): what cluster conditions are
    #: written over. Values are strings.
    features: dict[str, str] = Field(default_factory=dict)
    #: The local summary of the critical-step window (what text clustering reads).
    summary: str = ""
    #: Whether the first bad decision was confirmed by a person (or a replay), else tentative.
    fbd_confirmed: bool = False
    cost_usd: float | None = None
    #: Cost spent after the first bad decision, when known.
    cost_after_fbd_usd: float | None = None
    #: Effects the run had: e.g. "duplicate", "irreversible", "data_loss", "safety".
    effects: list[str] = Field(default_factory=list)
    #: The task the run attempted (what an eval family re-runs), when known.
    task_id: str | None = None
    #: The invariant the critical step violated (FBD report's ``violated_invariant``), if any.
    invariant: str | None = None
    #: Counterfactual replays from the critical step, and how many of them succeeded; None when
    #: no replay was recorded (never read as zero).
    replays: int | None = Field(default=None, ge=0)
    replays_recovered: int | None = Field(default=None, ge=0)
    #: The judge's P(pass) for the run, when a judge scored it (audit strata and PPI).
    judge_score: float | None = Field(default=None, ge=0, le=1)
    #: A person's failure category from the source (AgentRx's root-cause category, Who&When's
    #: mistaken agent): kept for measuring clusters against people, never a feature.
    category: str | None = None


class Cluster(Strict):
    """A named failure mechanism: a checkable condition, its definition and its members."""

    cluster_id: str
    definition: str
    exclusions: list[str] = Field(default_factory=list)
    #: The rule: feature name -> required value. A failure joins the cluster when every pair
    #: matches; a run (failed or not) is exposed when every pair over run features (not
    #: ``step.``) matches.
    condition: dict[str, str] = Field(default_factory=dict)
    #: Failed runs assigned to the cluster (case ids).
    members: list[str] = Field(default_factory=list)
    owners: list[str] = Field(default_factory=list)
    hypothesis: str = ""
    #: Where the cluster came from: "auto" (clustering), or a person's merge, split or rename.
    lineage: list[str] = Field(default_factory=list)
    #: ``candidate`` (found by clustering, unnamed), ``named`` (a definition the validator
    #: accepted, or a person's), ``retired`` (merged into another cluster).
    status: Literal["candidate", "named", "retired"] = "candidate"
    #: Why the judge's last proposed name was refused (no checkable mechanism...), if it was.
    rejected: str | None = None
    #: The member runs the definition cites as its evidence (case ids).
    cited: list[str] = Field(default_factory=list)
