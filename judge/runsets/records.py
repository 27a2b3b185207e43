"""Run sets: the runs of agents (several treatments, several repetitions per task) to be scored.

One JSON object per line (:class:`RunRecord`, ``extra="forbid"``)::

    {"run_id": "r-17", "task_id": "django-1234", "treatment": "gpt-4o+tools", "repetition": 2,
     "benchmark": "swe-bench-verified", "agent_model": "gpt-4o",
     "case": {...Case fields, or a gold-format record...},        # the run inline, or
     "trace": "traces/r-17.jsonl", "format": "claude-code",       # a trace file + importer
     "tokens": 48211, "cost_usd": 0.41, "duration_s": 312.5,
     "status": "completed", "official": "pass"}

- ``case`` or ``trace`` (+ ``format``, an importer name from :mod:`judge.traces`; detected when
  omitted) gives what is judged. A trace path is relative to the run-set file. When the file
  holds several cases, ``trace_case`` names the one to use.
- ``status``: ``completed`` (default), ``timeout`` (the agent ran out of budget: counts as a
  failure, not judged) or ``infra_error`` (the harness failed: excluded from the analysis set,
  its cost still counted). A run that is not completed may come without a case.
- ``official``: the result of an official grader (or a person), if any: the gold label used by
  ``judge score --gold-labels``. A gold-format ``case`` carries its label in ``gold``; that
  label is used when ``official`` is absent.
- The run id becomes the case id in the store, so judgments and exports name the run.

Errors name the file, the line and the field (``case.task``, ``trace``, ...) and say what to do.
The format is documented for users in gold/README.md (section "Run sets"), beside the case and
gold formats; tests/judge/test_formats.py keeps that table's fields equal to :class:`RunRecord`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from judge.cases import (
    GOLD_ONLY_FIELDS,
    iter_jsonl,
    record_to_case,
    repeated,
    validation_error,
)
from judge.digests import sha256_hex
from judge.errors import InputError
from judge.traces import import_traces
from judge.types import Case, Strict

RunStatus = Literal["completed", "infra_error", "timeout"]
DEFAULT_BENCHMARK = "default"
FORMAT_HINT = "see gold/README.md, section Run sets, for the run-set format"


def id_as_text(value: Any) -> Any:
    """A run or task id read as text when a file numbers it (``7`` -> ``"7"``; not a bool):
    ids are compared as text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


class RunRecord(Strict):
    """One line of a run-set file."""

    run_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    treatment: str = Field(min_length=1)
    repetition: int = Field(ge=0)
    benchmark: str = Field(default=DEFAULT_BENCHMARK, min_length=1)
    agent_model: str | None = None
    #: The run inline: Case fields, or a gold-format record (its ``gold`` becomes ``official``).
    case: dict[str, Any] | None = None
    trace: str | None = Field(default=None, min_length=1)
    format: str | None = Field(default=None, min_length=1)
    trace_case: str | None = Field(default=None, min_length=1)
    tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    duration_s: float | None = Field(default=None, ge=0)
    status: RunStatus = "completed"
    official: Literal["pass", "fail"] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("task_id", "run_id", mode="before")
    @classmethod
    def _ids_as_text(cls, value: Any) -> Any:
        # Benchmarks number their tasks (tau-bench task 0..49); ids are compared as text.
        return id_as_text(value)

    @model_validator(mode="after")
    def _one_source(self) -> RunRecord:
        if self.case is not None and self.trace is not None:
            raise ValueError("give either 'case' (inline) or 'trace' (a file), not both")
        if self.status == "completed" and self.case is None and self.trace is None:
            raise ValueError("a completed run needs 'case' (inline) or 'trace' (a file path)")
        if self.trace is None and (self.format is not None or self.trace_case is not None):
            raise ValueError("'format' and 'trace_case' apply only with 'trace'")
        return self


@dataclass(frozen=True)
class Run:
    """A validated run: its record, the case to judge (None for runs without one), where it was
    read, and its official label (from ``official`` or the case's gold)."""

    record: RunRecord
    case: Case | None
    line: int
    official: str | None = None

    @property
    def run_id(self) -> str:
        """The run id (also the case id)."""
        return self.record.run_id

    @property
    def agent_model(self) -> str | None:
        """The agent's model: the record's, else the case's."""
        if self.record.agent_model:
            return self.record.agent_model
        return self.case.agent_model if self.case is not None else None


@dataclass
class LoadedRuns:
    """The valid runs of a file and an error for each invalid record."""

    path: Path
    runs: list[Run] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)


