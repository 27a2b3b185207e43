"""The checks that fired on a reviewed run (the composite verdict, judge.judging.composite): each
with its reason and the diff hunks it rests on, for the review page; and the judge's evidence
rebuilt with their numbered items, as the judge saw it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from judge.checks import DiffError, parse_diff
from judge.evidence import EvidenceSet, with_checks
from judge.safety.redact import redact
from judge.types import CheckResult, Judgment, Strict, Verdict, check_ref


class HunkLine(Strict):
    """One line of a firing hunk: its kind (for colouring), text and line numbers."""

    kind: Literal["add", "del", "ctx"]
    text: str
    old: int | None = None
    new: int | None = None


class FiringHunk(Strict):
    """A hunk (or a whole file) a check's outcome rests on."""

    ref: str
    path: str
    lines: list[HunkLine]


class FiringView(Strict):
    """A check that fired on the run, as the review page shows it."""

    check: str
    hard: bool
    #: The check decided the verdict (``Verdict.decided_by``): no judge was asked.
    decided: bool
    reason: str
    #: What the outcome rests on that is not a hunk (evidence ids, trace turns).
    evidence: list[str]
    hunks: list[FiringHunk]


def firings(judgments: Sequence[Judgment]) -> tuple[list[CheckResult], dict[str, str]]:
    """The checks that fired (from the first judgment that records them, in the order shown
    to the judge), and check ref -> the criterion each decided."""
    for j in judgments:
        if j.verdict is not None and j.verdict.checks:
            return list(j.verdict.checks), decided_criteria(j.verdict)
    return [], {}


def decided_criteria(verdict: Verdict) -> dict[str, str]:
    """Check ref -> the criterion it decided on ``verdict`` (its own, without criteria)."""
    decided = {c.decided_by: c.id for c in verdict.criteria if c.decided_by is not None}
    if verdict.decided_by is not None and not verdict.criteria:
        check = next((c for c in verdict.checks if check_ref(c) == verdict.decided_by), None)
        if check is not None and check.criterion is not None:
            decided[verdict.decided_by] = check.criterion
    return decided


def with_firings(evidence: EvidenceSet, judgments: Sequence[Judgment]) -> EvidenceSet:
    """The rebuilt evidence with the check items the judge saw after it."""
    fired, decided = firings(judgments)
    return with_checks(evidence, fired, decided)


def _hunks(diff: str | None, refs: Sequence[str]) -> list[FiringHunk]:
    if not diff or not refs:
        return []
    try:
        parsed = parse_diff(diff)
    except DiffError:
        return []
    out = []
    for f in parsed.files:
        for h in f.hunks:
            if h.ref not in refs and f.ref not in refs:
                continue
            old, new, lines = h.old_start, h.new_start, []
            for tag, text in h.lines:
                shown = redact(tag + text)[0]
                if tag == "+":
                    lines.append(HunkLine(kind="add", text=shown, new=new))
                    new += 1
                elif tag == "-":
                    lines.append(HunkLine(kind="del", text=shown, old=old))
                    old += 1
                else:
                    lines.append(HunkLine(kind="ctx", text=shown, old=old, new=new))
                    old, new = old + 1, new + 1
            out.append(FiringHunk(ref=h.ref, path=f.path, lines=lines))
    return out


def firing_views(diff: str | None, judgments: Sequence[Judgment]) -> list[FiringView]:
    """Every check that fired on the run, with the hunks of ``diff`` it rests on."""
    fired, _ = firings(judgments)
    deciders = {j.verdict.decided_by for j in judgments if j.verdict is not None}
    return [
        FiringView(
            check=check_ref(c),
            hard=c.hard,
            decided=check_ref(c) in deciders,
            reason=c.reason,
            evidence=[e for e in c.evidence if not e.startswith("diff:")],
            hunks=_hunks(diff, [e for e in c.evidence if e.startswith("diff:")]),
        )
        for c in fired
    ]
