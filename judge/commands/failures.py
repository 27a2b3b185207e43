"""``judge failures``: failed runs grouped into named, checkable failure clusters."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

import judge
import judge.failures
from judge.commands.options import db_option

FORMATS = ("table", "jsonl")


class _DefaultGroup(click.Group):
    """``judge failures [FILE...] [options]`` runs ``cluster``; ``judge failures merge ...``
    runs the subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["cluster", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultGroup)
def failures() -> None:
    """Failed runs grouped into failure clusters: a definition a rule can check, its members,
    exposure and failure rate. With no subcommand: ``judge failures cluster``."""


@failures.command("cluster")
@click.argument("files", nargs=-1, metavar="[RUNS...]", type=click.Path(exists=True))
@db_option()
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "--group-by",
    default=",".join(judge.failures.ClusterOptions().group_by),
    show_default=True,
    help="Structured fields (comma-separated) runs are grouped by before their summaries are "
    "clustered; empty: one group.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 2.0),
    default=judge.failures.ClusterOptions().threshold,
    show_default=True,
    help="Cosine distance at which text clusters stop merging (higher: fewer, larger).",
)
@click.option("--seed", type=int, default=judge.failures.ClusterOptions().seed, show_default=True)
@click.option(
    "--summary",
    type=click.Choice(["report", "window"]),
    default="report",
    show_default=True,
    help="Recorded RUNS: cluster the recorded reason with the critical-step window, or the "
    "window only.",
)
@click.option("--dry-run", is_flag=True, help="Do not keep the new clusters in the store.")
def cluster(
    files: tuple[str, ...],
    db: str,
    fmt: str,
    group_by: str,
    threshold: float,
    seed: int,
    summary: str,
    dry_run: bool,
) -> None:
    """Cluster the failed runs of the store (each with its first-bad-decision report), or of
    recorded RUNS (Who&When folders, AgentRx tau-bench files: people's critical steps).

    Parse and infrastructure errors and runs without a report are excluded first, never
    counted as agent failures. Runs a kept cluster lists stay in it; new runs join the named
    cluster whose condition they meet; the rest are clustered into new candidates, kept in the
    store for naming (--name), merging, splitting and renaming.
    """
    options = judge.failures.ClusterOptions(
        group_by=tuple(f.strip() for f in group_by.split(",") if f.strip()),
        threshold=threshold,
        seed=seed,
    )
    with judge.open_store(db) as store:
        report = judge.failures.cluster_failures(
            store, files, summary=summary, options=options, save=not dry_run
        )
    if fmt == "jsonl":
        click.echo(report.jsonl(), nl=False)
    else:
        _table(report)


def _table(report: judge.failures.FailureReport) -> None:
    table = Table(title="failure clusters")
    for column in ("cluster", "definition", "failures", "exposed", "rate [95% CI]", "terms"):
        table.add_column(column)
    for line in report.cluster_lines():
        low, high = line["rate_ci"]
        table.add_row(
            line["cluster_id"],
            line["definition"] or "(unnamed)",
            str(line["failures"]),
            str(line["exposed"]),
            f"{line['rate']:.2f} [{low:.2f}, {high:.2f}]",
            ", ".join(report.terms.get(line["cluster_id"], [])[:5]),
        )
    console = Console()
    console.print(table)
    runs = report.run_lines()
    excluded = sum(1 for r in runs if r["excluded"])
    unclustered = sum(1 for r in runs if not r["excluded"] and r["cluster_id"] is None)
    console.print(
        f"{len(runs)} failed run(s): {len(runs) - excluded - unclustered} clustered, "
        f"{excluded} excluded (parse/infra errors, no report), {unclustered} unclustered"
    )
