"""What a check is: an id, a version, whether it may act as a hard gate, the criterion it speaks
to, what it reads (the diff or the trace) and a function from a case's parsed inputs to a
finding. The registry (``judge.checks.CHECKS``) lists them in the order they run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from judge.checks.diff import ParsedDiff
from judge.types import Case, CheckStatus

CheckKind = Literal["diff", "trace"]


@dataclass(frozen=True)
class Finding:
    """A check's outcome before it is stamped with the check's id and version."""

    status: CheckStatus
    reason: str
    evidence: list[str] = field(default_factory=list)


def passed(reason: str) -> Finding:
    return Finding("pass", reason)


def failed(reason: str, evidence: Sequence[str]) -> Finding:
    return Finding("fail", reason, list(dict.fromkeys(evidence)))


def unknown(reason: str) -> Finding:
    return Finding("unknown", reason)


@dataclass(frozen=True)
class Inputs:
    """What a check reads: the case, its parsed diff (``None`` when the check is a trace
    check) and the rubric's protected path globs."""

    case: Case
    diff: ParsedDiff | None
    protected: Sequence[str] = ()
    #: What one check read that the next may reuse (the trace's commands), per case.
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Check:
    """A deterministic check. ``hard``: it may decide its criterion when it fails (only a
    check whose suites measure precision >= 0.95, Wilson lower bound >= 0.90)."""

    id: str
    version: int
    hard: bool
    criterion: str
    kind: CheckKind
    #: One line: what a failure means.
    summary: str
    run: Callable[[Inputs], Finding] = field(repr=False, compare=False)
