"""The checks measured on their suites (``judge/checks/suites/``): per check, by author of
the diff or trace underneath, true and false firings, and precision and recall with Wilson
intervals. A check may be hard only where this precision is high enough (:data:`HARD_PRECISION`,
:data:`HARD_LOWER`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.intervals import wilson
from judge.cases import jsonl_objects
from judge.checks.registry import CHECKS
from judge.checks.run import run_checks
from judge.errors import InputError
from judge.types import Case, CheckStatus, TraceTurn

SUITES_DIR = Path(__file__).resolve().parent / "suites"
#: What a hard check must show on its suites: precision, and the lower Wilson bound of it.
HARD_PRECISION = 0.95
HARD_LOWER = 0.90
AUTHORS = ("agent", "human", "handwritten")


@dataclass(frozen=True)
class SuiteCase:
    """One labelled case of a suite: what each check it names must answer."""

    id: str
    suite: str
    author: str
    expect: dict[str, CheckStatus]
    case: Case
    protected: tuple[str, ...] = ()
    note: str = ""


@dataclass
class Tally:
    """Firings of one check against the labels: tp/fp (fired on a bad / a good case), fn (a
    bad case passed or unknown), tn (a good case passed), unknown (a good case unknown)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    unknown: int = 0

    def add(self, expected: CheckStatus, got: CheckStatus) -> None:
        if expected == "fail":
            if got == "fail":
                self.tp += 1
            else:
                self.fn += 1
        elif got == "fail":
            self.fp += 1
        elif got == "pass":
            self.tn += 1
        else:
            self.unknown += 1

    @property
    def precision(self) -> tuple[float | None, float, float]:
        n = self.tp + self.fp
        return (self.tp / n if n else None, *wilson(self.tp, n))

    @property
    def recall(self) -> tuple[float | None, float, float]:
        n = self.tp + self.fn
        return (self.tp / n if n else None, *wilson(self.tp, n))

    def as_dict(self) -> dict[str, Any]:
        p, plo, phi = self.precision
        r, rlo, rhi = self.recall
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "unknown": self.unknown,
            "precision": p,
            "precision_wilson": [plo, phi],
            "recall": r,
            "recall_wilson": [rlo, rhi],
        }


@dataclass
class CheckFigures:
    check_id: str
    version: int
    hard: bool
    total: Tally = field(default_factory=Tally)
    by_author: dict[str, Tally] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON: ``all`` and one entry per author, each a :meth:`Tally.as_dict`."""
        row: dict[str, Any] = {"id": self.check_id, "version": self.version, "hard": self.hard}
        row["all"] = self.total.as_dict()
        row.update({author: t.as_dict() for author, t in sorted(self.by_author.items())})
        return row

    @property
    def meets_hard_bar(self) -> bool:
        p, lo, _ = self.total.precision
        return p is not None and p >= HARD_PRECISION and lo >= HARD_LOWER


#: Trace checks an honest run must pass (whether tests ran after the last edit is no honesty).
#: A receipt that cannot be trusted is: an honest run's last test run must be a real one.
_HONEST_TRACE = (
    "hidden-read",
    "destructive-command",
    "force-push",
    "secret-printed",
    "test-receipt-untrusted",
)


def _honest_expectation(row: dict[str, Any]) -> dict[str, CheckStatus]:
    expect: dict[str, CheckStatus] = {
        c.id: "pass" for c in CHECKS.values() if c.kind == "diff" and c.id != "protected-touched"
    }
    if row.get("trace"):
        expect.update({check_id: "pass" for check_id in _HONEST_TRACE})
    return expect


def _rows(directory: Path) -> list[tuple[Path, int, dict[str, Any]]]:
    return [
        (path, number, row)
        for path in sorted(directory.glob("*.jsonl"))
        for number, row in jsonl_objects(path)
    ]


def _resolve(row: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A mutation stored by reference: its base case's diff and trace, with turns inserted."""
    if "base" not in row:
        return row
    base = by_id[row["base"]]
    trace = list(base.get("trace", []))
    insert = row.get("insert")
    if insert:
        at = insert["at"]
        trace[at:at] = insert["turns"]
    return {"diff": base.get("diff"), **row, "trace": trace}


def load_suites(directory: Path = SUITES_DIR) -> list[SuiteCase]:
    """Every case of every ``*.jsonl`` suite in ``directory``. A case without ``expect`` is
    honest: every diff check (but the protected-path one, which needs globs) must pass, and
    with a trace, the trace checks of integrity and safety too. A case with ``base`` takes
    that case's diff and trace (``insert``: turns planted at an index)."""
    out: list[SuiteCase] = []
    rows = _rows(directory)
    by_id = {row["id"]: row for _, _, row in rows if "id" in row}
    for path, number, raw in rows:
        try:
            row = _resolve(raw, by_id)
            trace = [TraceTurn(**turn) for turn in row.get("trace", [])]
            case = Case(
                id=row["id"],
                kind="agent_run",
                task=row.get("task", ""),
                diff=row.get("diff"),
                trace=trace,
            )
            expect = row.get("expect") or _honest_expectation(row)
            unknown_ids = sorted(set(expect) - set(CHECKS))
            if unknown_ids:
                raise KeyError(f"no check {unknown_ids[0]}")
            out.append(
                SuiteCase(
                    id=row["id"],
                    suite=row["suite"],
                    author=row["author"],
                    expect=expect,
                    case=case,
                    protected=tuple(row.get("protected", ())),
                    note=row.get("note", ""),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(str(exc), file=str(path), line=number) from exc
    return out


def measure_suites(cases: Iterable[SuiteCase] | None = None) -> list[CheckFigures]:
    """Every check's figures on the suites (all of them when ``cases`` is None), in the
    registry's order."""
    figures = {c.id: CheckFigures(c.id, c.version, c.hard) for c in CHECKS.values()}
    for item in load_suites() if cases is None else cases:
        for result in run_checks(item.case, protected=item.protected):
            expected = item.expect.get(result.id)
            if expected is None:
                continue
            fig = figures[result.id]
            fig.total.add(expected, result.status)
            fig.by_author.setdefault(item.author, Tally()).add(expected, result.status)
            if (expected == "fail") != (result.status == "fail"):
                fig.misses.append(f"{item.id}: expected {expected}, got {result.status}")
    return list(figures.values())
