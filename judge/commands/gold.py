"""``judge gold``: validate gold sets, export reviewed labels as one (``gold export``, the
review queue's export under the name people look for), and import the labels people gave on a
platform (``gold import --from URL``)."""

from __future__ import annotations

import sys

import click

import judge.checks
import judge.exchange
import judge.store
from calibration.gold import case_schema_text, check_file, schema_text
from judge.commands.options import db_option, file_option
from judge.commands.platform_errors import platform_errors
from judge.commands.review import export_gold_cmd
from judge.commands.stores import require_store


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def gold() -> None:
    """Validate and import gold sets."""


@gold.command("validate")
@click.argument(
    "paths", metavar="FILE...", nargs=-1, required=True, type=click.Path(dir_okay=False)
)
@click.option(
    "--labelled", is_flag=True, help="Require a gold label on every record (as calibration does)."
)
def validate(paths: tuple[str, ...], labelled: bool) -> None:
    """Check case or gold JSONL files record by record; print size, labels and digest.

    A record with a `gold` field is checked as a gold record (gold/schema.json), one without
    as a case awaiting its label (gold/case.schema.json: what `judge import` writes). Every bad
    record is listed by line and field; a diff that does not parse is a warning (the diff
    checks answer unknown on it). Exit code 0: all valid; 1: some records are invalid.
    """
    failed = False
    for path in paths:
        found = check_file(path, require_labels=labelled)
        for error in found.errors:
            click.echo(f"invalid record: {error}", err=True)
        if found.digest:
            for warning in judge.checks.unreadable_diffs(path):
                click.echo(f"warning: {warning}", err=True)
        if found.errors:
            failed = True
            click.echo(f"{path}: {len(found.errors)} invalid, {found.n} valid", err=True)
        else:
            click.echo(f"ok: {path}: {found.summary()}")
    if failed:
        sys.exit(1)


@gold.command("schema")
@click.argument("which", type=click.Choice(["gold", "case"]), default="gold")
def schema(which: str) -> None:
    """Print the JSON schema of a gold record (gold/schema.json) or of a case
    (gold/case.schema.json)."""
    click.echo(schema_text() if which == "gold" else case_schema_text(), nl=False)


gold.add_command(export_gold_cmd, "export")


@gold.command("import")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="URL",
    help="The platform the traces came from: phoenix+http://HOST:PORT/projects/NAME, "
    "mlflow+http://HOST:PORT/experiments/ID.",
)
@click.option(
    "--annotation",
    required=True,
    metavar="NAME",
    help="The name of the annotation people gave (in Phoenix: the annotation config's name; "
    "in Langfuse: the score's name; in MLflow: the feedback's name).",
)
@file_option("--out", required=True, help="Gold JSONL to write.")
@click.option(
    "--label-map",
    "label_map",
    multiple=True,
    metavar="RAW=pass|fail,...",
    help="Map the annotation's labels to pass/fail, e.g. correct=pass,incorrect=fail "
    "(labels pass and fail need none; a score-only annotation's label is its score: 1=pass).",
)
@click.option("--license", "license_", default="unspecified", show_default=True)
@db_option(help="The store holding the cases imported from URL (and judged).")
def import_gold(
    source: str,
    annotation: str,
    out: str,
    label_map: tuple[str, ...],
    license_: str,
    db: str,
) -> None:
    """Turn the labels people gave on a platform into gold records for the stored cases.

    Reads every person's annotation named NAME (in Phoenix: HUMAN span and trace annotations;
    notes and judge's own annotations are not labels; in Langfuse: scores of source
    ANNOTATION, from the UI or an annotation queue; in MLflow: HUMAN feedback assessments
    not overridden since, a boolean read as true / false), matches it to the cases imported from
    URL by trace id, and writes one gold record per case with lineage (platform, annotation
    ids, annotators, time). People who disagree on a case leave it out; labels on traces judge
    never imported are counted.

    Exit code 0: written; 1: no label matched a stored case; 2: a bad URL, an unknown project,
    no annotation NAME, a label neither pass nor fail without --label-map; 3: the platform
    cannot be reached.
    """
    require_store(db, "import the traces and `judge run` them first")
    with platform_errors(), judge.store.open_store(db) as store:
        done = judge.exchange.import_labels(
            store,
            source,
            annotation=annotation,
            label_map=label_map or None,
            out=out,
            license=license_,
        )
    counts: dict[str, int] = {}
    for record in done.records:
        counts[record.gold] = counts.get(record.gold, 0) + 1
    shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
    click.echo(
        f"{len(done.records)} gold records ({shown}) from {done.labels} labels "
        f"{annotation!r} written to {out} ({done.digest})"
    )
    if done.unmatched:
        traces = sorted({x.trace_id for x in done.unmatched})
        click.echo(
            f"note: {len(done.unmatched)} labels are on {len(traces)} trace(s) not imported "
            f"from {done.source} into {judge.store.mask_url(db)}: {', '.join(traces[:5])}"
            + (", ..." if len(traces) > 5 else ""),
            err=True,
        )
    for case_id, given in sorted(done.conflicts.items()):
        click.echo(f"note: people disagree on {case_id} ({', '.join(given)}); left out", err=True)
    if not done.records:
        sys.exit(1)
