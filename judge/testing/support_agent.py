"""The support agent's run the platform test servers are seeded with, told once for every
platform: the agent answers a question, at once or after one tool call (which may fail), on a
fixed timeline. :mod:`judge.testing.mlflow` and :mod:`judge.testing.phoenix` write it as their
platform's spans."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

#: The agent's system prompt.
SYSTEM = {"role": "system", "content": "You are a helpful support agent. Use tools."}
#: Milliseconds the model takes to ask for the tool (or, without one, to answer), the tool takes
#: to run, and the model takes to answer after it.
ASK_MS, TOOL_MS, ANSWER_MS = 800, 300, 900
#: The exception a failed tool call raised.
TOOL_ERROR = "TimeoutError"


@dataclass(frozen=True)
class ModelCall:
    """A span below the agent's: the model reads ``messages`` and writes ``reply``."""

    begin: datetime
    end: datetime
    messages: list[dict[str, Any]]
    reply: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A span below the agent's: the tool runs the call the model made (OpenAI's shape: ``id``,
    ``function.name``, ``function.arguments`` as JSON)."""

    begin: datetime
    end: datetime
    call: dict[str, Any]


@dataclass(frozen=True)
class SupportRun:
    """The user's message, the agent's answer, and the steps below the agent's span, in order."""

    user: dict[str, Any]
    final: dict[str, Any]
    steps: list[ModelCall | ToolCall]

    @property
    def begin(self) -> datetime:
        """When the run started."""
        return self.steps[0].begin

    @property
    def end(self) -> datetime:
        """When the last step ended."""
        return self.steps[-1].end


def support_run(
    question: str,
    answer: str,
    *,
    tool: str | None = None,
    arguments: dict[str, Any] | None = None,
    told: str | None = None,
    error: str | None = None,
    start: datetime | None = None,
) -> SupportRun:
    """The model asks for ``tool`` with ``arguments``, the tool returns ``told`` (or fails with
    ``error``: the model is told ``ERROR: error``), the model answers; without ``tool``, the
    model answers at once. ``start``: when it began (default five minutes ago)."""
    clock = start or datetime.now(UTC) - timedelta(minutes=5)

    def timed(ms: int) -> tuple[datetime, datetime]:
        nonlocal clock
        begin, clock = clock, clock + timedelta(milliseconds=ms)
        return begin, clock

    user = {"role": "user", "content": question}
    final = {"role": "assistant", "content": answer}
    if tool is None:
        return SupportRun(user, final, [ModelCall(*timed(ASK_MS), [SYSTEM, user], final)])
    call = {
        "id": "call_" + secrets.token_hex(4),
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(arguments or {})},
    }
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    result = {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": told if error is None else f"ERROR: {error}",
    }
    steps: list[ModelCall | ToolCall] = [ModelCall(*timed(ASK_MS), [SYSTEM, user], asked)]
    steps.append(ToolCall(*timed(TOOL_MS), call))
    steps.append(ModelCall(*timed(ANSWER_MS), [SYSTEM, user, asked, result], final))
    return SupportRun(user, final, steps)
