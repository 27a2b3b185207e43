"""The checks every imported case goes through, and the tasks a user supplies for them.

:func:`judge.traces.import_traces` passes every importer's result through :func:`settle`, so the
rules are the same for all formats:

* a case with nothing to judge (no trace turn, no diff, no candidates) is an **error**: it is
  dropped, and the error names the case, the file and the line where the case starts. A stream
  cut short (a Codex log that ends after ``turn.started``) is such a case;
* a file that yields no case and no error is an **error** too (it is probably another format);
* a case without a task is a **warning** (:attr:`ImportResult.warnings`): the case is kept with
  ``meta.task_missing``, so that a caller who knows the task can still supply it. ``judge
  import`` does not write such a case: it counts as an error there (exit code 1) unless
  ``--task`` / ``--task-from`` supplies the prompt. Stream formats (``claude -p``
  stream-json, ``codex exec --json``) never record the prompt; OTel traces recorded without
  message content do not either.

Tasks come from :func:`task_text` (one prompt for every case of the run) or :func:`read_tasks`
(a file: plain text for every case, or a ``.json`` / ``.jsonl`` mapping per session id). A
supplied task fills only cases whose log has none; a case that records its own keeps it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from judge.errors import InputError
from judge.traces._common import json_error
from judge.types import Case, Strict

if TYPE_CHECKING:
    from judge.traces import ImportResult

#: Case.meta keys that hold an id the user may know the session by.
SESSION_KEYS = ("session_id", "thread_id", "trace_id", "conversation_id")
TASK_HINT = "give the prompt with judge import --task TEXT or --task-from FILE"
MAPPING_HINT = (
    'a .json file holds {"<session id>": "<task>", ...} or a list of '
    '{"session_id": ..., "task": ...}; a .jsonl file one such record per line'
)


class TaskRecord(Strict):
    """One entry of a per-session task mapping."""

    session_id: str = Field(min_length=1)
    task: str = Field(min_length=1)


@dataclass
class TaskSource:
    """Tasks to supply: one ``text`` for every case, or one per session id (``by_id``)."""

    text: str | None = None
    by_id: dict[str, str] = field(default_factory=dict)
    #: Where the tasks came from (the --task-from file), for messages.
    origin: str = "--task"
    #: Session ids of ``by_id`` that matched a case.
    used: set[str] = field(default_factory=set)

    def task_for(self, case: Case) -> str | None:
        """The supplied task of ``case``: by one of its ids, else the common text."""
        for key in case_keys(case):
            if key in self.by_id:
                self.used.add(key)
                return self.by_id[key]
        return self.text

    def unused(self) -> list[str]:
        """Session ids of the mapping that matched no case."""
        return [key for key in self.by_id if key not in self.used]


def task_text(text: str) -> TaskSource:
    """``--task TEXT``: the same prompt for every case."""
    if not text.strip():
        raise InputError("the task is empty", field="--task", hint="give the prompt's text")
    return TaskSource(text=text)


def read_tasks(path: str | Path) -> TaskSource:
    """``--task-from FILE``: a ``.json`` / ``.jsonl`` per-session mapping, or else the whole
    file's text as the prompt of every case. InputError naming the file, line and field."""
    path = Path(path)
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read the task file ({exc.strerror})", file=name) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", file=name) from exc
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        records: list[tuple[int | None, Any]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                records.append((number, _parse(line, name, number)))
        source = _from_records(records, name)
    elif suffix == ".json":
        data = _parse(text, name, None)
        if isinstance(data, dict):
            source = _from_records(
                [(None, {"session_id": k, "task": v}) for k, v in data.items()], name, keyed=True
            )
        elif isinstance(data, list):
            source = _from_records([(None, item) for item in data], name)
        else:
            raise InputError(
                "a task mapping must be a JSON object or list", file=name, hint=MAPPING_HINT
            )
    else:
        if not text.strip():
            raise InputError("the task file is empty", file=name)
        return TaskSource(text=text.strip("\n"), origin=name)
    source.origin = name
    return source


def _parse(text: str, file: str, line: int | None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise json_error(exc, file, line=line, hint=MAPPING_HINT) from exc


def _from_records(
    records: list[tuple[int | None, Any]], file: str, *, keyed: bool = False
) -> TaskSource:
    by_id: dict[str, str] = {}
    for index, (line, raw) in enumerate(records):
        where = None if line is not None or keyed else f"[{index}]"
        try:
            record = TaskRecord.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            if keyed:
                loc = f"{raw.get('session_id')}" if isinstance(raw, dict) else loc
            raise InputError(
                first["msg"],
                file=file,
                line=line,
                field=".".join(p for p in (where, loc) if p) or None,
                hint=MAPPING_HINT,
            ) from exc
        if record.session_id in by_id:
            raise InputError(
                f"session id {record.session_id!r} is given twice",
                file=file,
                line=line,
                field=where or "session_id",
            )
        by_id[record.session_id] = record.task
    if not by_id:
        raise InputError("the task mapping is empty", file=file, hint=MAPPING_HINT)
    return TaskSource(by_id=by_id)


def case_keys(case: Case) -> list[str]:
    """The ids a user may know a case by: its id (without a ``#N`` repeat suffix) and the
    session / thread / trace / conversation id its format records."""
    keys = [case.id]
    if "#" in case.id:
        keys.append(case.id.rsplit("#", 1)[0])
    for key in SESSION_KEYS:
        value = case.meta.get(key)
        if isinstance(value, str) and value and value not in keys:
            keys.append(value)
    return keys


def case_line(case: Case) -> int | None:
    """The line where the case starts in its file, when the importer recorded it."""
    for key in ("first_line", "line"):
        value = case.meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def settle(result: ImportResult, file: str, tasks: TaskSource | None = None) -> ImportResult:
    """Supply ``tasks``, then drop the cases with nothing to judge (errors) and flag the cases
    without a task (warnings). Changes ``result`` in place and returns it."""
    kept: list[Case] = []
    recorded = 0
    for case in result.cases:
        if tasks is not None:
            supplied = tasks.task_for(case)
            if supplied is not None and not case.task.strip():
                meta = {k: v for k, v in case.meta.items() if k != "task_missing"}
                meta["task_source"] = tasks.origin
                case = case.model_copy(update={"task": supplied, "meta": meta})
            elif supplied is not None:
                recorded += 1
        line = case_line(case)
        if not case.trace and not case.diff and not case.candidates:
            reason = f"case {case.id!r} has no trace turns: nothing to judge"
            hint = "is the log cut short, or in another format? (judge import --list)"
            error = case.meta.get("error")
            if isinstance(error, str) and error:
                reason += f"; the run recorded an error: {error[:200]}"
                hint = (
                    "an infrastructure failure is not a judged case (in a run set, give it "
                    "status infra_error)"
                )
            result.errors.append(InputError(reason, file=file, line=line, hint=hint))
            continue
        if not case.task.strip():
            result.warnings.append(
                InputError(
                    f"case {case.id!r} has no task: the log does not record the prompt",
                    file=file,
                    line=line,
                    hint=TASK_HINT,
                )
            )
        kept.append(case)
    result.cases = kept
    if recorded:
        result.notes.append(
            f"{file}: {recorded} case(s) record their own task; the task "
            f"from {tasks.origin if tasks else '--task'} was not used for them"
        )
    if not result.cases and not result.errors:
        result.errors.append(
            InputError(
                "no case found in the file",
                file=file,
                hint="is it the right format? see judge import --list, or pass --format",
            )
        )
    return result
