"""``judge run``, ``judge show`` and ``judge rubrics``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judge.defaults import DEFAULT_MAX_TOKENS, DEFAULT_MODEL, is_local

if TYPE_CHECKING:
    from judge.runner import Runner, RunSummary, Step
    from judge.types import Judgment


#: Exit codes: 0 every record judged; 1 some input records were invalid (the rest were judged);
#: 3 some judgments ended in a provider or parse failure (no verdict for them).
EXIT_INVALID_INPUT = 1
EXIT_FAILED_JUDGMENTS = 3


@click.command()
@click.argument("input_file", metavar="INPUT.jsonl", type=click.Path(dir_okay=False))
@click.option("--rubric", "rubric_ref", required=True, help="Rubric id or id@version.")
@click.option("--model", "models", multiple=True, default=[DEFAULT_MODEL], show_default=True,
              help="litellm model id; repeat for a panel of judges.")
@click.option("--db", default="judge.db", show_default=True, help="SQLite store.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the judgments as JSONL.")
@click.option("--limit", type=int, help="Judge only the first N valid records.")
@click.option("--orders", type=click.Choice(["one", "both"]), default="both", show_default=True,
              help="Pairwise rubrics: judge in both answer orders.")
@click.option("--samples", type=int, default=1, show_default=True,
              help="Repeated samples per case and order.")
@click.option("--variants", type=int,
              help="Use the first N of the rubric's prompt variants (default: all).")
@click.option("--concurrency", type=int,
              help="Judgments in flight (default 4; 1 for the embedded model, which runs one "
                   "call at a time, so that each judgment's latency is its own).")
@click.option("--token-budget", type=int, help="Evidence token budget (default: the rubric's).")
@click.option("--temperature", type=float,
              help="Sampling temperature (default 0, or 0.7 when --samples > 1).")
@click.option("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, show_default=True)
@click.option("--api-base", help="Send calls to this OpenAI-compatible base URL.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def run(
    input_file: str,
    rubric_ref: str,
    models: tuple[str, ...],
    db: str,
    out: str | None,
    limit: int | None,
    orders: str,
    samples: int,
    variants: int | None,
    concurrency: int | None,
    token_budget: int | None,
    temperature: float | None,
    max_tokens: int,
    api_base: str | None,
    quiet: bool,
) -> None:
    """Judge the cases of INPUT.jsonl with a rubric and one or more models; store every judgment.

    Invalid records are reported by line and field and skipped; all valid records are judged.
    Exit code 0: all judged; 1: some records were invalid; 3: some judgments failed (provider
    or parse failure, stored with that status, never as a verdict).
    """
    from judge.cases import load_cases
    from judge.providers import ModelParams
    from judge.rubrics import load_rubric
    from judge.runner import Runner, plan
    from judge.store import Store

    if samples < 1:
        raise click.BadParameter("must be at least 1", param_hint="--samples")
    rubric = load_rubric(rubric_ref)
    loaded = load_cases(Path(input_file), limit=limit)
    for error in loaded.errors:
        click.echo(f"invalid record: {error}", err=True)
    if temperature is None:
        temperature = 0.7 if samples > 1 else 0.0
    params = ModelParams(temperature=temperature, max_tokens=max_tokens, api_base=api_base)
    steps = plan(loaded.cases, rubric, list(models), orders=orders,  # type: ignore[arg-type]
                 samples=samples, variants=variants)
    with Store(db) as store:
        if concurrency is None:
            concurrency = 1 if all(is_local(m) for m in models) else 4
        runner = Runner(store, rubric, params, token_budget=token_budget, concurrency=concurrency)
        store.start_batch(runner.batch_id, rubric=rubric.ref, model=",".join(models),
                          input=str(input_file), params=params.cache_params())
        summary = _run_with_progress(runner, steps, quiet=quiet)
        store.finish_batch(runner.batch_id, status="done",
                           counts=dict(summary.statuses) | {"cached": summary.cached})
    for step, failure in summary.errors:
        click.echo(f"not judged: case {step.case.id}: {failure}", err=True)
    if out:
        _write_jsonl(Path(out), [o.judgment for o in summary.outcomes])
    _print_summary(summary, db=db, out=out, n_invalid=len(loaded.errors))
    if loaded.errors:
        sys.exit(EXIT_INVALID_INPUT)
    if summary.failed or summary.errors:
        sys.exit(EXIT_FAILED_JUDGMENTS)


def _run_with_progress(runner: Runner, steps: list[Step], *, quiet: bool) -> RunSummary:
    import asyncio

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from judge.runner import Outcome

    progress = Progress(
        TextColumn("[bold]judging"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=quiet or not sys.stderr.isatty(),
        transient=False,
    )
    task = progress.add_task("judging", total=len(steps), last="")

    # Without a terminal (CI logs, nohup) a live bar draws nothing until the end: print one
    # line per finished judgment instead, so long runs still show progress.
    plain = not quiet and not progress.console.is_terminal
    finished = 0

    def done(outcome: Outcome) -> None:
        nonlocal finished
        finished += 1
        j = outcome.judgment
        label = j.verdict.label if j.verdict else j.status
        tag = "cached" if outcome.cached else f"{j.usage.latency_s:.1f}s"
        last = f"{j.case_id[-40:]}: {label} ({tag})"
        if plain:
            print(f"[{finished}/{len(steps)}] {last}", file=sys.stderr, flush=True)
        else:
            progress.update(task, advance=1, last=last)

    runner.on_done = done
    with progress:
        return asyncio.run(runner.run(steps))


def _write_jsonl(path: Path, judgments: list[Judgment]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for judgment in judgments:
            handle.write(judgment.model_dump_json() + "\n")


def _print_summary(summary: RunSummary, *, db: str, out: str | None, n_invalid: int) -> None:
    from rich.console import Console

    console = Console(stderr=True)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.statuses.items()))
    console.print(
        f"[bold]{len(summary.outcomes)} judgments[/]: {counts or 'none'}; "
        f"{summary.called} called the model, {summary.cached} from the store; "
        f"{summary.prompt_tokens} prompt tokens; {summary.seconds:.1f}s"
    )
    if n_invalid:
        console.print(f"[yellow]{n_invalid} invalid record(s) skipped (see above)[/]")
    where = f"stored in {db}" + (f" and {out}" if out else "")
    console.print(f"{where} (batch {summary.batch_id}); list them with: judge show --db {db}")


@click.command()
@click.option("--db", default="judge.db", show_default=True)
@click.option("--rubric", "rubric_id", help="Only this rubric id.")
@click.option("--model", help="Only this model.")
@click.option("--case", "case_id", help="Only this case id.")
@click.option("--status", type=click.Choice(["ok", "abstain", "parse_error", "infra_error"]))
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table",
              show_default=True)
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
    from judge.store import Store

    if not Path(db).exists():
        raise click.ClickException(f"{db}: no such store (run `judge run ...` first)")
    with Store(db) as store:
        judgments = list(store.judgments(rubric_id=rubric_id, model=model, case_id=case_id,
                                         status=status, limit=limit))
    if fmt == "jsonl":
        for judgment in judgments:
            click.echo(judgment.model_dump_json())
        return
    print_judgments(judgments)


def print_judgments(judgments: list[Judgment]) -> None:
    """A readable table of judgments on stdout."""
    from rich.console import Console
    from rich.table import Table

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
            cited = ",".join(v.cited) + (f" (+{len(v.invalid_citations)} invalid)"
                                         if v.invalid_citations else "")
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
    from judge.rubrics import list_rubrics

    for rubric in list_rubrics():
        click.echo(f"{rubric.ref:32} {rubric.kind:16} {rubric.digest[:19]}  {rubric.spec.title}")
