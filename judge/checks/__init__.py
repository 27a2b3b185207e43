"""Deterministic checks of a run's diff and trace: versioned code, no model.

``run_checks(case, protected=...)`` runs every check of ``CHECKS`` (id -> check: id, version,
hard, criterion, kind ``diff`` | ``trace``) and returns one ``CheckResult`` each; a check whose
input is missing or unreadable is ``unknown`` with the reason, never ``pass``."""

from judge.checks.base import Check
from judge.checks.diff import DiffError, ParsedDiff, parse_diff
from judge.checks.registry import CHECKS
from judge.checks.run import run_checks

__all__ = ["CHECKS", "Check", "DiffError", "ParsedDiff", "parse_diff", "run_checks"]
