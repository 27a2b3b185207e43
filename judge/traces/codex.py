"""``codex``: OpenAI Codex CLI ``codex exec --json`` JSONL events, and Codex session files.

Session files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, which every interactive or
``exec`` session writes) are read by :mod:`judge.traces.codex_session`; they record the prompt
and the model, which the ``exec --json`` stream below does not.

Followed: the ``ThreadEvent`` schema of ``codex-rs/exec/src/exec_events.rs`` (openai/codex,
read at commit 08a1f30; the format introduced with codex 0.44, October 2025):

* ``thread.started`` (``thread_id``) starts a case; a file with several threads gives several;
* ``turn.started``; ``turn.completed`` (``usage``: ``input_tokens``, ``cached_input_tokens``,
  ``output_tokens``, summed into ``meta.usage``); ``turn.failed`` (``error.message``) and
  ``error`` (``message``) become ``error`` turns;
* ``item.started`` / ``item.updated`` / ``item.completed`` carry an ``item`` with ``id`` and
  ``type``; the last state of each item is used, in the order items first appeared:

  - ``agent_message`` (``text``): a message; the last one is the final answer;
  - ``reasoning`` (``text``) and ``plan`` (``text``): ``note`` turns;
  - ``command_execution`` (``command``, ``aggregated_output``, ``exit_code``, ``status``):
    a tool call and its output (a test run, an error when the exit code is not 0 or the
    status is ``failed`` / ``declined``, else a tool result);
  - ``file_change`` (``changes`` [{``path``, ``kind``: add|delete|update}], ``status``): a
    tool call listing the files (the patch text itself is not in the stream); a failed patch
    is an error;
  - ``mcp_tool_call`` (``server``, ``tool``, ``arguments``, ``result``, ``error``,
    ``status``): a tool call and its result;
  - ``web_search`` (``query``): a tool call; ``todo_list`` (``items``): a note;
  - ``error`` (``message``): an error turn.

``step`` numbers the agent's actions (command, patch, tool call, search) in order.

Known gaps, stated rather than guessed:

* The stream has neither the prompt nor the model: ``task`` is empty with
  ``meta.task_missing`` and ``agent_model`` is None unless the run set supplies them.
* No diff is in the stream (``file_change`` lists paths only): ``diff`` is the output of the
  last ``git diff`` / ``git show`` command the agent ran, if any (``meta.diff_source``).
* Unknown event and item types (``item.plan.delta``, ``request_user_input``,
  ``collab_tool_call`` and whatever later versions add) are skipped with a note. The older
  pre-0.44 envelope (``{"id", "msg": {...}}``) is not supported: such lines are skipped with a
  note saying so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge.traces import BaseImporter, ImportResult
from judge.traces._common import (
    Loose,
    TraceBuilder,
    agent_run,
    first_json_object,
    to_text,
    validate,
)
from judge.traces._stream import StreamReader
from judge.traces.codex_session import looks_like_session, read_session


class _Item(Loose):
    id: str
    type: str


class _TextItem(Loose):
    text: str = ""


class _Command(Loose):
    command: str
    aggregated_output: str = ""
    exit_code: int | None = None
    status: str = "in_progress"


class _Change(Loose):
    path: str
    kind: str | None = None


class _FileChange(Loose):
    changes: list[_Change] = []
    status: str = "completed"


class _McpError(Loose):
    message: str = ""


class _McpResult(Loose):
    content: list[Any] = []
    structured_content: Any = None


class _McpCall(Loose):
    server: str = ""
    tool: str
    arguments: Any = None
    result: _McpResult | None = None
    error: _McpError | None = None
    status: str = "in_progress"


class _WebSearch(Loose):
    query: str = ""


class _Todo(Loose):
    text: str
    completed: bool = False


class _TodoList(Loose):
    items: list[_Todo] = []


class _ErrorItem(Loose):
    message: str


_ITEMS: dict[str, type[Loose]] = {
    "agent_message": _TextItem,
    "reasoning": _TextItem,
    "plan": _TextItem,
    "command_execution": _Command,
    "file_change": _FileChange,
    "mcp_tool_call": _McpCall,
    "web_search": _WebSearch,
    "todo_list": _TodoList,
    "error": _ErrorItem,
}


class _ItemEvent(Loose):
    type: Literal["item.started", "item.updated", "item.completed"]
    item: _Item


class _Usage(Loose):
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0


class _TurnCompleted(Loose):
    type: Literal["turn.completed"]
    usage: _Usage | None = None


class _ThreadError(Loose):
    message: str


class _TurnFailed(Loose):
    type: Literal["turn.failed"]
    error: _ThreadError


class _Error(Loose):
    type: Literal["error"]
    message: str


class _ThreadStarted(Loose):
    type: Literal["thread.started"]
    thread_id: str


@dataclass
class _Thread:
    """One thread while its lines are read: items by id, and the order of everything."""

    thread_id: str | None
    line: int
    order: list[tuple[str, Any]] = field(default_factory=list)  # ("item", id) | ("error", ..)
    # (turn, item id) -> (line, last state): item ids are unique within a turn
    items: dict[tuple[int, str], tuple[int, dict[str, Any]]] = field(default_factory=dict)
    usage: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    failed: bool = False


class CodexImporter(BaseImporter):
    """Codex exec JSONL: one case per thread."""

    description = (
        "OpenAI Codex CLI: `codex exec --json` JSONL events, or a session file "
        "(~/.codex/sessions/.../rollout-*.jsonl)"
    )

    def sniff(self, path: Path) -> bool:
        """The first line is a Codex thread event or a Codex session (rollout) line."""
        first = first_json_object(path)
        kind = first.get("type") if first else None
        return (isinstance(kind, str) and kind.startswith(("thread.", "turn.", "item."))) or (
            looks_like_session(first)
        )

    def load(self, path: Path) -> ImportResult:
        """Every thread (or the session) of ``path`` as a case; an error for each bad line."""
        if looks_like_session(first_json_object(path)):
            return read_session(path)
        return _Reader.read(path)


class _Reader(StreamReader):
    """Reads the lines of one file into threads."""

    def __init__(self, file: str) -> None:
        super().__init__(file)
        self.thread: _Thread | None = None

    def current(self, number: int) -> _Thread:
        if self.thread is None:
            self.thread = _Thread(None, number)
        return self.thread

    def line(self, number: int, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if not isinstance(kind, str):
            if "msg" in obj:
                self.skip(
                    "lines of the pre-0.44 codex envelope ({'id', 'msg'}), not supported", number
                )
                return
            self.missing(number, "type", "a string")
            return
        handler = {
            "thread.started": self.thread_started,
            "turn.started": self.turn_started,
            "turn.completed": self.turn_completed,
            "turn.failed": self.turn_failed,
            "error": self.error,
            "item.started": self.item,
            "item.updated": self.item,
            "item.completed": self.item,
        }.get(kind)
        if handler is None:
            self.skip(f"events of type '{kind}'", number)
            return
        handler(number, obj)

    def thread_started(self, number: int, obj: dict[str, Any]) -> None:
        event = validate(_ThreadStarted, obj, self.out.errors, self.file, line=number)
        if event is None:
            return
        self.close()
        self.thread = _Thread(event.thread_id, number)

    def turn_started(self, number: int, obj: dict[str, Any]) -> None:
        self.current(number).turns += 1

    def turn_completed(self, number: int, obj: dict[str, Any]) -> None:
        event = validate(_TurnCompleted, obj, self.out.errors, self.file, line=number)
        if event is not None and event.usage is not None:
            self.current(number).usage.update(event.usage.model_dump())

    def turn_failed(self, number: int, obj: dict[str, Any]) -> None:
        event = validate(_TurnFailed, obj, self.out.errors, self.file, line=number)
        if event is not None:
            thread = self.current(number)
            thread.failed = True
            thread.order.append(("error", (number, f"turn failed: {event.error.message}")))

    def error(self, number: int, obj: dict[str, Any]) -> None:
        event = validate(_Error, obj, self.out.errors, self.file, line=number)
        if event is not None:
            self.current(number).order.append(("error", (number, f"error: {event.message}")))

    def item(self, number: int, obj: dict[str, Any]) -> None:
        event = validate(_ItemEvent, obj, self.out.errors, self.file, line=number)
        if event is None:
            return
        item = event.item
        model = _ITEMS.get(item.type)
        if model is None:
            self.skip(f"items of type '{item.type}'", number)
            return
        raw = obj["item"]
        if validate(model, raw, self.out.errors, self.file, line=number, where="item") is None:
            return
        thread = self.current(number)
        key = (thread.turns, item.id)
        if key not in thread.items:
            thread.order.append(("item", key))
        thread.items[key] = (number, raw)

    def close(self) -> None:
        """Turn the open thread into a case."""
        thread, self.thread = self.thread, None
        if thread is None:
            return
        builder = TraceBuilder()
        step = 0
        for kind, value in thread.order:
            if kind == "error":
                number, text = value
                builder.add("system", text, "error", f"line {number}")
                continue
            number, raw = thread.items[value]
            step = _add_item(builder, raw, f"line {number} {value[1]}", step)
        builder.finish()
        meta: dict[str, Any] = {
            "thread_id": thread.thread_id,
            "first_line": thread.line,
            "turns": thread.turns,
            "task_missing": True,
        }
        if thread.usage:
            meta["usage"] = dict(thread.usage)
        meta["exit_status"] = "failed" if thread.failed else "completed"
        diff = builder.noted_diff(meta)
        base = thread.thread_id or f"{Path(self.file).stem}@line{thread.line}"
        self.out.cases.append(
            agent_run(
                self.unique_id(base),
                builder.turns,
                task=None,  # codex exec --json never records the prompt
                diff=diff,
                agent_model=None,
                meta=meta,
                slices={"agent": "codex", "exit_status": meta["exit_status"]},
            )
        )


def _add_item(builder: TraceBuilder, raw: dict[str, Any], source: str, step: int) -> int:
    """Append the turns of one item (already validated); return the action count so far."""
    kind = raw["type"]
    item = _ITEMS[kind].model_validate(raw)
    if isinstance(item, _TextItem):
        if kind == "agent_message":
            builder.add("assistant", item.text, "message", source, step or None)
        else:
            builder.add("assistant", item.text, "note", source, step or None)
        return step
    if isinstance(item, _TodoList):
        lines = [f"[{'x' if t.completed else ' '}] {t.text}" for t in item.items]
        builder.add("assistant", "todo list:\n" + "\n".join(lines), "note", source, step or None)
        return step
    if isinstance(item, _ErrorItem):
        builder.add("system", item.message, "error", source, step or None)
        return step
    step += 1
    call_id = f"{source}#{step}"
    if isinstance(item, _Command):
        builder.call(call_id, "shell", {"command": item.command}, source, step)
        if item.status == "in_progress":
            builder.add(
                "tool",
                "[no output: the command had not finished when the log ended]",
                "error",
                source,
                step,
            )
        else:
            text = item.aggregated_output
            if item.status == "declined":
                text = "[command declined]" + (f"\n{text}" if text else "")
            elif item.exit_code is not None:
                text = f"{text.rstrip()}\n[exit code {item.exit_code}]".lstrip()
            builder.result(
                call_id,
                text,
                source,
                exit_code=item.exit_code,
                is_error=item.status in ("failed", "declined"),
            )
    elif isinstance(item, _FileChange):
        listing = ", ".join(f"{c.kind or 'change'} {c.path}" for c in item.changes) or "no files"
        builder.add(
            "assistant",
            f"[apply_patch] {listing} ({item.status})",
            "error" if item.status == "failed" else "tool_call",
            source,
            step,
        )
    elif isinstance(item, _McpCall):
        name = f"{item.server}.{item.tool}" if item.server else item.tool
        builder.call(call_id, name, item.arguments, source, step)
        if item.error is not None:
            builder.result(call_id, item.error.message, source, is_error=True)
        elif item.result is not None:
            parts = [
                p.get("text")
                if isinstance(p, dict) and isinstance(p.get("text"), str)
                else to_text(p)
                for p in item.result.content
            ]
            text = "\n".join(str(p) for p in parts) or to_text(item.result.structured_content)
            builder.result(call_id, text, source, is_error=item.status == "failed")
    elif isinstance(item, _WebSearch):
        builder.call(call_id, "web_search", {"query": item.query}, source, step)
    return step
