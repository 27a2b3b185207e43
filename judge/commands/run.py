"""``judge run``, ``judge show`` and ``judge rubrics``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

import judge.cases
import judge.judging
import judge.providers
import judge.rubrics
import judge.store
from judge.commands.judging_options import judging_options
from judge.commands.options import db_option, file_option, models_option
from judge.commands.progress import judging_progress
from judge.commands.stores import require_store

if TYPE_CHECKING:
    from judge.judging import RunSummary
    from judge.types import Judgment


#: Exit codes: 0 every record judged; 1 some input records were invalid (the rest were judged);
#: 3 some judgments ended in a provider or parse failure (no verdict for them).
EXIT_INVALID_INPUT = 1
EXIT_FAILED_JUDGMENTS = 3


@click.command()
@click.argument("input_file", metavar="INPUT.jsonl", type=click.Path(dir_okay=False))
@click.option("--rubric", "rubric_ref", required=True, help="Rubric id or id@version.")
@models_option(help="litellm model id; repeat for a panel of judges.")
@db_option()
@file_option("--out", help="Also write the judgments as JSONL.")
@click.option("--limit", type=int, help="Judge only the first N valid records.")
@judging_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
def run(
    input_file: str,
    rubric_ref: str,
    models: tuple[str, ...],
    db: str,
    out: str | None,
    limit: int | None,
    quiet: bool,
    options: judge.judging.JudgeOptions,
) -> None:
    """Judge the cases of INPUT.jsonl with a rubric and one or more models; store every judgment.

    Invalid records are reported by line and field and skipped; all valid records are judged.
    Exit code 0: all judged; 1: some records were invalid; 3: some judgments failed (provider
    or parse failure, stored with that status, never as a verdict).
    """
    rubric = judge.rubrics.load_rubric(rubric_ref)
    # Unknown model ids and missing keys stop here (exit 2), before the store is opened.
    judge.providers.check_models(models, api_base=options.api_base, router=options.router)
    loaded = judge.cases.load_cases(Path(input_file), limit=limit)
    for error in loaded.errors:
        click.echo(f"invalid record: {error}", err=True)
    with judge.store.open_store(db) as store, judging_progress(quiet=quiet) as shown:
        summary = judge.judging.judge_cases(
            store,
            loaded.cases,
            rubric=rubric,
            models=models,
            options=options,
            on_start=shown.on_start,
            on_done=shown.on_done,
            source=str(input_file),
        )
    for step, failure in summary.errors:
        click.echo(f"not judged: case {step.case.id}: {failure}", err=True)
    if out:
        write_jsonl(Path(out), [o.judgment for o in summary.outcomes])
    _print_summary(summary, db=db, out=out, n_invalid=len(loaded.errors))
    hint = judge.providers.unreached_hint((o.judgment for o in summary.outcomes), options.api_base)
    if hint:
        click.echo(hint, err=True)
    if loaded.errors:
        sys.exit(EXIT_INVALID_INPUT)
    if summary.failed or summary.errors:
        sys.exit(EXIT_FAILED_JUDGMENTS)


def write_jsonl(path: Path, judgments: list[Judgment]) -> None:
    """Write judgments as JSONL (one per line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for judgment in judgments:
            handle.write(judgment.model_dump_json() + "\n")


def _print_summary(summary: RunSummary, *, db: str, out: str | None, n_invalid: int) -> None:
    console = Console(stderr=True)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
    console.print(
        f"[bold]{len(summary.outcomes)} judgments[/]: {counts or 'none'}; "
        f"{summary.called} called the model, {summary.cached} from the store; "
        f"{summary.prompt_tokens} prompt tokens; {summary.seconds:.1f}s"
    )
    if n_invalid:
        console.print(f"[yellow]{n_invalid} invalid record(s) skipped (see above)[/]")
    where = f"stored in {judge.store.mask_url(db)}" + (f" and {out}" if out else "")
    shown = judge.store.mask_url(db)
    console.print(f"{where} (batch {summary.batch_id}); list them with: judge show --db {shown}")


@click.command()
@db_option()
@click.option("--rubric", "rubric_id", help="Only this rubric id.")
@click.option("--model", help="Only this model.")
@click.option("--case", "case_id", help="Only this case id.")
@click.option("--status", type=click.Choice(["ok", "abstain", "parse_error", "infra_error"]))
@click.option("--limit", type=int, default=50, show_default=True)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table", show_default=True
)
def show(
    db: str,
    rubric_id: str | None,
    model: str | None,
    case_id: str | None,
    status: str | None,
    limit: int,
    fmt: str,
) -> None:
    """List stored judgments."""
    require_store(db, "run `judge run ...` first")
    with judge.store.open_store(db) as store:
        judgments = list(
            store.judgments(
                rubric_id=rubric_id, model=model, case_id=case_id, status=status, limit=limit
            )
        )
    if fmt == "jsonl":
        for judgment in judgments:
            click.echo(judgment.model_dump_json())
        return
    print_judgments(judgments)


def print_judgments(judgments: list[Judgment]) -> None:
    """A readable table of judgments on stdout."""
    table = Table(show_lines=False)
    for column in ("case", "order", "status", "verdict", "P(labels)", "cited", "tokens", "s"):
        table.add_column(column, overflow="fold")
    for j in judgments:
        v = j.verdict
        probs = ""
        if v and v.label_probs:
            probs = " ".join(f"{k[:4]}={p:.2f}" for k, p in v.label_probs.items())
        cited = ""
        if v:
            cited = ",".join(v.cited) + (
                f" (+{len(v.invalid_citations)} invalid)" if v.invalid_citations else ""
            )
        table.add_row(
            j.case_id[-48:],
            j.provenance.order or "",
            j.status,
            v.label if v else (j.error or "")[:60],
            probs,
            cited,
            str(j.usage.prompt_tokens),
            f"{j.usage.latency_s:.1f}",
        )
    Console().print(table)


@click.command()
def rubrics() -> None:
    """List the rubrics and their versions."""
    for rubric in judge.rubrics.list_rubrics():
        click.echo(f"{rubric.ref:32} {rubric.kind:16} {rubric.digest[:19]}  {rubric.spec.title}")
