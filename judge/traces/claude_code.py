"""``claude-code``: Claude Code stream-json output and Claude Code project session files.

Two forms of one event vocabulary are read (and detected):

* ``claude -p --output-format stream-json --verbose`` output (below);
* the session files Claude Code keeps in ``~/.claude/projects/<project>/<session id>.jsonl``
  (and ``<session id>/subagents/agent-*.jsonl``): the same ``user`` / ``assistant`` lines,
  keyed ``sessionId`` (camelCase) and carrying ``uuid``, ``parentUuid``, ``isSidechain``
  (a sub-agent's turn), ``isMeta`` (text Claude Code adds: skipped with a note), ``cwd``,
  ``gitBranch`` and ``version``; without ``system/init`` or ``result`` lines. Their
  bookkeeping lines (``summary``, ``file-history-snapshot``, ``progress``,
  ``queue-operation``, ``last-prompt``, other ``system`` subtypes) are skipped with a note.
  The prompt is recorded: the task is the first user text that is not a slash command, a
  local command's output or an interruption marker (those become ``note`` turns). A file
  whose lines are all sidechain (a sub-agent's own file) is read as that agent's run.

One JSON event per line in stream-json (as of Claude Code 1.x-2.x):

* ``{"type": "system", "subtype": "init", "session_id", "model", "tools", "cwd",
  "claude_code_version", ...}`` starts a session;
* ``{"type": "assistant", "message": {"id", "model", "content": [blocks], "usage"},
  "parent_tool_use_id", "session_id"}``: one line per content block in practice, blocks of
  type ``text``, ``thinking``, ``tool_use`` (``id``, ``name``, ``input``);
* ``{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id",
  "content", "is_error"}]}}``: tool results (or a plain user prompt, when the prompt is
  replayed with ``--replay-user-messages``);
* ``{"type": "result", "subtype": "success" | "error_max_turns" | "error_during_execution",
  "is_error", "result", "total_cost_usd", "usage", "duration_ms", "num_turns"}`` ends it.

Mapping: one Case per session (a new ``system/init`` or a new ``session_id`` starts the next
one, so concatenated logs work). ``step`` is the index of the model response (``message.id``);
a tool result shares the step of its call. Turns of a sub-agent (``parent_tool_use_id`` set)
get the role ``subagent``. ``thinking`` blocks become ``note`` turns. The final answer is the
``result`` text (marked on the last assistant message when it is the same text). A failed
``result`` adds an ``error`` turn and sets ``meta.exit_status``. Cost, usage, duration and turn
count go to ``meta``, never into the trace.

Known gaps, stated rather than guessed:

* ``claude -p "prompt"`` does not echo the prompt: unless user text messages are present
  (``--input-format stream-json --replay-user-messages``), the task is empty and
  ``meta.task_missing`` is true; whoever knows the task (a run set) must supply it.
* There is no submitted diff in this format: ``diff`` is the output of the last ``git diff``
  / ``git show`` the agent ran (``meta.diff_source`` names the turn), or None.
* ``stream_event`` lines (``--include-partial-messages``) repeat what the complete messages
  carry and are skipped with a note; other unknown event types and ``system`` subtypes other
  than ``init`` are skipped with a note too. Unknown content block types are skipped with a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge.errors import InputError
from judge.traces import BaseImporter, ImportResult
from judge.traces._common import (
    Loose,
    TraceBuilder,
    agent_run,
    first_json_object,
    read_head,
    to_text,
    validate,
)
from judge.traces._stream import StreamReader


class _Text(Loose):
    type: Literal["text"]
    text: str


class _Thinking(Loose):
    type: Literal["thinking"]
    thinking: str = ""


class _ToolUse(Loose):
    type: Literal["tool_use", "server_tool_use"]
    id: str
    name: str
    input: dict[str, Any] = {}


class _ToolResult(Loose):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


_BLOCKS: dict[str, type[Loose]] = {
    "text": _Text,
    "thinking": _Thinking,
    "tool_use": _ToolUse,
    "server_tool_use": _ToolUse,
    "tool_result": _ToolResult,
}


class _Message(Loose):
    id: str | None = None
    model: str | None = None
    content: str | list[Any]


class _System(Loose):
    type: Literal["system"]
    subtype: str | None = None
    session_id: str | None = None
    model: str | None = None
    tools: list[Any] | None = None
    cwd: str | None = None
    claude_code_version: str | None = None


class _MessageLine(Loose):
    """What an assistant line and a user line both carry."""

    message: _Message
    parent_tool_use_id: str | None = None
    session_id: str | None = None
    sessionId: str | None = None  # noqa: N815 - the project session files' key
    isSidechain: bool | None = None  # noqa: N815


class _Assistant(_MessageLine):
    type: Literal["assistant"]


class _User(_MessageLine):
    type: Literal["user"]
    isMeta: bool | None = None  # noqa: N815


class _Result(Loose):
    type: Literal["result"]
    subtype: str | None = None
    is_error: bool = False
    result: str | None = None
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    duration_ms: float | None = None
    num_turns: int | None = None
    session_id: str | None = None


_EVENTS: dict[str, type[Loose]] = {
    "system": _System,
    "assistant": _Assistant,
    "user": _User,
    "result": _Result,
}
#: Event types that carry nothing the complete messages do not: skipped with a note.
_SKIPPED = {"stream_event": "partial-message stream events repeat the complete messages"}
_BOOKKEEPING = "Claude Code bookkeeping, nothing to judge"
#: Line types of project session files that are not part of the conversation.
_PROJECT_SKIPPED = {
    kind: _BOOKKEEPING
    for kind in (
        "summary",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "last-prompt",
        "custom-title",
        "agent-name",
        "attachment",
    )
}
#: Line types a project session file may start with.
_PROJECT_FIRST = frozenset({"user", "assistant", "system", *_PROJECT_SKIPPED})
#: User text that Claude Code writes itself (slash commands, local command output, interrupts).
_HARNESS_TEXT = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "[Request interrupted",
)


@dataclass
class _Session:
    """What is known of one session while its lines are read."""

    session_id: str | None
    line: int
    builder: TraceBuilder = field(default_factory=TraceBuilder)
    model: str | None = None
    task: str | None = None
    step: int = 0
    message_ids: dict[str, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    final_text: str | None = None
    final_source: str | None = None
    ended: bool = False
    #: Read from a project session file (sessionId keys) rather than stream-json.
    project: bool = False
    #: None until the first message: whether the file's messages are all sidechain so far.
    sidechain_file: bool | None = None

    def role_of(self, sidechain: bool) -> str:
        """``subagent`` for a sub-agent's turn, unless the file is that sub-agent's own."""
        if self.sidechain_file is None:
            self.sidechain_file = sidechain
        elif not sidechain:
            self.sidechain_file = False
        return "subagent" if sidechain and not self.sidechain_file else "assistant"

    def step_of(self, message_id: str | None) -> int:
        """The step of a model response: one per distinct message id."""
        if message_id is None or message_id not in self.message_ids:
            self.step += 1
            if message_id is not None:
                self.message_ids[message_id] = self.step
            return self.step
        return self.message_ids[message_id]


def _result_text(content: str | list[dict[str, Any]] | None) -> str:
    """The text of a tool result's content (a string or a list of text / image parts)."""
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for part in content:
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            parts.append(part["text"])
        else:
            parts.append(f"[{to_text(part.get('type')) or 'part'}]")
    return "\n".join(parts)


