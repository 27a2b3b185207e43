"""OpenAI-style chat messages to trace turns, shared by the chat, SWE-agent and tau-bench importers.

A message is ``{"role", "content", "tool_calls"?, "tool_call_id"?, "name"?}`` with ``content``
a string, null, or a list of parts (``{"type": "text", "text"}``; other part types such as
images are shown as ``[image_url]``). Roles: ``system`` / ``developer`` (system turns),
``user``, ``assistant`` (its text is a message; each of its ``tool_calls`` — or the legacy
``function_call`` — is a tool call), ``tool`` (the result of the call named by
``tool_call_id``) and the legacy ``function``. Other roles become ``note`` turns.
"""

from __future__ import annotations

from typing import Any

from judge.errors import InputError
from judge.traces._common import Loose, TraceBuilder, agent_run, to_text, validate
from judge.types import Case


class ChatFunction(Loose):
    """``{"name", "arguments"}`` of a tool call (arguments usually a JSON string)."""

    name: str
    arguments: Any = None


class ChatToolCall(Loose):
    """One entry of an assistant message's ``tool_calls``."""

    id: str | None = None
    function: ChatFunction


class ChatMessage(Loose):
    """One chat message, validated on the fields the importers read."""

    role: str
    content: str | list[Any] | None = None
    tool_calls: list[ChatToolCall] | None = None
    function_call: ChatFunction | None = None
    tool_call_id: str | None = None
    #: SWE-agent's history names the calls a tool message answers in a list.
    tool_call_ids: list[str] | None = None
    name: str | None = None


def content_text(content: str | list[Any] | None) -> str:
    """The text of a message's content: a string, or its text parts joined by new lines."""
    if content is None or isinstance(content, str):
        return content or ""
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, dict):
            parts.append(f"[{to_text(part.get('type')) or 'part'}]")
        else:
            parts.append(to_text(part))
    return "\n".join(parts)


class ChatConverter:
    """Adds chat messages to a :class:`TraceBuilder`, one message at a time.

    ``task`` is the text of the first user message. Subclasses change how an assistant's or a
    user's plain text is read (text-based agents put commands in the assistant's text and
    command output in the user's).
    """

    #: The role a user's turns get (tau-bench's simulated user says so).
    user_role = "user"

    def __init__(
        self, builder: TraceBuilder, errors: list[InputError], file: str, *, line: int | None = None
    ) -> None:
        self.builder, self.errors, self.file, self.line = builder, errors, file, line
        self.task: str | None = None
        self.step = 0
        self.other_roles: set[str] = set()
        self.function_call: str | None = None

    def add_all(self, messages: list[Any], prefix: str) -> None:
        """Add every message of ``messages``; ``prefix`` is their JSON path (``messages``)."""
        for index, raw in enumerate(messages):
            self.add(raw, f"{prefix}[{index}]")

    def source(self, where: str) -> str:
        """Where a turn came from: the JSON path, after the line for JSONL files."""
        return f"line {self.line} {where}" if self.line is not None else where

    def add(self, raw: Any, where: str) -> None:
        """Add one message; an InputError (and nothing else) when it is malformed."""
        message = validate(ChatMessage, raw, self.errors, self.file, line=self.line, where=where)
        if message is None:
            return
        text = content_text(message.content)
        role = message.role
        source = self.source(where)
        if role in ("system", "developer"):
            self.builder.add("system", text, "system", source)
        elif role == "user":
            self.user_text(text, source)
        elif role == "assistant":
            self.step += 1
            if text.strip():
                self.assistant_text(text, source)
            for j, call in enumerate(message.tool_calls or []):
                self.builder.call(
                    call.id,
                    call.function.name,
                    call.function.arguments,
                    f"{source}.tool_calls[{j}]",
                    self.step,
                )
            if message.function_call is not None:
                # The legacy function_call has no id: its result is the next function message.
                self.function_call = f"function_call-{self.step}"
                self.builder.call(
                    self.function_call,
                    message.function_call.name,
                    message.function_call.arguments,
                    f"{source}.function_call",
                    self.step,
                )
        elif role in ("tool", "function"):
            self.tool_text(message, text, source)
        else:
            self.other_roles.add(role)
            self.builder.add(role, text, "note", source)

    def user_text(self, text: str, source: str) -> None:
        """A user's text: the first one is the task."""
        if self.task is None:
            self.task = text
        self.builder.add(self.user_role, text, "message", source)

    def tool_text(self, message: ChatMessage, text: str, source: str) -> None:
        """A tool's output: the result of the call named by ``tool_call_id``."""
        call_id = message.tool_call_id
        if call_id is None and message.tool_call_ids:
            call_id = message.tool_call_ids[0]
        if call_id is None and message.role == "function":
            call_id, self.function_call = self.function_call, None
        self.builder.result(call_id, text, source, tool=message.name)

    def assistant_text(self, text: str, source: str) -> None:
        """An assistant's text: a message."""
        self.builder.add("assistant", text, "message", source, self.step)

    def role_notes(self, where: str) -> list[str]:
        """A note for each role kept as ``note`` turns, prefixed with ``where``."""
        return [
            f"{where}: messages with role {r!r} kept as notes" for r in sorted(self.other_roles)
        ]

    def case(
        self,
        case_id: str,
        *,
        diff: str | None,
        model: str | None,
        meta: dict[str, Any],
        slices: dict[str, Any] | None = None,
    ) -> Case:
        """The agent run of the messages added: its task is the first user message's text
        (:func:`~judge.traces._common.agent_run`), its trace the builder's turns."""
        return agent_run(
            case_id,
            self.builder.turns,
            task=self.task,
            diff=diff,
            agent_model=model,
            meta=meta,
            slices=slices,
        )
