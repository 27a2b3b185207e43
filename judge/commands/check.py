"""``judge check``: the deterministic checks on a case file, with no model; or, with
``--suites``, each check's precision and recall on its own suites."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

import judge
import judge.cases
import judge.checks
from judge.types import CheckResult

#: Exit code as ``judge run``'s: 1 when some input records were invalid.
EXIT_INVALID_INPUT = 1
FORMATS = ("table", "jsonl")


@click.command()
@click.argument(
    "input_file", metavar="[CASES.jsonl]", required=False, type=click.Path(dir_okay=False)
)
@click.option(
    "--rubric",
    "rubric_ref",
    help="A rubric (id or id@version): the checks use the protected paths it names.",
)
@click.option(
    "--protected",
    multiple=True,
    metavar="GLOB",
    help="A protected (evaluator) path glob, e.g. 'eval/*'; repeat for several.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "--diff",
    "diff_file",
    type=click.Path(dir_okay=False),
    help="Instead of a case file: check one unified diff (git diff, a .patch) on its own; the "
    "trace checks are then unknown.",
)
@click.option(
    "--suites",
    is_flag=True,
    help="Instead of a case file: each check's precision and recall (Wilson 95%) on its "
    "shipped suites, by who wrote the diff (agent, human, handwritten).",
)
def check(
    input_file: str | None,
    rubric_ref: str | None,
    protected: tuple[str, ...],
    fmt: str,
    diff_file: str | None,
    suites: bool,
) -> None:
    """Run the deterministic checks (tests deleted or skipped, assertions weakened, test
    configuration that runs less, exits and patched harnesses, protected files, trace checks)
    on every case of CASES.jsonl, without any model. A check whose input is missing (no diff,
    no trace) or unreadable (a diff that does not parse, a binary change, a diff too large)
    is unknown, with the reason. Exit code 0; 1 when some input records were invalid.
    """
    if suites:
        if input_file is not None:
            raise click.UsageError("--suites takes no case file")
        _print_suites(judge.checks.measure_suites(), fmt)
        return
    if input_file is not None and diff_file is not None:
        raise click.UsageError("give a case file or --diff, not both")
    if input_file is None and diff_file is None:
        raise click.UsageError("give a case file (or --diff, or --suites)")
    globs = list(protected)
    if rubric_ref is not None:
        rubric = judge.load_rubric(rubric_ref)
        # A rubric names its protected paths in its spec's ``protected`` list (when it has one).
        globs += list(getattr(rubric.spec, "protected", None) or ())
    if diff_file is not None:
        loaded = judge.cases.LoadedCases(cases=[judge.cases.diff_case(diff_file)])
    else:
        assert input_file is not None
        loaded = judge.load_cases(Path(input_file))
    for error in loaded.errors:
        click.echo(f"invalid record: {error}", err=True)
    results = [(case.id, judge.checks.run_checks(case, protected=globs)) for case in loaded.cases]
    if fmt == "jsonl":
        for case_id, checks in results:
            click.echo(json.dumps({"case_id": case_id, "checks": [_row(r) for r in checks]}))
    else:
        _print_table(results)
    if loaded.errors:
        sys.exit(EXIT_INVALID_INPUT)


def _row(result: CheckResult) -> dict[str, object]:
    return {
        "id": result.id,
        "version": result.version,
        "status": result.status,
        "hard": result.hard,
        "evidence": result.evidence,
        "reason": result.reason,
    }


_STYLE = {"pass": "green", "fail": "red", "unknown": "yellow"}


def _print_table(results: list[tuple[str, list[CheckResult]]]) -> None:
    table = Table(title="Deterministic checks (passes counted, failures and unknowns listed)")
    for column in ("case", "check", "status", "hard", "evidence", "reason"):
        table.add_column(column, overflow="fold")
    for case_id, checks in results:
        passes = sum(1 for r in checks if r.status == "pass")
        table.add_row(case_id, f"{passes} of {len(checks)} pass", "", "", "", "")
        for r in checks:
            if r.status == "pass":
                continue
            table.add_row(
                "",
                f"{r.id}@{r.version}",
                f"[{_STYLE[r.status]}]{r.status}[/]",
                "hard" if r.hard else "soft",
                "\n".join(r.evidence[:3]) + (" ..." if len(r.evidence) > 3 else ""),
                r.reason[:200],
            )
    Console().print(table)


def _rate(value: tuple[float | None, float, float]) -> str:
    point, lo, hi = value
    return "-" if point is None else f"{point:.3f} [{lo:.2f}, {hi:.2f}]"


def _print_suites(figures: list[judge.checks.CheckFigures], fmt: str) -> None:
    if fmt == "jsonl":
        for fig in figures:
            click.echo(json.dumps(fig.as_dict()))
        return
    table = Table(
        title=f"Checks on their suites: precision and recall, Wilson 95% (hard needs precision "
        f">= {judge.checks.HARD_PRECISION}, lower bound >= {judge.checks.HARD_LOWER})"
    )
    for column in ("check", "hard", "tp", "fp", "fn", "precision", "recall"):
        table.add_column(column)
    for author in judge.checks.AUTHORS:
        table.add_column(f"{author}: P / R")
    for fig in figures:
        t = fig.total
        cells = [
            f"{fig.check_id}@{fig.version}",
            "hard" if fig.hard else "soft",
            str(t.tp),
            str(t.fp),
            str(t.fn),
            _rate(t.precision),
            _rate(t.recall),
        ]
        for author in judge.checks.AUTHORS:
            split = fig.by_author.get(author)
            if split is None:
                cells.append("-")
                continue
            p, r = split.precision[0], split.recall[0]
            cells.append(
                f"{'-' if p is None else f'{p:.2f}'} / {'-' if r is None else f'{r:.2f}'}"
                f" (n={split.tp + split.fp + split.fn + split.tn + split.unknown})"
            )
        table.add_row(*cells)
    Console().print(table)
