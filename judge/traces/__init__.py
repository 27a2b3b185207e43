"""Trace importers: turn agent traces of many formats into :class:`~judge.types.Case` records.

One module per format, each registered by name as an entry point of the group
``judge.importers`` (the built-in ones in judge's pyproject.toml, a plugin's in its own)::

    class CodexImporter(BaseImporter):
        description = "OpenAI Codex CLI `codex exec --json` JSONL events"
        def load(self, path: Path) -> ImportResult: ...
        def sniff(self, path: Path) -> bool: ...   # optional: format detection

    [project.entry-points."judge.importers"]
    codex = "judge.traces.codex:CodexImporter"

:func:`import_traces` reads a file with a named importer, or detects the format when none is
given. A bad record never stops the others: it becomes an :class:`~judge.errors.InputError` in
:attr:`ImportResult.errors` naming the file and the line, span id or JSON path; records skipped
on purpose (event types that carry nothing to judge) are listed in :attr:`ImportResult.notes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from judge import plugins
from judge.errors import InputError
from judge.traces.case_set import Added, CaseSet
from judge.traces.inspect_cases import inspect_case as inspect_case
from judge.traces.otlp import otlp_value as otlp_value
from judge.traces.tasks import TaskSource, settle
from judge.traces.tasks import read_tasks as read_tasks
from judge.traces.tasks import task_text as task_text
from judge.types import Case

__all__ = [
    "Added",
    "BaseImporter",
    "CaseSet",
    "CriticalStep",
    "ImportResult",
    "Importer",
    "TaskSource",
    "detect_format",
    "formats",
    "get_importer",
    "import_traces",
    "importers",
    "otlp_value",
    "read_tasks",
    "settle",
    "task_text",
]


@dataclass(frozen=True)
class CriticalStep:
    """People's label of a failed run's critical step: the 0-based ``step`` of its trace turns
    (``TraceTurn.step``) and, when known, the agent that took it."""

    step: int
    agent: str | None = None


@dataclass
class ImportResult:
    """The cases read from one file, an error for each bad record, and notes on what was
    skipped on purpose. ``gold`` holds labels found in the file (case id -> label).
    ``warnings`` name the kept cases that lack something (a task; see
    :mod:`judge.traces.tasks`)."""

    cases: list[Case] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gold: dict[str, str] = field(default_factory=dict)
    warnings: list[InputError] = field(default_factory=list)
    #: People's critical step of a failed run (case id -> step), where the file labels one.
    critical: dict[str, CriticalStep] = field(default_factory=dict)


@runtime_checkable
class Importer(Protocol):
    """What every registered importer provides."""

    name: str
    description: str

    def load(self, path: Path) -> ImportResult:
        """Read ``path`` into cases; never raise for bad records, collect them as errors."""
        ...

    def sniff(self, path: Path) -> bool:
        """True when ``path`` looks like this format (for auto-detection)."""
        ...


class BaseImporter:
    """Convenience base: the registered name, a description, and 'cannot detect' by default."""

    name: str = ""
    description: str = ""

    def load(self, path: Path) -> ImportResult:
        """Read ``path`` into cases."""
        raise NotImplementedError

    def sniff(self, path: Path) -> bool:
        """Formats without a reliable signature are never auto-detected."""
        return False


@cache
def importers() -> Mapping[str, Importer]:
    """name -> importer: every entry point of the group ``judge.importers`` (a class is
    instantiated; its name is the entry point's)."""
    found: dict[str, Importer] = plugins.load_named(
        plugins.IMPORTERS,
        Importer,
        "an importer (it needs a name, a description, load(path) and sniff(path))",
    )
    if not found:
        raise plugins.PluginError(
            "no trace importer is installed (the group judge.importers is empty): reinstall "
            "judge (`pip install -e .`) so that its entry points are registered"
        )
    return MappingProxyType(found)


def get_importer(name: str) -> Importer:
    """The importer registered as ``name``; an InputError listing the known ones otherwise."""
    found = importers().get(name)
    if found is None:
        raise InputError(
            f"unknown trace format {name!r}",
            hint=f"known formats: {', '.join(sorted(importers()))}",
        )
    return found


def detect_format(path: str | Path) -> str:
    """The name of the one importer whose ``sniff`` accepts ``path``; InputError otherwise."""
    path = Path(path)
    matches = [name for name, imp in importers().items() if imp.sniff(path)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted(importers()))
    if not matches:
        raise InputError(
            "cannot tell the trace format", file=str(path), hint=f"pass --format, one of: {known}"
        )
    raise InputError(
        f"the trace format is ambiguous ({', '.join(matches)})",
        file=str(path),
        hint="pass --format",
    )


#: The format a folder is searched for when no format (or one that cannot detect) is given.
FOLDER_FORMAT = "inspect"


def files_in(folder: str | Path, fmt: str | None = None) -> list[Path]:
    """The files under ``folder`` (recursively, sorted) that importer ``fmt`` recognises; with
    no ``fmt``, or one that cannot detect its files (``inspect-ai``), the Inspect logs in it
    (an Inspect log folder is the usual folder of traces)."""
    chosen = get_importer(fmt) if fmt is not None else None
    if chosen is None or type(chosen).sniff is BaseImporter.sniff:
        chosen = get_importer(FOLDER_FORMAT)
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and chosen.sniff(p))


def import_traces(
    path: str | Path, fmt: str | None = None, *, tasks: TaskSource | None = None
) -> ImportResult:
    """Read ``path`` with the importer ``fmt``, or with the detected one when ``fmt`` is None.

    Every result goes through :func:`judge.traces.tasks.settle`: ``tasks`` fill the cases
    whose log has no task, a case with nothing to judge becomes an error, a case still
    without a task a warning.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", file=str(path))
    found = get_importer(fmt) if fmt is not None else get_importer(detect_format(path))
    return settle(found.load(path), str(path), tasks)


def formats() -> list[tuple[str, str]]:
    """(name, description) of every registered importer, by name."""
    return [(name, imp.description) for name, imp in sorted(importers().items())]
