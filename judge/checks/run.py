"""Run every registered check on a case: ``unknown`` (never ``pass``) when the check's input is
missing or cannot be read."""

from __future__ import annotations

from collections.abc import Sequence

from judge.checks.base import Check, Finding, Inputs, unknown
from judge.checks.diff import DiffError, ParsedDiff, parse_diff
from judge.checks.registry import CHECKS
from judge.types import Case, CheckResult


def _result(check: Check, finding: Finding) -> CheckResult:
    return CheckResult(
        id=check.id,
        version=check.version,
        status=finding.status,
        hard=check.hard,
        criterion=check.criterion,
        evidence=finding.evidence,
        reason=finding.reason,
    )


def _diff_inputs(case: Case) -> ParsedDiff | str:
    """The parsed diff, or the reason the diff checks cannot run."""
    if case.diff is None or not case.diff.strip():
        return "the case has no diff"
    try:
        return parse_diff(case.diff)
    except DiffError as exc:
        return f"the diff does not parse: {exc}"


def _run_one(check: Check, inputs: Inputs) -> Finding:
    try:
        finding = check.run(inputs)
    except Exception as exc:  # a check's own bug must not sink the run: unknown, with why
        return unknown(f"the check raised {type(exc).__name__}: {exc}")
    binary = [f.path for f in inputs.diff.binary_files] if inputs.diff else []
    if finding.status == "pass" and binary:
        return unknown(f"binary change not inspected: {', '.join(binary[:3])}")
    return finding


def run_checks(case: Case, *, protected: Sequence[str] = ()) -> list[CheckResult]:
    """Every registered check on ``case``, in the registry's order. ``protected``: the
    rubric's protected (evaluator) path globs. A diff check on a case without a readable diff,
    and a trace check on a case without a trace, is ``unknown`` with the reason."""
    diff = _diff_inputs(case)
    parsed = diff if isinstance(diff, ParsedDiff) else None
    inputs = {
        "diff": Inputs(case, parsed, tuple(protected)),
        "trace": Inputs(case, None, tuple(protected)),
    }
    results: list[CheckResult] = []
    for check in CHECKS.values():
        if check.kind == "diff" and parsed is None:
            assert isinstance(diff, str)
            finding = unknown(diff)
        elif check.kind == "trace" and not case.trace:
            finding = unknown("the case has no trace")
        else:
            finding = _run_one(check, inputs[check.kind])
        results.append(_result(check, finding))
    return results
