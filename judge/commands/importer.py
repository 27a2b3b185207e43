"""``judge import``: validate agent traces and convert them to Case JSONL."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO

import click

import judge.connectors
import judge.exchange
import judge.traces
from judge.commands.options import file_option
from judge.commands.platform_errors import platform_errors

#: Exit codes: 0 every record imported; 1 some records were invalid (the others were imported).
EXIT_INVALID_INPUT = 1


@click.command("import")
@click.argument("files", nargs=-1, type=click.Path())
@click.option(
    "--from",
    "source",
    metavar="URL",
    help="Read the traces of a platform instead of files: "
    "phoenix+http://HOST:PORT/projects/NAME, mlflow+http://HOST:PORT/experiments/ID, "
    "langfuse+https://HOST (see --list).",
)
@click.option(
    "--trace-id",
    "trace_ids",
    multiple=True,
    metavar="ID",
    help="With --from: only this trace (repeat for several).",
)
@click.option(
    "--format",
    "fmt",
    metavar="NAME",
    help="Trace format (see --list); detected from the content when omitted.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the cases as JSONL here ('-' for stdout); without it, only validate.",
)
@click.option("--list", "list_formats", is_flag=True, help="List the trace formats and exit.")
@click.option(
    "--notes/--no-notes",
    default=True,
    show_default=True,
    help="Print what was skipped on purpose (unknown event types, ...).",
)
@click.option(
    "--task",
    "task",
    metavar="TEXT",
    help="The prompt the agent was given, for every case whose log does not record "
    "it (claude -p stream-json, codex exec --json).",
)
@file_option(
    "--task-from",
    "task_from",
    metavar="FILE",
    help="Read the prompt from FILE: a text file (its content, for every case), or "
    'a per-session mapping: .json {"<session id>": "<task>"} or a list of '
    '{"session_id", "task"}, .jsonl one such record per line.',
)
def import_cmd(
    files: tuple[str, ...],
    source: str | None,
    trace_ids: tuple[str, ...],
    fmt: str | None,
    out: str | None,
    list_formats: bool,
    notes: bool,
    task: str | None,
    task_from: str | None,
) -> None:
    """Validate agent traces (FILES, or a platform's with --from URL) and convert them to
    Case JSONL.

    A folder stands for the Inspect AI logs in it (recursively), or with --format for the
    files that format recognises.

    Prints the count of cases and errors per file and every error with its line, span id or
    JSON path. Gold labels found in the input (gold files, tau-bench rewards) are written as
    the record's "gold" field.

    Never a silent empty case: a case with no turn (a log cut short) is an error; a case
    without a task is an error and is not written, unless --task or --task-from gives the
    prompt (stream formats do not record it). A session id in a --task-from mapping is
    matched against the case id and the session / thread / trace / conversation id the
    format records. A log that records its own task keeps it.

    With --from, the cases record the platform, the target, the trace id and the root span
    id, so that `judge export --to URL` and `judge gold import --from URL` find their traces.

    Exit code 0: everything imported; 1: some records were invalid or incomplete (all
    complete ones were still imported and written); 2: an unknown project or trace, a bad
    URL, credentials refused; 3: the platform cannot be reached.
    """
    if list_formats:
        _list_formats()
        return
    _check_sources(files, source, trace_ids, fmt)
    tasks = _tasks(task, task_from)
    # With --out -, stdout carries the JSONL, so the report goes to stderr.
    report: IO[str] = sys.stderr if out == "-" else sys.stdout
    found = judge.traces.CaseSet()
    failed = False
    for name in [source] if source is not None else _expand(files, fmt):
        if source is not None:
            with platform_errors():
                result = judge.exchange.import_traces(source, tasks=tasks, trace_ids=trace_ids)
            name = judge.connectors.mask_url(source)
        else:
            result = judge.exchange.import_traces(Path(name), fmt, tasks=tasks)
        added = found.add(result, name)
        for duplicate in added.duplicates:
            click.echo(f"error: {duplicate}", err=True)
        errors = len(result.errors) + len(added.duplicates) + len(result.warnings)
        failed = failed or errors > 0
        turns = sum(len(c.trace) for c in added.read)
        click.echo(f"{name}: {added.added} cases, {turns} turns, {errors} errors", file=report)
        for error in [*result.errors, *result.warnings]:
            click.echo(f"error: {error}", err=True)
        if notes:
            for note in result.notes:
                click.echo(f"note: {note}", file=report)
    if tasks is not None and tasks.unused():
        unused = tasks.unused()
        click.echo(
            f"note: {tasks.origin}: {len(unused)} session id(s) matched no case: "
            f"{', '.join(unused[:5])}",
            file=report,
        )
    if out is not None:
        _write(out, [_dumps(record) for record in found.records()])
    if failed:
        sys.exit(EXIT_INVALID_INPUT)


def _list_formats() -> None:
    for name, description in judge.traces.formats():
        click.echo(f"{name:<12} {description}")
    for name, description in judge.connectors.platforms():
        click.echo(f"{name + '+http(s)://':<12} {description} (--from URL)")


def _check_sources(
    files: tuple[str, ...], source: str | None, trace_ids: tuple[str, ...], fmt: str | None
) -> None:
    """Refuse a command line that names no source, or options that do not fit its source."""
    if source is not None and files:
        raise click.UsageError("give FILES or --from URL, not both")
    if not files and source is None:
        raise click.UsageError("give at least one FILE, or --from URL (or --list)")
    if trace_ids and source is None:
        raise click.UsageError("--trace-id picks traces of --from URL")
    if source is not None and fmt is not None:
        raise click.UsageError("--format is for files: a URL names its platform")
    if fmt is not None:
        judge.traces.get_importer(fmt)  # an unknown name fails before any file is read


def _tasks(task: str | None, task_from: str | None) -> judge.traces.TaskSource | None:
    """The prompt --task or --task-from gives (a bad task file fails before any trace is read)."""
    if task is not None and task_from is not None:
        raise click.UsageError("give --task or --task-from, not both")
    if task is not None:
        return judge.traces.task_text(task)
    return judge.traces.read_tasks(task_from) if task_from is not None else None


def _expand(names: tuple[str, ...], fmt: str | None) -> list[str]:
    """The files to read: each file as given, each folder's logs (a folder with none is an
    error before anything is read)."""
    out: list[str] = []
    for name in names:
        path = Path(name)
        if not path.is_dir():
            out.append(name)
            continue
        found = judge.traces.files_in(path, fmt)
        if not found:
            raise click.UsageError(
                f"{name}: no {fmt or judge.traces.FOLDER_FORMAT} log in this folder"
                + ("" if fmt else " (give --format for another trace format)")
            )
        out.extend(str(p) for p in found)
    return out


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
