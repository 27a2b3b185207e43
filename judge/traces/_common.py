"""Helpers shared by the trace importers: reading files safely, naming errors, building turns.

Every importer turns a third-party record into :class:`~judge.types.TraceTurn` objects through
:class:`TraceBuilder`, so that turn ids, steps, kinds and the final-answer rule are the same for
all formats:

* ids are ``turn-1``, ``turn-2``, ... in trace order;
* a tool call remembers its command, so that its result can be classified: the result of a test
  command, or any output with a pytest / unittest / go / cargo / jest summary, is a ``test_run``;
  otherwise a result marked as failed (``is_error``, non-zero exit code, error status) is an
  ``error``; anything else is a ``tool_result``;
* the agent's last message is its ``final_answer`` when no tool call follows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from judge.errors import InputError
from judge.types import Case, TraceTurn, TurnKind

#: AgentRx's ground truth, beside its tau-bench result files (judge/traces/stepwise.py).
AGENTRX_GROUND_TRUTH = "tau_ground_truth.json"
#: How much of a file a sniffer reads to guess its format.
SNIFF_BYTES = 64 * 1024

#: Tool-call argument names that hold a shell command, in the formats we read.
COMMAND_KEYS = ("command", "cmd", "script")
#: Other arguments a shell tool may take. A call with any other argument is not a plain shell
#: command (Anthropic's text editor tool has ``command: "str_replace"`` beside its path).
SHELL_OPTIONS = frozenset(
    {
        "description",
        "timeout",
        "timeout_ms",
        "restart",
        "workdir",
        "cwd",
        "justification",
        "with_escalated_permissions",
        "run_in_background",
        "env",
        "shell",
    }
)


class Loose(BaseModel):
    """Base for third-party records: the fields we use are typed, the others ignored.

    Third-party formats (Claude Code, Codex, OTel, SWE-agent, ...) add fields in every release;
    rejecting unknown fields would make every importer break on the next version. What we read
    is still validated strictly by type, and a wrong type is an error naming the field.
    """

    model_config = ConfigDict(extra="ignore")


# ---------------------------------------------------------------------------------------------
# Reading.


def read_head(path: Path, size: int = SNIFF_BYTES) -> str:
    """The first ``size`` bytes of ``path`` as text (bad bytes replaced); '' if unreadable."""
    try:
        with path.open("rb") as handle:
            return handle.read(size).decode("utf-8", errors="replace")
    except OSError:
        return ""


def first_json_object(path: Path) -> dict[str, Any] | None:
    """The first non-blank line of ``path`` parsed as a JSON object, or None."""
    for line in read_head(path).splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            return None
        return obj if isinstance(obj, dict) else None
    return None


def read_json(path: Path) -> Any | InputError:
    """The whole file parsed as one JSON value, or an InputError naming line and column."""
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return InputError(f"cannot read the file ({exc.strerror})", file=name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", file=name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return json_error(exc, name, hint="is the file truncated?")
    except RecursionError:
        return InputError("JSON nested too deeply", file=name)


def json_error(
    exc: json.JSONDecodeError, file: str, *, line: int | None = None, hint: str | None = None
) -> InputError:
    """A JSON text that does not parse, as an InputError naming the file, the line (``line``
    when the text is one line of the file, else the decoder's) and the column."""
    return InputError(
        f"not valid JSON ({exc.msg}, column {exc.colno})",
        file=file,
        line=line if line is not None else exc.lineno,
        hint=hint,
    )


def looks_like_jsonl(path: Path) -> bool:
    """True when the first non-blank line is a whole JSON object by itself.

    A pretty-printed JSON document starts with a line that does not parse alone; a compact
    one-line document reads the same either way. Later lines may be broken: they are errors.
    """
    return first_json_object(path) is not None


# ---------------------------------------------------------------------------------------------
# Errors.


def join_path(prefix: str, loc: tuple[int | str, ...] | list[int | str]) -> str:
    """``prefix`` followed by a pydantic location, as a JSON path: ``messages[3].content``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part:
            out += f".{part}" if out else str(part)
    return out


_UNION_TAG = re.compile(r"^(?:str|int|float|bool|none|dict|list)$|\[|^function-")


def _field_loc(loc: tuple[int | str, ...]) -> list[int | str]:
    """A pydantic location without the union-member tags (``content.str`` -> ``content``)."""
    return [p for p in loc if isinstance(p, int) or not _UNION_TAG.search(p)]


def schema_error(
    exc: ValidationError, file: str, *, line: int | None = None, where: str = ""
) -> InputError:
    """The first problem of a ValidationError as an InputError naming file, line and field.

    When a field may take several types, the alternatives are named together.
    """
    errors = exc.errors()
    first = errors[0]
    loc = _field_loc(first["loc"])
    field = join_path(where, loc) or None
    if first["type"] == "missing":
        return InputError("required field is missing", file=file, line=line, field=field)
    expected: list[str] = []
    for error in errors:
        if _field_loc(error["loc"]) == loc and error["msg"] not in expected:
            expected.append(error["msg"])
    expected = [re.sub(r" or instance of \w+", "", m) for m in expected]
    if len(expected) > 1:
        alternatives = " or ".join(m.removeprefix("Input should be ") for m in expected)
        message = f"Input should be {alternatives} (got {_short(first.get('input'))})"
    else:
        message = f"{expected[0]} (got {_short(first.get('input'))})"
    return InputError(message, file=file, line=line, field=field)


def missing_field(file: str, line: int | None, field: str, expected: str) -> InputError:
    """The error of a record whose required ``field`` is absent or not ``expected`` (``a
    string``, ``an object``, ``a list``): it names the file, the record's line and the field."""
    return InputError(
        f"required field is missing or not {expected}", file=file, line=line, field=field
    )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate(
    model: type[BaseModel],
    data: Any,
    errors: list[InputError],
    file: str,
    *,
    line: int | None = None,
    where: str = "",
) -> Any:
    """``model`` validated from ``data``, or None with an InputError appended to ``errors``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors.append(schema_error(exc, file, line=line, where=where))
        return None


# ---------------------------------------------------------------------------------------------
# Text.


def to_text(value: Any) -> str:
    """Any JSON value as text: strings as they are, the rest as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def maybe_json(value: Any) -> Any:
    """A string as the JSON value it holds; the string itself when it is not JSON, and any
    other value as it is. Tool-call arguments (OpenAI sends them as a JSON string), attributes
    kept as JSON text (MLflow, OpenLLMetry) and platform inputs (Langfuse v2) read this way."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
    return value


def command_of(arguments: Any) -> str | None:
    """The shell command in a tool call's arguments, if there is one."""
    arguments = maybe_json(arguments)
    if isinstance(arguments, Mapping):
        if any(k not in COMMAND_KEYS and k not in SHELL_OPTIONS for k in arguments):
            return None
        for key in COMMAND_KEYS:
            value = arguments.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return " ".join(value)
    return None


def render_call(name: str, arguments: Any) -> str:
    """A tool call as one readable line: ``[Bash] $ pytest -q`` or ``[search] {"q": "x"}``."""
    command = command_of(arguments)
    if command is not None:
        return f"[{name}] $ {command}"
    parsed = maybe_json(arguments)
    if parsed is None or parsed == {}:
        return f"[{name}]"
    return f"[{name}] {to_text(parsed)}"


def inner_tag(text: str, tags: tuple[str, ...]) -> str | None:
    """The text inside the first of ``<tag>...</tag>`` found (issue / PR description wrappers)."""
    for tag in tags:
        match = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, re.DOTALL)
        if match:
            return match.group(1)
    return None