class ClaudeCodeImporter(BaseImporter):
    """Claude Code stream-json output: one case per session."""

    description = (
        "Claude Code `claude -p --output-format stream-json --verbose` JSONL, or a "
        "project session file (~/.claude/projects/<project>/<session>.jsonl)"
    )

    def sniff(self, path: Path) -> bool:
        """The first line is a Claude Code event (system/init, assistant or user message), or
        a project session file's line (``sessionId`` in the first lines)."""
        first = first_json_object(path)
        if first is None:
            return False
        if first.get("type") == "system" and "session_id" in first:
            return True
        if (
            first.get("type") in ("assistant", "user")
            and isinstance(first.get("message"), dict)
            and "session_id" in first
        ):
            return True
        kind = first.get("type")
        return (
            isinstance(kind, str) and kind in _PROJECT_FIRST and ('"sessionId"' in read_head(path))
        )

    def load(self, path: Path) -> ImportResult:
        """Every session of ``path`` as a case; an error for each bad line."""
        return _Reader.read(path)


class _Reader(StreamReader):
    """Reads the lines of one file into sessions."""

    def __init__(self, file: str) -> None:
        super().__init__(file)
        self.session: _Session | None = None

    def line(self, number: int, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if not isinstance(kind, str):
            self.missing(number, "type", "a string")
            return
        if kind in _SKIPPED:
            self.skip(f"'{kind}' events ({_SKIPPED[kind]})", number)
            return
        if kind in _PROJECT_SKIPPED:
            self.skip(f"'{kind}' lines ({_PROJECT_SKIPPED[kind]})", number)
            return
        model = _EVENTS.get(kind)
        if model is None:
            self.skip(f"events of unknown type '{kind}'", number)
            return
        event = validate(model, obj, self.out.errors, self.file, line=number)
        if isinstance(event, _System):
            self.system(event, number)
        elif isinstance(event, _Assistant):
            self.assistant(event, number)
        elif isinstance(event, _User):
            self.user(event, number)
        elif isinstance(event, _Result):
            self.result(event, number)

    def current(self, session_id: str | None, number: int) -> _Session:
        """The open session, or a new one when there is none or the session id changed."""
        session = self.session
        if (
            session is None
            or session.ended
            or (
                session_id is not None
                and session.session_id is not None
                and session_id != session.session_id
            )
        ):
            self.close()
            session = self.session = _Session(session_id, number)
        elif session.session_id is None:
            session.session_id = session_id
        return session

    def system(self, event: _System, number: int) -> None:
        if event.subtype != "init":
            self.skip(f"system events of subtype '{event.subtype}'", number)
            return
        if self.session is not None and self.session.builder.turns:
            self.close()
        session = self.current(event.session_id, number)
        session.model = event.model or session.model
        tools = [t for t in event.tools or [] if isinstance(t, str)]
        session.meta.update(
            {
                k: v
                for k, v in {
                    "cwd": event.cwd,
                    "claude_code_version": event.claude_code_version,
                    "tools": tools or None,
                }.items()
                if v is not None
            }
        )

    def blocks(self, content: str | list[Any], number: int) -> list[tuple[int, Loose]]:
        """The valid, known content blocks of a message (errors and notes for the others)."""
        if isinstance(content, str):
            return [(0, _Text(type="text", text=content))]
        out: list[tuple[int, Loose]] = []
        for index, raw in enumerate(content):
            where = f"message.content[{index}]"
            kind = raw.get("type") if isinstance(raw, dict) else None
            if not isinstance(kind, str):
                self.out.errors.append(
                    InputError(
                        "a content block needs a string 'type'",
                        file=self.file,
                        line=number,
                        field=where,
                    )
                )
                continue
            model = _BLOCKS.get(kind)
            if model is None:
                self.skip(f"content blocks of type '{kind}'", number)
                continue
            block = validate(model, raw, self.out.errors, self.file, line=number, where=where)
            if block is not None:
                out.append((index, block))
        return out

    def assistant(self, event: _Assistant, number: int) -> None:
        session = self.current(event.session_id or event.sessionId, number)
        session.project = session.project or event.sessionId is not None
        session.model = session.model or event.message.model
        step = session.step_of(event.message.id)
        role = session.role_of(bool(event.isSidechain))
        if event.parent_tool_use_id:
            role = "subagent"
        builder = session.builder
        for index, block in self.blocks(event.message.content, number):
            source = f"line {number} content[{index}]"
            if isinstance(block, _Text):
                if not block.text.strip():
                    continue  # Claude Code writes "\n\n" text blocks before thinking
                builder.add(role, block.text, "message", source, step)
            elif isinstance(block, _Thinking):
                builder.add(role, block.thinking, "note", source, step)
            elif isinstance(block, _ToolUse):
                builder.call(block.id, block.name, block.input, source, step, role=role)

    def user(self, event: _User, number: int) -> None:
        if event.isMeta:
            self.skip("user lines marked isMeta (text Claude Code adds)", number)
            return
        session = self.current(event.session_id or event.sessionId, number)
        session.project = session.project or event.sessionId is not None
        sub = (
            bool(event.parent_tool_use_id) or session.role_of(bool(event.isSidechain)) == "subagent"
        )
        builder = session.builder
        for index, block in self.blocks(event.message.content, number):
            source = f"line {number} content[{index}]"
            if isinstance(block, _ToolResult):
                builder.result(
                    block.tool_use_id,
                    _result_text(block.content),
                    source,
                    is_error=bool(block.is_error),
                )
            elif isinstance(block, _Text):
                if block.text.lstrip().startswith(_HARNESS_TEXT):
                    builder.add("user", block.text, "note", source)
                    continue
                if session.task is None and not sub:
                    session.task = block.text
                builder.add("user", block.text, "message", source)

    def result(self, event: _Result, number: int) -> None:
        session = self.current(event.session_id, number)
        meta = {
            "exit_status": event.subtype,
            "cost_usd": event.total_cost_usd,
            "usage": event.usage,
            "duration_ms": event.duration_ms,
            "num_turns": event.num_turns,
        }
        session.meta.update({k: v for k, v in meta.items() if v is not None})
        if event.is_error:
            text = f"run ended with {event.subtype or 'an error'}"
            if event.result:
                text += f": {event.result}"
            session.builder.add("system", text, "error", f"line {number} result")
        elif event.result:
            session.final_text, session.final_source = event.result, f"line {number} result"
        session.ended = True

    def close(self) -> None:
        """Turn the open session into a case."""
        session, self.session = self.session, None
        if session is None or (not session.builder.turns and not session.meta):
            return
        turns = session.builder.finish()
        if session.final_text is not None:
            final = [i for i, t in enumerate(turns) if t.kind == "final_answer"]
            same = final and turns[final[0]].content.strip() == session.final_text.strip()
            if not same:
                for i in final:
                    turns[i] = turns[i].model_copy(update={"kind": "message"})
                session.builder.add(
                    "assistant",
                    session.final_text,
                    "final_answer",
                    session.final_source or "result",
                )
        meta = dict(session.meta, session_id=session.session_id, first_line=session.line)
        if session.project:
            meta["format"] = "claude-code project session"
        diff = session.builder.noted_diff(meta)
        base = session.session_id or f"{Path(self.file).stem}@line{session.line}"
        self.out.cases.append(
            agent_run(
                self.unique_id(base),
                session.builder.turns,
                task=session.task,
                diff=diff,
                agent_model=session.model,
                meta=meta,
                slices={"agent": "claude-code", "exit_status": session.meta.get("exit_status")},
            )
        )
