"""``judge import``: validate agent traces and convert them to Case JSONL."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO

import click

#: Exit codes: 0 every record imported; 1 some records were invalid (the others were imported).
EXIT_INVALID_INPUT = 1


@click.command("import")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", metavar="NAME",
              help="Trace format (see --list); detected from the content when omitted.")
@click.option("--out", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write the cases as JSONL here ('-' for stdout); without it, only validate.")
@click.option("--list", "list_formats", is_flag=True, help="List the trace formats and exit.")
@click.option("--notes/--no-notes", default=True, show_default=True,
              help="Print what was skipped on purpose (unknown event types, ...).")
def import_cmd(files: tuple[str, ...], fmt: str | None, out: str | None, list_formats: bool,
               notes: bool) -> None:
    """Validate agent traces (FILES) and convert them to Case JSONL.

    Prints the count of cases and errors per file and every error with its line, span id or
    JSON path. Gold labels found in the input (gold files, tau-bench rewards) are written as
    the record's ``gold`` field. Exit code 0: everything imported; 1: some records were
    invalid (all valid ones were still imported and written).
    """
    from judge.traces import formats, get_importer, import_file

    if list_formats:
        for name, description in formats():
            click.echo(f"{name:<12} {description}")
        return
    if not files:
        raise click.UsageError("give at least one FILE (or --list)")
    if fmt is not None:
        get_importer(fmt)  # an unknown name fails before any file is read
    # With --out -, stdout carries the JSONL, so the report goes to stderr.
    report: IO[str] = sys.stderr if out == "-" else sys.stdout
    records: list[str] = []
    seen: dict[str, str] = {}
    failed = False
    for name in files:
        result = import_file(Path(name), fmt)
        duplicates = 0
        for case in result.cases:
            if case.id in seen:
                click.echo(f"error: {name}: case id {case.id!r} already imported from "
                           f"{seen[case.id]}; skipped", err=True)
                duplicates += 1
                continue
            seen[case.id] = name
            record = case.model_dump(mode="json")
            if case.id in result.gold:
                record["gold"] = result.gold[case.id]
            records.append(_dumps(record))
        errors = len(result.errors) + duplicates
        failed = failed or errors > 0
        turns = sum(len(c.trace) for c in result.cases)
        click.echo(f"{name}: {len(result.cases) - duplicates} cases, {turns} turns, "
                   f"{errors} errors", file=report)
        for error in result.errors:
            click.echo(f"error: {error}", err=True)
        if notes:
            for note in result.notes:
                click.echo(f"note: {note}", file=report)
    if out is not None:
        _write(out, records)
    if failed:
        sys.exit(EXIT_INVALID_INPUT)


def _dumps(record: dict[str, object]) -> str:
    """One JSONL line, readable UTF-8 when it can be: JSON input may hold lone surrogates
    (``"\\ud800"``), which UTF-8 cannot encode, so such a record is written ASCII-escaped."""
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record)
    return line


def _write(out: str, records: list[str]) -> None:
    """Write the JSONL records to ``out`` ('-' is stdout)."""
    if out == "-":
        _emit(sys.stdout, records)
        return
    with Path(out).open("w", encoding="utf-8") as handle:
        _emit(handle, records)


def _emit(handle: IO[str], records: list[str]) -> None:
    for record in records:
        handle.write(record + "\n")