# ---------------------------------------------------------------------------------------------
# Classification.

_TEST_COMMAND = re.compile(
    r"(?:^|[\s;&|(/'\"])(?:pytest|py\.test|tox|nox|nosetests|jest|vitest|mocha|rspec|phpunit|"
    r"ctest)\b|python[\d.]*\s+(?:-\w+\s+)*-m\s+(?:pytest|unittest)\b|"
    r"\b(?:go|cargo|dotnet|mvn|gradle|npm|yarn|pnpm|bun)\s+(?:run\s+)?test\b|"
    r"\bmake\s+(?:test|check)\b|manage\.py\s+test\b|runtests\.py\b|\bbin/test\b"
)
_TEST_OUTPUT = re.compile(
    r"^=+ .{0,200}\b(?:passed|failed|errors?|no tests ran)\b.{0,200} =+\s*$|"
    r"\b\d+ (?:passed|failed)\b.{0,200}\bin \d+(?:\.\d+)?s\b|"
    r"^Ran \d+ tests? in \d+(?:\.\d+)?s\s*$|"
    r"^test result: (?:ok|FAILED)\.|^(?:ok|FAIL)\s+\S+\s+\d+(?:\.\d+)?s\s*$|"
    r"^Tests:\s+.{0,100}\d+ total",
    re.MULTILINE,
)
_DIFF_START = re.compile(r"^diff --git ", re.MULTILINE)


