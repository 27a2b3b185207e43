"""The run set's failed checks: per treatment, each deterministic check (and run-level
contract) that failed on its runs, how many runs and what share of the analysed ones, with
example runs, the way an evaluation report shows workflow-contract failures beside the task
matrix. Read from what the runs' judgments recorded (``ScoredRun.failed_checks``); nothing is
called."""

from __future__ import annotations

from collections.abc import Sequence

from judge.runsets.models import FailedCheck, RunSetReport
from judge.runsets.scoring import ScoredRun

#: Example runs listed per check.
EXAMPLES = 3


def failed_checks(
    runs: Sequence[ScoredRun], treatments: Sequence[str]
) -> dict[str, list[FailedCheck]] | None:
    """Treatment -> its failed checks, most runs first; None when no run recorded one (a
    report of runs judged without checks reads as it always did)."""
    if not any(r.failed_checks for r in runs):
        return None
    out: dict[str, list[FailedCheck]] = {}
    for t in treatments:
        mine = [r for r in runs if r.treatment == t and r.analysed]
        by_check: dict[str, list[str]] = {}
        for r in mine:
            for check in r.failed_checks:
                by_check.setdefault(check, []).append(r.run_id)
        out[t] = [
            FailedCheck(
                check=check,
                runs_failed=len(ids),
                share=len(ids) / len(mine),
                example_runs=sorted(ids)[:EXAMPLES],
            )
            for check, ids in sorted(by_check.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ]
    return out


def failed_checks_rows(report: RunSetReport) -> list[list[str]] | None:
    """The failed-checks table's rows (treatment, check, runs failed, share, example runs);
    None when the report has none."""
    if report.failed_checks is None:
        return None
    return [
        [t, f.check, str(f.runs_failed), f"{f.share:.3f}", ", ".join(f.example_runs)]
        for t in report.treatments
        for f in report.failed_checks.get(t, [])
    ]


#: The table's header and what it says.
HEADER = ["treatment", "check", "runs failed", "share", "example runs"]
TEXT = (
    "Deterministic checks of the diff and trace (and the rubric's run-level contracts) that "
    "failed, per treatment: runs failed and their share of the treatment's analysed runs. A "
    "failing hard check decides its criterion as fail before any judge is asked."
)
