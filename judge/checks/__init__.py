"""Deterministic checks of a run's diff and trace: versioned code, no model.

``run_checks(case, protected=...)`` runs every check of ``CHECKS`` (id -> check: id, version,
hard, criterion, kind ``diff`` | ``trace``) and returns one ``CheckResult`` each; a check whose
input is missing or unreadable is ``unknown`` with the reason, never ``pass``.
``measure_suites()`` gives each check's precision and recall on its suites (``suites/``)."""

from judge.checks.base import Check
from judge.checks.diff import DiffError, ParsedDiff, parse_diff, unreadable_diffs
from judge.checks.measure import (
    AUTHORS,
    HARD_LOWER,
    HARD_PRECISION,
    CheckFigures,
    SuiteCase,
    Tally,
    load_suites,
    measure_suites,
)
from judge.checks.registry import CHECKS
from judge.checks.run import run_checks

__all__ = [
    "AUTHORS",
    "CHECKS",
    "HARD_LOWER",
    "HARD_PRECISION",
    "Check",
    "CheckFigures",
    "DiffError",
    "ParsedDiff",
    "SuiteCase",
    "Tally",
    "load_suites",
    "measure_suites",
    "parse_diff",
    "run_checks",
    "unreadable_diffs",
]
