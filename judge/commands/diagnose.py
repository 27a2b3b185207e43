"""``judge diagnose``: the first bad decision of each failed run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.table import Table

import judge
import judge.diagnosis
import judge.providers
import judge.review
import judge.store
from calibration.fbd import load_step_card
from judge.commands.judging_options import judging_options
from judge.commands.options import db_option, double_fraction_option, file_option
from judge.commands.progress import judging_progress
from judge.defaults import DEFAULT_MODEL
from judge.errors import InputError

#: Exit codes as ``judge run``'s: 1 invalid input records; 3 failed judgments.
EXIT_INVALID_INPUT = 1
EXIT_FAILED_JUDGMENTS = 3
FORMATS = ("table", "jsonl", "yaml")


@click.command()
@click.argument(
    "input_file", metavar="[INPUT.jsonl]", required=False, type=click.Path(dir_okay=False)
)
@click.option(
    "--rubric",
    "rubric_ref",
    default=judge.diagnosis.DEFAULT_FBD_RUBRIC,
    show_default=True,
    help="An fbd rubric (id or id@version).",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    default=[DEFAULT_MODEL],
    show_default=True,
    help="litellm model id; repeat for several diagnosing judges.",
)
@db_option()
@file_option(
    "--card",
    help="A first-bad-decision card (judge calibrate --kind fbd): adds each run's step set.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@file_option("--out", help="Also write the runs here (JSONL).")
@click.option("--limit", type=int, help="Diagnose only the first N failed runs.")
@click.option(
    "--review",
    "queue_review",
    is_flag=True,
    help="Queue every diagnosed run for review (judge serve's page): a person confirms the "
    "critical step, moves it or says there is none; only that confirms a diagnosis.",
)
@click.option(
    "--unlocated-only",
    is_flag=True,
    help="With --review: leave out the located runs (step set of one step), which are "
    "otherwise queued after the others.",
)
@double_fraction_option()
@judging_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
def diagnose(
    input_file: str | None,
    rubric_ref: str,
    models: tuple[str, ...],
    db: str,
    card: str | None,
    fmt: str,
    out: str | None,
    limit: int | None,
    queue_review: bool,
    unlocated_only: bool,
    double_fraction: float,
    quiet: bool,
    options: judge.JudgeOptions,
) -> None:
    """Name the first bad decision of each failed run of INPUT.jsonl (cases or gold records),
    or, with no INPUT, of the runs in the store that a judge found failed.

    Runs labelled pass are skipped, with the reason. Every diagnosis is tentative until a
    person confirms it on the review page (--review queues the runs there; a confirmed one
    shows as confirmed here). Repeated --samples give each run step scores; with --card, the
    step set certified to hold people's critical step. Exit code 0: all diagnosed; 1: invalid
    input records; 3: some diagnoses failed (provider or parse failure, stored with that
    status).
    """
    if unlocated_only and not queue_review:
        raise click.UsageError("--unlocated-only goes with --review")
    rubric = judge.load_rubric(rubric_ref)
    judge.providers.check_models(models, api_base=options.api_base, router=options.router)
    step_card = load_step_card(card) if card else None
    errors: list[InputError] = []
    with judge.open_store(db) as store:
        if input_file is not None:
            loaded = judge.load_cases(Path(input_file))
            errors, cases, gold = loaded.errors, loaded.cases, loaded.gold
        else:
            cases, gold = judge.diagnosis.stored_failures(store), {}
        for error in errors:
            click.echo(f"invalid record: {error}", err=True)
        if limit is not None:
            cases = cases[:limit]
        with judging_progress(quiet=quiet or fmt != "table") as shown:
            result = judge.diagnosis.diagnose(
                store,
                cases,
                models=models,
                rubric=rubric,
                options=options,
                gold=gold,
                card=step_card,
                on_start=shown.on_start,
                on_done=shown.on_done,
            )
        queued = (
            judge.review.queue_diagnoses(
                store, result, unlocated_only=unlocated_only, double_fraction=double_fraction
            )
            if queue_review
            else None
        )
    _write(result, queued, fmt, out)
    failed = sum(1 for r in result.runs if r.status in ("parse_error", "infra_error"))
    if errors:
        sys.exit(EXIT_INVALID_INPUT)
    if failed:
        sys.exit(EXIT_FAILED_JUDGMENTS)


def _write(
    result: judge.diagnosis.DiagnosisResult,
    queued: judge.review.FbdQueued | None,
    fmt: str,
    out: str | None,
) -> None:
    """The skipped and queued runs on stderr, the runs in ``fmt`` on stdout, and ``out``
    (JSONL)."""
    for skipped in result.skipped:
        click.echo(f"skipped {skipped.case_id}: {skipped.reason}", err=True)
    if queued is not None:
        for left in queued.skipped:
            click.echo(f"not queued {left.case_id}: {left.reason}", err=True)
        click.echo(f"review: {len(queued.items)} run(s) in the queue, {queued.new} new", err=True)
    if fmt == "jsonl":
        for run in result.runs:
            click.echo(json.dumps(run.as_json()))
    elif fmt == "yaml":
        click.echo(
            yaml.safe_dump_all(
                [r.as_report() for r in result.runs], sort_keys=False, allow_unicode=True
            ),
            nl=False,
        )
    else:
        _table(result)
    if out:
        Path(out).write_text(
            "".join(json.dumps(r.as_json()) + "\n" for r in result.runs), encoding="utf-8"
        )


def _table(result: judge.diagnosis.DiagnosisResult) -> None:
    table = Table(title="first bad decisions (tentative until a person confirms)")
    for column in ("run", "status", "critical step", "invariant", "owner", "step set", "fbd"):
        table.add_column(column)
    for r in result.runs:
        step = f"{r.critical_step} (step {r.step_index})" if r.step_index is not None else "-"
        invariant = (r.report.violated_invariant or "-") if r.report else "-"
        owner = (r.report.owner or "-") if r.report else "-"
        sets = "-" if r.step_set is None else ",".join(map(str, r.step_set)) or "(empty)"
        fbd: str = r.fbd_status
        if r.confirmed_step is not None and r.confirmed_step != r.step_index:
            fbd += f" (moved to step {r.confirmed_step})"
        table.add_row(r.case_id, r.status, step, invariant, owner, sets, fbd)
    console = Console()
    console.print(table)
    located = sum(1 for r in result.runs if r.step_index is not None)
    confirmed = sum(1 for r in result.runs if r.fbd_status == "confirmed")
    console.print(
        f"{len(result.runs)} diagnosed, {located} with a critical step, "
        f"{len(result.skipped)} skipped, {confirmed} confirmed by a person; the rest tentative"
    )