def is_test_command(command: str | None) -> bool:
    """True when ``command`` runs a test suite (pytest, unittest, go test, npm test, ...)."""
    return bool(command) and _TEST_COMMAND.search(command or "") is not None


def looks_like_test_output(text: str) -> bool:
    """True when ``text`` holds a test runner's summary line."""
    return _TEST_OUTPUT.search(text) is not None


def without_heredocs(lines: Iterable[str], heredoc: re.Pattern[str]) -> str:
    """The ``lines`` of a shell command, joined, without the bodies of its here-documents
    (files written with ``cat <<EOF``): after a line ``heredoc`` matches, every line up to the
    one that is its ``end`` group alone is left out. Line by line, so the cost stays linear."""
    kept: list[str] = []
    end: str | None = None
    for line in lines:
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        kept.append(line)
        match = heredoc.search(line)
        if match:
            end = match.group("end")
    return "\n".join(kept)


def classify_result(
    text: str,
    *,
    command: str | None = None,
    tool: str | None = None,
    is_error: bool = False,
    exit_code: int | None = None,
) -> TurnKind:
    """The kind of a tool's output: ``test_run``, ``error`` or ``tool_result``.

    A failing test run stays a ``test_run``: which tests fail is the most useful evidence.
    """
    if is_test_command(command) or looks_like_test_output(text):
        return "test_run"
    if tool and re.search(r"(?:^|_)tests?(?:$|_)", tool.lower()):
        return "test_run"
    if is_error or (exit_code is not None and exit_code != 0):
        return "error"
    return "tool_result"


def diff_in(text: str) -> str | None:
    """The unified diff printed in ``text`` (from its first ``diff --git`` line), or None."""
    match = _DIFF_START.search(text)
    if match is None:
        return None
    diff = text[match.start() :].rstrip()
    return diff + "\n" if diff else None


# ---------------------------------------------------------------------------------------------
# Building a trace.