def load_runs(path: str | Path) -> LoadedRuns:
    """Read a run-set file. Invalid records become errors naming line and field; valid runs
    are all returned (the caller decides whether to go on)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", file=str(path), hint=FORMAT_HINT)
    out = LoadedRuns(path=path)
    seen_ids: dict[str, int] = {}
    seen_slots: dict[tuple[str, str, str, int], int] = {}
    imports: dict[tuple[Path, str | None], Any] = {}
    for number, obj in iter_jsonl(path):
        if isinstance(obj, InputError):
            out.errors.append(obj)
            continue
        try:
            run = _run_from(obj, path, number, imports)
        except InputError as exc:
            out.errors.append(exc)
            continue
        rec = run.record
        again = repeated(
            seen_ids, rec.run_id, "run id", file=str(path), line=number, field="run_id"
        )
        if again is not None:
            out.errors.append(again)
            continue
        slot = (rec.benchmark, rec.treatment, rec.task_id, rec.repetition)
        if slot in seen_slots:
            out.errors.append(
                InputError(
                    f"benchmark {rec.benchmark!r}, treatment {rec.treatment!r}, task "
                    f"{rec.task_id!r} already has repetition {rec.repetition} "
                    f"(line {seen_slots[slot]})",
                    file=str(path),
                    line=number,
                    field="repetition",
                    hint="number the repetitions of a task 0, 1, 2, ...",
                )
            )
            continue
        seen_ids[rec.run_id] = number
        seen_slots[slot] = number
        out.runs.append(run)
    if not out.runs and not out.errors:
        out.errors.append(InputError("the run set is empty", file=str(path), hint=FORMAT_HINT))
    return out


def _run_from(
    obj: dict[str, Any], path: Path, number: int, imports: dict[tuple[Path, str | None], Any]
) -> Run:
    name = str(path)
    try:
        record = RunRecord.model_validate(obj)
    except ValidationError as exc:
        error = validation_error(exc, name, number)
        if error.reason.startswith("unknown field"):
            error = InputError(
                "unknown field (check the spelling)",
                file=name,
                line=number,
                field=error.field,
                hint=FORMAT_HINT,
            )
        raise error from exc
    case: Case | None = None
    gold: str | None = None
    if record.case is not None:
        case, gold = _inline_case(record.case, name, number)
    elif record.trace is not None:
        case, gold = _traced_case(record, path, number, imports)
    if case is not None:
        update: dict[str, Any] = {"id": record.run_id}
        if record.agent_model:
            update["agent_model"] = record.agent_model
        case = case.model_copy(update=update)
    official = record.official or (gold if gold in ("pass", "fail") else None)
    return Run(record=record, case=case, line=number, official=official)


def _inline_case(data: dict[str, Any], file: str, line: int) -> tuple[Case, str | None]:
    """A Case (or gold-format record) given inline; errors name ``case.<field>``."""
    if "id" not in data:
        data = {"id": "inline", **data}  # the run id replaces it anyway
    try:
        case, gold = record_to_case(data)
    except ValidationError as exc:
        error = validation_error(exc, file, line)
        raise InputError(
            error.reason,
            file=file,
            line=line,
            field=f"case.{error.field}" if error.field else "case",
            hint="the inline case takes the Case fields (see judge/types.py)",
        ) from exc
    return case, gold


def _traced_case(
    record: RunRecord, path: Path, line: int, imports: dict[tuple[Path, str | None], Any]
) -> tuple[Case, str | None]:
    """The case read from the record's trace file with its importer (each file read once)."""
    assert record.trace is not None  # checked by the caller
    trace = Path(record.trace)
    if not trace.is_absolute():
        trace = path.parent / trace
    key = (trace, record.format)
    if key not in imports:
        try:
            imports[key] = import_traces(trace, record.format)
        except InputError as exc:
            raise InputError(
                f"cannot import the trace: {exc}",
                file=str(path),
                line=line,
                field="format" if "format" in exc.reason else "trace",
            ) from exc
    result = imports[key]
    if result.errors and not result.cases:
        raise InputError(
            f"cannot import the trace: {result.errors[0]}", file=str(path), line=line, field="trace"
        )
    cases: list[Case] = list(result.cases)
    if record.trace_case is not None:
        chosen = [c for c in cases if c.id == record.trace_case]
        if not chosen:
            raise InputError(
                f"{trace} holds no case {record.trace_case!r} "
                f"(it has: {', '.join(c.id for c in cases[:5])})",
                file=str(path),
                line=line,
                field="trace_case",
            )
        case = chosen[0]
    elif len(cases) == 1:
        case = cases[0]
    else:
        raise InputError(
            f"{trace} holds {len(cases)} cases; name one with 'trace_case'",
            file=str(path),
            line=line,
            field="trace_case",
        )
    return case, result.gold.get(case.id)


# --- Building run sets --------------------------------------------------------------------------


