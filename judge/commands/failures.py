"""``judge failures``: failed runs grouped into named, checkable failure clusters."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

import judge
import judge.failures
import judge.providers
from judge.commands.failures_dossier import audit, dossier
from judge.commands.judging_options import some_judging_options
from judge.commands.options import db_option
from judge.commands.stores import require_store
from judge.defaults import DEFAULT_MODEL

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
    exposure and failure rate. With no subcommand: judge failures cluster."""


failures.add_command(dossier)
failures.add_command(audit)


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
@click.option(
    "--name",
    "name_them",
    is_flag=True,
    help="Ask the judge (--model) to name every unnamed cluster: a definition stating a "
    "checkable mechanism, exclusions and the member runs it cites; names without one are "
    "refused and the cluster stays unnamed.",
)
@click.option(
    "--model",
    default=DEFAULT_MODEL,
    show_default=True,
    help="litellm model id of the naming judge (blind to the system under test).",
)
@some_judging_options("max_tokens", "api_base")
def cluster(
    files: tuple[str, ...],
    db: str,
    fmt: str,
    group_by: str,
    threshold: float,
    seed: int,
    summary: str,
    dry_run: bool,
    name_them: bool,
    model: str,
    options: judge.JudgeOptions,
) -> None:
    """Cluster the failed runs of the store (each with its first-bad-decision report), or of
    recorded RUNS (Who&When folders, AgentRx tau-bench files: people's critical steps).

    Parse and infrastructure errors and runs without a report are excluded first, never
    counted as agent failures. Runs a kept cluster lists stay in it; new runs join the named
    cluster whose condition they meet; the rest are clustered into new candidates, kept in the
    store for naming (--name), merging, splitting and renaming.
    """
    grouping = judge.failures.ClusterOptions(
        group_by=tuple(f.strip() for f in group_by.split(",") if f.strip()),
        threshold=threshold,
        seed=seed,
    )
    if not files:
        require_store(db, "run `judge run ...` first")
    if name_them:
        judge.providers.check_models([model], api_base=options.api_base)
    with judge.open_store(db) as store:
        report = judge.failures.cluster_failures(
            store,
            files,
            summary=summary,
            options=grouping,
            namer=judge.failures.model_namer(model, options.params()) if name_them else None,
            save=not dry_run,
        )
    if fmt == "jsonl":
        click.echo(judge.failures.ranked_jsonl(report), nl=False)
    else:
        _table(report)


@failures.command("merge")
@click.argument("cluster_ids", nargs=-1, required=True, metavar="CLUSTER CLUSTER...")
@db_option()
@click.option("--into", help="The merged cluster's id (default: the first CLUSTER).")
def merge(cluster_ids: tuple[str, ...], db: str, into: str | None) -> None:
    """Merge kept clusters into one: their members together, the condition they share; the
    others are retired (kept, with the lineage)."""
    require_store(db, "run `judge run ...` first")
    with judge.open_store(db) as store:
        merged = judge.failures.merge_clusters(store, cluster_ids, into=into)
    click.echo(f"{merged.cluster_id}: {len(merged.members)} runs; {merged.lineage[-1]}")


@failures.command("split")
@click.argument("cluster_id")
@click.argument("files", nargs=-1, metavar="[RUNS...]", type=click.Path(exists=True))
@db_option()
@click.option(
    "--where",
    "where",
    required=True,
    metavar="FEATURE=VALUE",
    help="The members whose run has this feature value move to a new cluster.",
)
@click.option("--id", "new_id", help="The new cluster's id (default: CLUSTER-VALUE).")
def split(cluster_id: str, files: tuple[str, ...], db: str, where: str, new_id: str | None) -> None:
    """Split a kept cluster by a feature value of its runs (read from the store, or from the
    recorded RUNS it was made from)."""
    feature, sep, value = where.partition("=")
    if not sep or not feature.strip():
        raise click.BadParameter("give FEATURE=VALUE, e.g. tool=deploy", param_hint="--where")
    require_store(db, "run `judge run ...` first")
    with judge.open_store(db) as store:
        records = judge.failures.failure_records(store, files)
        kept, moved = judge.failures.split_cluster(
            store, cluster_id, records, feature.strip(), value.strip(), new_id=new_id
        )
    click.echo(
        f"{kept.cluster_id}: {len(kept.members)} runs; {moved.cluster_id}: "
        f"{len(moved.members)} runs ({moved.lineage[-1]})"
    )


@failures.command("rename")
@click.argument("cluster_id")
@db_option()
@click.option("--id", "new_id", help="A new id.")
@click.option("--definition", help="A person's definition (marks the cluster named).")
@click.option("--exclusion", "exclusions", multiple=True, help="An exclusion; repeat for more.")
def rename(
    cluster_id: str,
    db: str,
    new_id: str | None,
    definition: str | None,
    exclusions: tuple[str, ...],
) -> None:
    """Give a kept cluster a new id, a definition or exclusions."""
    require_store(db, "run `judge run ...` first")
    with judge.open_store(db) as store:
        renamed = judge.failures.rename_cluster(
            store,
            cluster_id,
            new_id=new_id,
            definition=definition,
            exclusions=list(exclusions) if exclusions else None,
        )
    click.echo(f"{renamed.cluster_id}: {renamed.lineage[-1]}")


def _unnamed(report: judge.failures.FailureReport, cluster_id: str) -> str:
    refused = next((c.rejected for c in report.clusters if c.cluster_id == cluster_id), None)
    return f"(unnamed; name refused: {refused})" if refused else "(unnamed)"


def _table(report: judge.failures.FailureReport) -> None:
    table = Table(title="failure clusters")
    for column in ("cluster", "definition", "failures", "exposed", "rate [95% CI]", "terms"):
        table.add_column(column)
    for line in report.cluster_lines():
        low, high = line["rate_ci"]
        table.add_row(
            line["cluster_id"],
            line["definition"] or _unnamed(report, line["cluster_id"]),
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
