"""Codex CLI session files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), read by ``codex``.

Codex records every session (interactive or ``codex exec``) as a "rollout": one JSON object
per line, ``{"timestamp", "type", "payload"}`` (``RolloutLine`` of ``codex-rs/protocol``;
``ResponseItem`` in ``codex-rs/protocol/src/models.rs``). Read:

* ``session_meta`` (``id``, ``cwd``, ``cli_version``, ``originator``, ``source``, ``git``): the
  case id is the session id; the rest goes to ``meta``;
* ``turn_context`` (``model``, ``cwd``, ``approval_policy``, ...): the model of the last one
  is the agent model;
* ``response_item``, the conversation as sent to the model:

  - ``message``: ``developer`` / ``system`` messages are ``system`` turns; ``user`` messages
    that Codex writes itself (``<environment_context>``, ``<user_instructions>``,
    ``# AGENTS.md instructions``, ``<permissions instructions>``) are ``system`` turns too,
    other user messages are ``user`` messages; ``assistant`` messages (``output_text``) are
    the agent's messages, the last one its final answer when no tool call follows;
  - ``reasoning``: its readable ``summary`` (and ``content``) texts as a ``note``; encrypted
    reasoning alone is skipped with a note;
  - ``function_call`` (``name``, ``arguments`` JSON string, ``call_id``) and
    ``function_call_output`` (``output``: text, content items, or the older JSON
    ``{"output", "metadata": {"exit_code"}}``); ``custom_tool_call`` (``apply_patch`` with
    its patch as ``input``) and ``custom_tool_call_output``; ``local_shell_call``
    (``action.command``); ``web_search_call`` (``action.query``): tool calls and results.
    The exit code is read from the output (``Exit code: N``, ``Process exited with code N``,
    ``metadata.exit_code``); ``bash -lc CMD`` is shown as ``CMD``;
  - ``ghost_snapshot``, ``compaction`` and unknown items are skipped with a note;

* ``event_msg``, the events the UI showed: ``user_message`` gives the **task** (the user's
  first prompt, without the context Codex adds to the response items); ``token_count``
  (``info.total_token_usage``, the last one) goes to ``meta.usage``; ``turn_aborted`` and
  ``error`` become ``error`` turns; ``task_complete`` sets ``meta.exit_status``. The other
  events repeat the response items (``agent_message``, ``agent_reasoning``, ...) and are
  skipped with a note;
* ``compacted`` (a summary replacing the history) becomes a ``note``.

The rollout form before codex 0.44 (a first line ``{"id", "timestamp", "instructions", "git"}``,
``{"record_type": "state"}`` lines and bare response items) is read the same way.

``step`` counts model responses: a run of consecutive assistant-side items (reasoning, message,
calls). There is no diff in a rollout: ``diff`` is the output of the last ``git diff`` /
``git show`` the agent ran, if any.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.traces import ImportResult
from judge.traces._common import (
    Loose,
    TraceBuilder,
    agent_run,
    maybe_json,
    to_text,
    validate,
)
from judge.traces._stream import StreamReader

#: Line types of the rollout envelope.
ENVELOPE_TYPES = frozenset(
    {"session_meta", "response_item", "turn_context", "event_msg", "compacted"}
)
#: Response item types (the older rollout form writes them bare).
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
    }
)
#: User messages that Codex itself adds to the conversation (context, not the user's words).
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
)
#: Events that repeat a response item (or carry nothing to judge).
_REPEATED_EVENTS = frozenset(
    {
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "task_started",
        "exec_command_begin",
        "exec_command_end",
        "patch_apply_begin",
        "patch_apply_end",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "web_search_begin",
        "web_search_end",
        "plan_update",
    }
)
_EXIT_CODE = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)", re.MULTILINE)
_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash")


def looks_like_session(first: dict[str, Any] | None) -> bool:
    """True when the first line of a file is a Codex rollout line (either form)."""
    if first is None:
        return False
    kind = first.get("type")
    if isinstance(kind, str) and kind in ENVELOPE_TYPES and isinstance(first.get("payload"), dict):
        return True
    # The pre-0.44 form starts with the session's meta object, without a type.
    return (
        kind is None
        and isinstance(first.get("id"), str)
        and "timestamp" in first
        and ("instructions" in first or "git" in first)
    )


class _Message(Loose):
    role: str
    content: list[dict[str, Any]] | str | None = None


class _FunctionCall(Loose):
    name: str
    arguments: Any = None
    call_id: str | None = None


class _CustomCall(Loose):
    name: str
    input: Any = None
    call_id: str | None = None
    status: str | None = None


class _Output(Loose):
    call_id: str | None = None
    output: Any = None


class _SessionMeta(Loose):
    id: str
    cwd: str | None = None
    cli_version: str | None = None
    originator: str | None = None
    source: Any = None
    model_provider: str | None = None


def read_session(path: Path) -> ImportResult:
    """Every session of a rollout file (an ImportResult); an error for each bad line."""
    return _Reader.read(path)


class _Reader(StreamReader):
    """Reads the lines of one rollout file into one case."""

    def __init__(self, file: str) -> None:
        super().__init__(file)
        self.builder = TraceBuilder()
        self.session_id: str | None = None
        self.first_line: int | None = None
        self.meta: dict[str, Any] = {}
        self.model: str | None = None
        self.task: str | None = None
        self.first_user_text: str | None = None
        self.step = 0
        self.in_response = False
        self.exit_status: str | None = None
        self.usage: dict[str, Any] | None = None
        self.skipped_items: Counter[str] = Counter()

    def line(self, number: int, obj: dict[str, Any]) -> None:
        if self.first_line is None:
            self.first_line = number
        kind = obj.get("type")
        if not isinstance(kind, str) and kind is not None:
            self.out.errors.append(
                InputError("must be a string", file=self.file, line=number, field="type")
            )
            return
        payload = obj.get("payload")
        if kind in ENVELOPE_TYPES:
            if not isinstance(payload, dict):
                self.missing(number, "payload", "an object")
                return
            if kind == "session_meta":
                self.session_meta(number, payload)
            elif kind == "turn_context":
                model = payload.get("model")
                self.model = model if isinstance(model, str) and model else self.model
            elif kind == "response_item":
                self.item(number, payload, "payload")
            elif kind == "event_msg":
                self.event(number, payload)
            else:  # compacted
                text = to_text(payload.get("message"))
                self.builder.add(
                    "system",
                    f"[history compacted]\n{text}".rstrip(),
                    "note",
                    f"line {number} compacted",
                )
            return
        if kind is None and "record_type" in obj:
            return  # the pre-0.44 form's {"record_type": "state"} markers carry nothing
        if kind is None and number == self.first_line and isinstance(obj.get("id"), str):
            self.session_meta(number, obj)
            return
        if kind in ITEM_TYPES:
            self.item(number, obj, "")
            return
        if not isinstance(kind, str):
            self.missing(number, "type", "a string")
            return
        self.skip(f"lines of unknown type '{kind}'", number)

    def session_meta(self, number: int, payload: dict[str, Any]) -> None:
        meta = validate(
            _SessionMeta,
            payload,
            self.out.errors,
            self.file,
            line=number,
            where="payload" if "payload" not in payload else "",
        )
        if meta is None:
            return
        if self.session_id is not None and meta.id != self.session_id:
            # A forked or resumed session repeats the meta of the one it came from.
            self.skip("session_meta lines of another session", number)
            return
        self.session_id = meta.id
        git = payload.get("git")
        self.meta.update(
            {
                k: v
                for k, v in {
                    "cwd": meta.cwd,
                    "cli_version": meta.cli_version,
                    "originator": meta.originator,
                    "source": meta.source if isinstance(meta.source, str) else None,
                    "model_provider": meta.model_provider,
                    "git": git if isinstance(git, dict) and git else None,
                }.items()
                if v is not None
            }
        )

    def event(self, number: int, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        source = f"line {number} {kind}"
        if kind == "user_message":
            message = payload.get("message")
            if isinstance(message, str) and message.strip() and self.task is None:
                self.task = message
        elif kind == "token_count":
            info = payload.get("info")
            total = info.get("total_token_usage") if isinstance(info, dict) else None
            if isinstance(total, dict):
                self.usage = total
        elif kind == "turn_aborted":
            self.builder.add(
                "system", f"turn aborted: {to_text(payload.get('reason'))}", "error", source
            )
            self.exit_status = "aborted"
        elif kind in ("error", "stream_error"):
            self.builder.add("system", f"error: {to_text(payload.get('message'))}", "error", source)
        elif kind == "task_complete":
            self.exit_status = self.exit_status or "completed"
        elif isinstance(kind, str) and kind in _REPEATED_EVENTS:
            self.skip(
                f"event_msg '{kind}' events (they repeat the response items or carry "
                "nothing to judge)",
                number,
            )
        else:
            self.skip(f"event_msg '{kind}' events", number)

    def assistant_step(self) -> int:
        """The step of an assistant-side item: a new one after anything else."""
        if not self.in_response:
            self.step += 1
            self.in_response = True
        return self.step

    def item(self, number: int, raw: dict[str, Any], where: str) -> None:
        kind = raw.get("type")
        source = f"line {number} {kind}"
        errors, file = self.out.errors, self.file
        if kind == "message":
            message = validate(_Message, raw, errors, file, line=number, where=where)
            if message is not None:
                self.message(message, source)
        elif kind == "reasoning":
            texts = [
                to_text(p.get("text"))
                for key in ("summary", "content")
                for p in raw.get(key) or []
                if isinstance(p, dict) and p.get("text")
            ]
            if texts:
                self.builder.add(
                    "assistant", "\n".join(texts), "note", source, self.assistant_step()
                )
            else:
                self.skip("reasoning items without readable text (encrypted)", number)
        elif kind == "function_call":
            call = validate(_FunctionCall, raw, errors, file, line=number, where=where)
            if call is not None:
                arguments = _shell_arguments(maybe_json(call.arguments))
                self.builder.call(call.call_id, call.name, arguments, source, self.assistant_step())
        elif kind == "custom_tool_call":
            custom = validate(_CustomCall, raw, errors, file, line=number, where=where)
            if custom is not None:
                text = f"[{custom.name}]\n{to_text(custom.input)}".rstrip()
                self.builder.call(
                    custom.call_id,
                    custom.name,
                    {"input": custom.input},
                    source,
                    self.assistant_step(),
                    content=text,
                )
        elif kind == "local_shell_call":
            action = raw["action"] if isinstance(raw.get("action"), dict) else {}
            call_id = raw.get("call_id") if isinstance(raw.get("call_id"), str) else None
            self.builder.call(
                call_id,
                "local_shell",
                _shell_arguments({"command": action.get("command")}),
                source,
                self.assistant_step(),
            )
        elif kind == "web_search_call":
            action = raw["action"] if isinstance(raw.get("action"), dict) else {}
            self.builder.call(
                None, "web_search", {"query": action.get("query")}, source, self.assistant_step()
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = validate(_Output, raw, errors, file, line=number, where=where)
            if output is not None:
                self.in_response = False
                text, exit_code, failed = _output_text(output.output)
                self.builder.result(
                    output.call_id, text, source, exit_code=exit_code, is_error=failed
                )
        else:
            self.skipped_items[str(kind)] += 1
            self.skip(f"response items of type '{kind}'", number)

    def message(self, message: _Message, source: str) -> None:
        text = _content_text(message.content)
        role = message.role
        if role in ("developer", "system"):
            self.in_response = False
            self.builder.add("system", text, "system", source)
        elif role == "user":
            self.in_response = False
            if text.lstrip().startswith(_CONTEXT_PREFIXES):
                self.builder.add("system", text, "system", source)
                return
            if self.first_user_text is None and text.strip():
                self.first_user_text = text
            self.builder.add("user", text, "message", source)
        elif role == "assistant":
            self.builder.add("assistant", text, "message", source, self.assistant_step())
        else:
            self.in_response = False
            self.builder.add(role, text, "note", source)

    def close(self) -> None:
        """Turn the session into a case (a file with no line gives none)."""
        if self.first_line is None:
            return
        turns = self.builder.finish()
        task = self.task or self.first_user_text
        meta: dict[str, Any] = dict(
            self.meta,
            session_id=self.session_id,
            first_line=self.first_line,
            format="codex session",
        )
        if self.usage:
            meta["usage"] = self.usage
        meta["exit_status"] = self.exit_status or "unfinished"
        diff = self.builder.noted_diff(meta)
        self.out.cases.append(
            agent_run(
                self.session_id or f"{Path(self.file).stem}@line{self.first_line}",
                turns,
                task=task,
                diff=diff,
                agent_model=self.model,
                meta=meta,
                slices={"agent": "codex", "exit_status": meta["exit_status"]},
            )
        )


def _content_text(content: list[dict[str, Any]] | str | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    parts = []
    for part in content:
        if isinstance(part.get("text"), str):
            parts.append(part["text"])
        else:
            parts.append(f"[{to_text(part.get('type')) or 'part'}]")
    return "\n".join(parts)


def _shell_arguments(arguments: Any) -> Any:
    """``{"command": ["bash", "-lc", "pytest -q"]}`` as ``{"command": "pytest -q"}``."""
    if not isinstance(arguments, dict):
        return arguments
    command = arguments.get("command")
    if (
        isinstance(command, list)
        and len(command) == 3
        and command[0] in _SHELLS
        and command[1] in ("-lc", "-c")
        and isinstance(command[2], str)
    ):
        return dict(arguments, command=command[2])
    return arguments


def _output_text(output: Any) -> tuple[str, int | None, bool]:
    """(text, exit code, failed) of a tool output in any of the forms Codex wrote."""
    failed = False
    exit_code: int | None = None
    if isinstance(output, dict):  # {"content", "success"} of some versions
        failed = output.get("success") is False
        output = output.get("content", output)
    if isinstance(output, list):
        output = "\n".join(
            to_text(p.get("text"))
            if isinstance(p, dict) and "text" in p
            else f"[{to_text(p.get('type')) if isinstance(p, dict) else 'part'}]"
            for p in output
        )
    text = to_text(output)
    decoded = maybe_json(text) if text.lstrip().startswith("{") else None
    if isinstance(decoded, dict) and "output" in decoded:
        metadata = decoded.get("metadata")
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        text = to_text(decoded["output"])
    else:
        match = _EXIT_CODE.search(text)
        if match:
            exit_code = int(match.group(1))
    return text, exit_code, failed
