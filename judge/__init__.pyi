# The public API of ``import judge``: this file is the one map of it. Type checkers read it as
# the package's interface; judge/__init__.py reads it at import to load each name from its
# module on first use (SPEC 1, lazy loading, as scipy and scikit-image do). Everything else is
# reachable from its package (judge.review, judge.runsets, judge.service, ...). The groups
# follow what a user does, in the order data flows (ruff's import sorting is off for this file).

from judge.version import __version__ as __version__

# Stores: a SQLite file on a laptop, PostgreSQL for a team.
from judge.store import Store as Store
from judge.store import open_store as open_store
from judge.store.copy import CopyReport as CopyReport
from judge.store.copy import copy_store as copy_store
from judge.store.copy import migrate_store as migrate_store

# Cases, traces and rubrics in.
from judge.types import Case as Case
from judge.cases import load_cases as load_cases
from judge.exchange import import_traces as import_traces
from judge.rubrics import Rubric as Rubric
from judge.rubrics import load_rubric as load_rubric

# Judging.
from judge.judging import JudgeOptions as JudgeOptions
from judge.judging import RunSummary as RunSummary
from judge.judging import judge_cases as judge_cases
from judge.types import Judgment as Judgment

# Calibrating a judge against gold, and comparing judges.
from calibration.card import Card as Card
from calibration.card import load_card as load_card
from calibration.options import CalibrationOptions as CalibrationOptions
from calibration.options import CompareOptions as CompareOptions
from judge.carding import CalibrationRun as CalibrationRun
from judge.carding import calibrate as calibrate
from judge.carding import compare_judges as compare_judges
from judge.carding import plan_labels_for_card as plan_labels_for_card
from judge.diagnosis import calibrate_steps as calibrate_steps

# Probing a judge: perturbations of gold cases whose right answer is known (judge.probes has
# the options, the report and the drift checks on an anchor set).
from judge.probes import run_probes as run_probes

# Routing verdicts with a card, people's labels back as gold.
from judge.review import RoutingRun as RoutingRun
from judge.review import route as route
from judge.routing import audit_cards as audit_cards
from judge.review import GoldExport as GoldExport
from judge.review import export_gold as export_gold

# Scoring run sets and gating a release.
from judge.runsets import GateResult as GateResult
from judge.runsets import ReportOptions as ReportOptions
from judge.runsets import RunSetReport as RunSetReport
from judge.runsets import gate as gate
from judge.runsets import load_runs as load_runs
from judge.runsets import score_runs as score_runs
from judge.runsets import write_report as write_report

# Where traces and reviewers already are: import_traces above takes a file or a platform URL
# (phoenix+http://HOST:PORT/projects/NAME, mlflow+http://HOST:PORT/experiments/ID); verdicts
# out to it, people's labels back as gold; or verdicts as an OpenTelemetry (OTLP) document.
from judge.exchange import export_verdicts as export_verdicts
from judge.exchange import import_labels as import_labels
from judge.connectors import export_otel as export_otel

__all__: list[str]