def _lookup(record: Mapping[str, Any], dotted: str) -> Any:
    """``record["slices"]["task_id"]`` for ``"slices.task_id"``; None when absent."""
    value: Any = record
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def runset_from_gold(
    records: Iterable[tuple[int, Mapping[str, Any]]],
    *,
    task_key: str = "slices.task_id",
    repetition_key: str = "slices.trial",
    treatment_key: str | None = "slices.agent_model",
    treatment: str | None = None,
    benchmark: str = DEFAULT_BENCHMARK,
    file: str = "<gold>",
) -> list[dict[str, Any]]:
    """Run-set records from gold-format records or cases (line number, record): each becomes one
    run with its case inline, its task and repetition read from the given keys, its gold (when
    labelled) as ``official``. A record whose ``slices.infra_error`` is true (an importer's mark
    of a run the harness failed) becomes a run of status ``infra_error``.

    ``treatment`` names the single treatment; otherwise it is read from ``treatment_key``, else
    the case's ``agent_model``. Cases as ``judge import`` writes them carry no task id and no
    repetition: a record without the task key takes ``task-<12 hex>`` of its task text (runs of
    the same task text are repetitions of one task), and one without the repetition key is
    numbered 0, 1, 2... in file order within its treatment and task. Each run says in
    ``meta.derived`` which values were derived.
    """
    out: list[dict[str, Any]] = []
    used: dict[tuple[str, str], set[int]] = {}
    for line, record in records:
        derived: dict[str, str] = {}
        task_id = str(_task_of(record, task_key, derived, file=file, line=line))
        chosen = _treatment_of(record, treatment, treatment_key, derived, file=file, line=line)
        taken = used.setdefault((chosen, task_id), set())
        repetition = _lookup(record, repetition_key)
        if repetition is None:
            repetition = next(n for n in range(len(taken) + 1) if n not in taken)
            derived["repetition"] = "file order"
        if isinstance(repetition, int | str) and str(repetition).isdigit():
            taken.add(int(repetition))
        run = _gold_run(
            record,
            line,
            task_id=task_id,
            treatment=chosen,
            repetition=int(repetition),
            benchmark=benchmark,
        )
        if derived:
            run["meta"] = {"derived": derived}
        out.append(run)
    return out


def _task_of(
    record: Mapping[str, Any], task_key: str, derived: dict[str, str], *, file: str, line: int
) -> Any:
    """A gold record's task id: at ``task_key``, else derived from its task text."""
    task_id = _lookup(record, task_key)
    if task_id is None and isinstance(record.get("task"), str) and record["task"].strip():
        task_id = task_id_of(record["task"])
        derived["task_id"] = "task text"
    if task_id is None:
        raise InputError(
            f"no '{task_key}' to read the task_id from, and no task text",
            file=file,
            line=line,
            field=task_key,
            hint="choose the key with --task-key",
        )
    return task_id


def _treatment_of(
    record: Mapping[str, Any],
    treatment: str | None,
    treatment_key: str | None,
    derived: dict[str, str],
    *,
    file: str,
    line: int,
) -> str:
    """A gold record's treatment: the one given, else at ``treatment_key``, else its agent
    model."""
    chosen = treatment
    if chosen is None and treatment_key is not None:
        found = _lookup(record, treatment_key)
        chosen = str(found) if found is not None else None
    if chosen is None and record.get("agent_model"):
        chosen = str(record["agent_model"])
        derived["treatment"] = "agent_model"
    if chosen is None:
        raise InputError(
            "no treatment", file=file, line=line, field=treatment_key, hint="give --treatment NAME"
        )
    return chosen


def _gold_run(
    record: Mapping[str, Any],
    line: int,
    *,
    task_id: str,
    treatment: str,
    repetition: int,
    benchmark: str,
) -> dict[str, Any]:
    """The run-set record of a gold record: its run, the case inline, the agent model, the
    gold as ``official``, an importer's infra_error mark."""
    case = {k: v for k, v in record.items() if k not in GOLD_ONLY_FIELDS}
    slices = record.get("slices") if isinstance(record.get("slices"), Mapping) else {}
    agent_model = record.get("agent_model") or (slices or {}).get("agent_model")
    run: dict[str, Any] = {
        "run_id": str(record.get("id") or f"line-{line}"),
        "task_id": task_id,
        "treatment": treatment,
        "repetition": repetition,
        "benchmark": benchmark,
        "case": case,
    }
    if agent_model:
        run["agent_model"] = str(agent_model)
    if record.get("gold") in ("pass", "fail"):
        run["official"] = record["gold"]
    if _lookup(record, "slices.infra_error") is True:
        # The importer says the harness failed (tau-bench's crashed runs, Inspect samples
        # that errored): the run is left out of the analysis set, not scored as a failure.
        run["status"] = "infra_error"
    return run


def task_id_of(task: str) -> str:
    """A task id for a task text: ``task-`` and 12 hex digits of its SHA-256."""
    return "task-" + sha256_hex(task.strip().encode("utf-8"))[:12]


def write_runs(records: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """Write run-set records as JSONL."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