class TraceBuilder:
    """Numbered, classified trace turns, with tool calls linked to their results."""

    def __init__(self) -> None:
        self.turns: list[TraceTurn] = []
        # call id -> (tool, command, step) of every tool call added
        self._calls: dict[str, tuple[str, str | None, int | None]] = {}
        self._diff: tuple[str, str] | None = None  # (turn id, diff) of the last printed diff

    def add(
        self, role: str, content: str, kind: TurnKind, source: str, step: int | None = None
    ) -> TraceTurn:
        """Append one turn and return it."""
        turn = TraceTurn(
            id=f"turn-{len(self.turns) + 1}",
            role=role,
            content=content,
            step=step,
            kind=kind,
            source=source,
        )
        self.turns.append(turn)
        return turn

    def call(
        self,
        call_id: str | None,
        name: str,
        arguments: Any,
        source: str,
        step: int | None = None,
        role: str = "assistant",
        content: str | None = None,
    ) -> TraceTurn:
        """Append a tool call and remember its command for its result. The turn's text is
        ``content`` when given (a thought with its command), else the rendered call."""
        if call_id:
            self._calls[call_id] = (name, command_of(arguments), step)
        text = content if content is not None else render_call(name, arguments)
        return self.add(role, text, "tool_call", source, step)

    def called(self, call_id: str | None) -> bool:
        """True when a call with this id was already added."""
        return bool(call_id) and call_id in self._calls

    def result(
        self,
        call_id: str | None,
        content: str,
        source: str,
        *,
        step: int | None = None,
        is_error: bool = False,
        exit_code: int | None = None,
        command: str | None = None,
        tool: str | None = None,
        role: str = "tool",
    ) -> TraceTurn:
        """Append a tool's output, classified with the command of its call; it shares the
        call's step unless ``step`` is given."""
        known_tool, known_command, known_step = self._calls.get(call_id or "", (None, None, None))
        command = command if command is not None else known_command
        step = step if step is not None else known_step
        tool = tool or known_tool
        kind = classify_result(
            content, command=command, tool=tool, is_error=is_error, exit_code=exit_code
        )
        turn = self.add(role, content, kind, source, step)
        diff = diff_in(content) if _prints_diff(command, content) else None
        if diff:
            self._diff = (turn.id, diff)
        return turn

    def printed_diff(self) -> tuple[str, str] | None:
        """(turn id, diff) of the last tool output that printed a git diff, if any."""
        return self._diff

    def noted_diff(self, meta: dict[str, Any]) -> str | None:
        """The diff of the last tool output that printed one (None when none did), with that
        turn's id noted as ``meta["diff_source"]``."""
        if self._diff is None:
            return None
        meta["diff_source"] = self._diff[0]
        return self._diff[1]

    def finish(
        self,
        *,
        last_assistant_is_final: bool = False,
        agent_roles: tuple[str, ...] = ("assistant",),
    ) -> list[TraceTurn]:
        """The turns, with the agent's last message marked ``final_answer``.

        The last agent message is the final answer when no tool call follows it. With
        ``last_assistant_is_final`` (SWE agents that end by calling ``submit``), the agent's
        last turn is the final answer even when it is a tool call.
        """
        last = None
        for index in range(len(self.turns) - 1, -1, -1):
            turn = self.turns[index]
            if turn.role not in agent_roles:
                continue
            if turn.kind == "message" or (last_assistant_is_final and turn.kind == "tool_call"):
                last = index
                break
            if turn.kind == "tool_call":
                break
        if last is not None:
            self.turns[last] = self.turns[last].model_copy(update={"kind": "final_answer"})
        return self.turns


def agent_run(
    case_id: str,
    turns: list[TraceTurn],
    *,
    task: str | None,
    diff: str | None,
    agent_model: str | None,
    meta: dict[str, Any],
    slices: dict[str, Any] | None = None,
) -> Case:
    """The ``agent_run`` case of an imported trace; without a task (None), ``meta`` notes
    ``task_missing`` and the task is empty (:mod:`judge.traces.tasks` settles it)."""
    if task is None:
        meta["task_missing"] = True
    return Case(
        id=case_id,
        kind="agent_run",
        task=task or "",
        diff=diff,
        trace=turns,
        agent_model=agent_model,
        slices=slices or {},
        meta=meta,
    )


def _prints_diff(command: str | None, content: str) -> bool:
    """A tool output counts as the run's diff when its command was a git diff / show, or when
    the output itself starts with a diff header (mini-swe-agent's submission)."""
    if command and re.search(r"\bgit\s+(?:-\S+\s+)*(?:diff|show|format-patch)\b", command):
        return True
    return content.lstrip().startswith("diff --git ")
