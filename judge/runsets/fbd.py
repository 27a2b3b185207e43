"""The run-set report's first bad decisions: what ``judge diagnose`` stored of the failed runs
(no model is called): per diagnosing judge, how many runs were diagnosed, located, confirmed and
queued for review, by owner and by violated invariant, and the command that diagnoses the rest.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence

from judge.diagnosis import DEFAULT_FBD_RUBRIC, RunDiagnosis, StoredDiagnoses
from judge.runsets.models import DiagnosingJudge, FirstBadDecisions, ScoredRun

#: What every first bad decision is until a person confirms it.
TENTATIVE = "tentative until a person confirms"


def failed_runs(runs: Sequence[ScoredRun]) -> list[ScoredRun]:
    """The runs a first bad decision is sought for: analysed, completed (a run that timed out
    failed by rule, and was not judged), and judged fail or labelled fail."""
    return [
        r
        for r in runs
        if r.analysed and r.status == "completed" and "fail" in (r.outcome, r.official)
    ]


def _diagnosing_judge(
    model: str, rubric: str, rows: Sequence[RunDiagnosis], stored: StoredDiagnoses
) -> DiagnosingJudge:
    answered = [r for r in rows if r.status in ("ok", "abstain")]
    located = [r for r in answered if r.status == "ok" and r.step_index is not None]
    owners = Counter(r.report.owner if r.report and r.report.owner else "unstated" for r in located)
    invariants = Counter(
        r.report.violated_invariant if r.report and r.report.violated_invariant else "unstated"
        for r in located
    )
    return DiagnosingJudge(
        model=model,
        rubric=rubric,
        diagnosed=len(answered),
        located=len(located),
        no_single_step=len(answered) - len(located),
        failed=len(rows) - len(answered),
        confirmed=sum(r.fbd_status == "confirmed" for r in answered),
        queued_for_review=sum(stored.awaits_review(r, rubric) for r in answered),
        by_owner=dict(owners.most_common()),
        by_invariant=dict(invariants.most_common()),
    )


def first_bad_decisions(
    runs: Sequence[ScoredRun], stored: StoredDiagnoses
) -> FirstBadDecisions | None:
    """What ``stored`` says of the failed runs among ``runs``, per diagnosing judge; None when
    it holds no diagnosis of any of them."""
    failed = failed_runs(runs)
    ids = {r.run_id for r in failed}
    judges = []
    diagnosed: set[str] = set()
    for (model, rubric), rows in stored.by_judge.items():
        mine = [r for r in rows if r.case_id in ids]
        if mine:
            judges.append(_diagnosing_judge(model, rubric, mine, stored))
            diagnosed |= {r.case_id for r in mine if r.status in ("ok", "abstain")}
    if not judges:
        return None
    rest = [r for r in failed if r.run_id not in diagnosed]
    command = None
    if rest:
        first = judges[0]
        command = (
            f"judge diagnose --db {shlex.quote(stored.location)} --model {shlex.quote(first.model)}"
        )
        if first.rubric != DEFAULT_FBD_RUBRIC:
            command += f" --rubric {shlex.quote(first.rubric)}"
    confirmed = sum(j.confirmed for j in judges)
    return FirstBadDecisions(
        failed_runs=len(failed),
        diagnosed_runs=len(diagnosed),
        undiagnosed=[r.run_id for r in rest],
        undiagnosed_not_judged_fail=sum(r.outcome != "fail" for r in rest),
        judges=judges,
        db=stored.location,
        status=f"the others {TENTATIVE}" if confirmed else TENTATIVE,
        command=command,
    )
