"""``judge failures dossier`` and ``judge failures audit``: one cluster's dossier and priority,
and the review of successes for silent wrong ones.

Both read the runs (one ``RunRecord`` JSON a line, every run of the run sets, failed or not)
and the named clusters (YAML or JSONL of ``Cluster``) that ``judge failures`` works with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

import judge
import judge.failures
import judge.store
from judge.commands.options import db_option
from judge.commands.stores import require_store
from judge.errors import InputError

FORMATS = ("yaml", "json")


def _sources(command: Any) -> Any:
    """Where the runs and clusters come from: the store (``--db``, as ``judge failures``), the
    recorded RUNS files, or ``--records``/``--clusters`` files."""
    for option in reversed(
        [
            click.argument("files", nargs=-1, metavar="[RUNS...]", type=click.Path(exists=True)),
            db_option(),
            click.option(
                "--records",
                "records_file",
                type=click.Path(exists=True, dir_okay=False),
                help="The runs as failure records (JSONL, failed or not) instead of the store's "
                "or RUNS'.",
            ),
            click.option(
                "--clusters",
                "clusters_file",
                type=click.Path(exists=True, dir_okay=False),
                help="The clusters (YAML list or JSONL) instead of the store's.",
            ),
        ]
    ):
        command = option(command)
    return command


def _output(command: Any) -> Any:
    """``--format`` (YAML or JSON) and ``--out`` (a file instead of stdout)."""
    command = click.option(
        "--out", type=click.Path(dir_okay=False), help="Write it to this file, not stdout."
    )(command)
    return click.option(
        "--format", "fmt", type=click.Choice(FORMATS), default="yaml", show_default=True
    )(command)


def _load(
    db: str, files: tuple[str, ...], records_file: str | None, clusters_file: str | None
) -> tuple[list[judge.failures.RunRecord], list[judge.failures.Cluster], str]:
    """The runs, the clusters, and where the runs came from (the store is opened only when
    one of them comes from it)."""
    if records_file and clusters_file:
        return (
            judge.failures.read_records(records_file),
            judge.failures.read_clusters(clusters_file),
            records_file,
        )
    if not records_file and not files:
        # The runs are the store's: an empty new one would hold none.
        require_store(db, "run `judge run ...` first")
    with judge.open_store(db) as store:
        runs = (
            judge.failures.read_records(records_file)
            if records_file
            else judge.failures.failure_records(store, files)
        )
        clusters = (
            judge.failures.read_clusters(clusters_file)
            if clusters_file
            else judge.failures.load_clusters(store)
        )
        return runs, clusters, records_file or ",".join(files) or store.location


def _emit(data: dict[str, Any], fmt: str, out: str | None) -> None:
    text = (
        yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        if fmt == "yaml"
        else json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    )
    if out:
        Path(out).write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(text, nl=False)


def _check_failures(runs: list[judge.failures.RunRecord], where: str) -> None:
    if not judge.failures.valid_failures(runs):
        raise InputError(
            "no failed run (after the validity filter): there is no failure to explain",
            file=where,
            hint="give every run of the run sets, failed or not, with their diagnoses",
        )


@click.command("dossier")
@click.argument("cluster_id")
@_sources
@click.option(
    "--harm",
    type=click.Path(exists=True, dir_okay=False),
    help="A harm table (YAML) instead of the shipped judge/failures/harm.yaml.",
)
@_output
@click.option(
    "--family-out",
    type=click.Path(dir_okay=False),
    help="Write the eval family (its tasks' lines of the --runset files) as a run-set file.",
)
@click.option(
    "--runset",
    "runsets",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A run-set file the runs came from (repeatable): the source of --family-out.",
)
def dossier(
    cluster_id: str,
    files: tuple[str, ...],
    db: str,
    records_file: str | None,
    clusters_file: str | None,
    harm: str | None,
    fmt: str,
    out: str | None,
    family_out: str | None,
    runsets: tuple[str, ...],
) -> None:
    """The dossier of CLUSTER_ID: definition, exposure and failure rate with its interval, the
    trend across run sets (exposure-normalised), impact, evidence, owners, hypothesis, the eval
    family to re-run and its ship gate, counterexamples, and its priority with every factor's
    source. The runs and clusters are the store's (as judge failures keeps them), or RUNS'."""
    if family_out and not runsets:
        raise click.UsageError("--family-out needs the run-set files: --runset FILE")
    table = judge.failures.load_harm(harm)
    runs, clusters, where = _load(db, files, records_file, clusters_file)
    _check_failures(runs, where)
    by_id = {c.cluster_id: c for c in clusters}
    cluster = judge.failures.require(by_id, cluster_id, clusters_file or where)
    found = judge.failures.ranked_dossier(cluster, runs, table)
    if found.population.failures == 0:
        click.echo(f"note: no failed run is in cluster {cluster_id!r}", err=True)
    if family_out:
        lines = judge.failures.family_runset(found.eval_family, runsets)
        Path(family_out).write_text(
            "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8"
        )
        click.echo(f"wrote {family_out} ({len(lines)} runs)", err=True)
    _emit(found.model_dump(mode="json"), fmt, out)


@click.command("audit")
@_sources
@click.option(
    "--feature",
    "features",
    multiple=True,
    help="A feature to stratify by (repeatable); default: the clusters' condition features.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--labels",
    "labels_file",
    type=click.Path(exists=True, dir_okay=False),
    help='People\'s labels of the drawn runs: JSONL {"case_id", "label": "pass"|"fail"}.',
)
@click.option("--queue", "to_queue", is_flag=True, help="Queue the drawn runs for blind review.")
@click.option("--plan-id", help="Read the labels people gave the queued audit with this plan id.")
@click.option(
    "--clusters-out",
    type=click.Path(dir_okay=False),
    help="Write the clusters with the confirmed wrong successes added as members (YAML).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Do not keep the store's clusters with the confirmed wrong successes added.",
)
@_output
def audit(
    files: tuple[str, ...],
    db: str,
    records_file: str | None,
    clusters_file: str | None,
    features: tuple[str, ...],
    seed: int,
    labels_file: str | None,
    to_queue: bool,
    plan_id: str | None,
    clusters_out: str | None,
    dry_run: bool,
    fmt: str,
    out: str | None,
) -> None:
    """Draw successes for human review, stratified by cluster features and judge confidence
    (59 per stratum: enough to see a 5% wrong-success rate with 95% probability), and, with
    people's labels (--labels, or --plan-id of a queued audit), estimate the silent
    wrong-success rate with its interval; confirmed ones join their clusters (kept in the
    store when the clusters are the store's, unless --dry-run; --clusters-out writes them)."""
    if labels_file and plan_id:
        raise click.UsageError("give the labels as --labels FILE or --plan-id ID, not both")
    labels = judge.failures.read_labels(labels_file) if labels_file else None
    runs, clusters, where = _load(db, files, records_file, clusters_file)
    plan = judge.failures.plan_audit(runs, clusters, features=features or None, seed=seed)
    report: dict[str, Any] = {"plan": plan.model_dump(mode="json", exclude={"stratum_of"})}
    if to_queue or plan_id:
        with judge.open_store(db) as store:
            if to_queue:
                plan_id, new, missing = judge.failures.queue_audit(store, plan, source=where)
                report["queued"] = {"plan_id": plan_id, "new_items": new, "not_stored": missing}
            elif plan_id:
                labels = judge.failures.queue_labels(store, plan_id, plan)
    if labels is not None:
        report["estimate"] = judge.failures.estimate(plan, runs, labels).model_dump(mode="json")
        wrong = judge.failures.confirmed_wrong(runs, labels)
        joined, unassigned = judge.failures.join_clusters(clusters, wrong)
        report["confirmed"] = {
            "wrong_successes": [r.case_id for r in wrong],
            "unassigned": unassigned,
        }
        if not clusters_file and not dry_run and joined != clusters:
            with judge.open_store(db) as store:
                judge.failures.save_clusters(store, joined)
            click.echo(f"kept the clusters with {len(wrong)} confirmed run(s) in {db}", err=True)
        if clusters_out:
            Path(clusters_out).write_text(
                yaml.safe_dump([c.model_dump(mode="json") for c in joined], sort_keys=False),
                encoding="utf-8",
            )
            click.echo(f"wrote {clusters_out}", err=True)
    _emit(report, fmt, out)
