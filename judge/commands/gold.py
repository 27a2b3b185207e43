"""``judge gold``: validate gold sets, and export reviewed labels as one (``gold export``, the
review queue's export under the name people look for)."""

from __future__ import annotations

import sys

import click

from calibration.gold import case_schema_text, check_file, schema_text
from judge.commands.review import export_gold_cmd


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
    record is listed by line and field. Exit code 0: all valid; 1: some records are invalid.
    """
    failed = False
    for path in paths:
        found = check_file(path, require_labels=labelled)
        for error in found.errors:
            click.echo(f"invalid record: {error}", err=True)
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
