"""``swe-agent``: mini-swe-agent and SWE-agent trajectories (``.traj.json`` / ``.traj``).

Two layouts, told apart by their keys:

**mini-swe-agent** (``trajectory_format`` ``mini-swe-agent-1`` for v1, ``-1.1`` for v2):
``{"info": {"exit_status", "submission", "model_stats": {"instance_cost", "api_calls"},
"config": {"model": {"model_name"}, ...}, "mini_version"}, "messages": [...],
"trajectory_format", "instance_id"?}``. v1 messages are text only: the assistant's text holds
one ````` ```bash ````` (v2 text mode: ````` ```mswea_bash_command `````) block, which makes it a
tool call, and the next user message holds its output as ``<returncode>N</returncode>
<output>...</output>`` (a result classified with that command and exit code; a timeout is an
error); a user message with no command before it is a format error. v2 with tool calling has
``tool_calls`` and ``tool`` messages, read like OpenAI chat (:mod:`judge.traces._chat`); v2's
``exit`` message becomes a note. The task is the first user message, cut to the
``<pr_description>`` / ``<issue>`` inside it when there is one.

**SWE-agent** (1.x): ``{"trajectory": [{"thought", "action", "observation", "response",
"execution_time", ...}], "history": [...], "info": {"submission", "exit_status",
"model_stats", "swe_agent_version"}, "replay_config": "<JSON string>", "environment"}``. Each
trajectory step is a tool call (its response, or thought and action) and its observation. The
system prompt and the task come from ``history`` (demonstrations, ``is_demo``, are skipped);
the task is ``replay_config.problem_statement.text`` when present, else the first non-demo user
message (cut to ``<issue>`` / ``<pr_description>``). The model is
``replay_config.agent.model.name``. With an empty ``trajectory``, ``history`` is read as chat.

Both: one case per file; ``diff`` is ``info.submission`` (a non-string submission goes to
``meta.submission``); when the run was submitted, the agent's last turn (its ``submit``
action) is the final answer; ``exit_status`` goes to ``slices`` and ``meta``, cost and call
counts (``model_stats``) to ``meta``. The case id is ``instance_id`` (mini-swe-agent SWE-bench
runs), ``problem_statement.id`` (SWE-agent), else the file name without ``.traj.json``.
Unsure: mini-swe-agent v2 messages from the OpenAI *responses* API have no ``role`` and
are reported as errors (not seen in a real file).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.traces import BaseImporter, ImportResult
from judge.traces._chat import ChatConverter, ChatMessage
from judge.traces._common import Loose, TraceBuilder, inner_tag, read_head, read_json, validate

_TASK_TAGS = ("pr_description", "issue", "task", "problem_statement")
_ACTION = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n?```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


class _MiniInfo(Loose):
    exit_status: str | None = None
    submission: str | None = None
    model_stats: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    mini_version: str | None = None


class _Mini(Loose):
    info: dict[str, Any] = {}
    messages: list[Any]
    trajectory_format: str | None = None
    instance_id: str | None = None


class _Step(Loose):
    action: str = ""
    observation: str = ""
    response: str = ""
    thought: str = ""


class _SweInfo(Loose):
    exit_status: str | None = None
    submission: str | dict[str, Any] | None = None
    model_stats: dict[str, Any] | None = None
    swe_agent_version: str | None = None


class _Swe(Loose):
    trajectory: list[Any]
    history: list[Any] = []
    info: dict[str, Any] = {}
    replay_config: str | dict[str, Any] | None = None


def _task_of(text: str) -> str:
    """The issue inside an instance template, or the whole text."""
    inner = inner_tag(text, _TASK_TAGS)
    if inner is None:
        return text
    return re.sub(r"^Consider the following PR description:\s*", "", inner)


class _MiniConverter(ChatConverter):
    """mini-swe-agent v1 text actions: commands in the assistant's text, output in the user's."""

    pending: str | None = None

    def assistant_text(self, text: str, source: str) -> None:
        actions = _ACTION.findall(text)
        if not actions:
            self.pending = None
            super().assistant_text(text, source)
            return
        self.pending = f"action-{self.step}"
        self.builder.call(
            self.pending, "bash", {"command": actions[0]}, source, self.step, content=text
        )

    def user_text(self, text: str, source: str) -> None:
        if self.task is None:
            self.task = _task_of(text)
            self.builder.add("user", text, "message", source)
            return
        code = _RETURNCODE.search(text)
        if self.pending is not None:
            timed_out = re.search(r"timed out|timeout", text, re.IGNORECASE) is not None
            self.builder.result(
                self.pending,
                text,
                source,
                role="user",
                exit_code=int(code.group(1)) if code else None,
                is_error=timed_out and code is None,
            )
            self.pending = None
        elif code is not None:
            self.builder.result(None, text, source, role="user", exit_code=int(code.group(1)))
        else:
            # The environment answering a reply without exactly one command: a format error.
            self.builder.add("user", text, "error", source)

    def tool_text(self, message: ChatMessage, text: str, source: str) -> None:
        code = _RETURNCODE.search(text)
        self.builder.result(
            message.tool_call_id,
            text,
            source,
            tool=message.name,
            exit_code=int(code.group(1)) if code else None,
        )


class SweAgentImporter(BaseImporter):
    """mini-swe-agent / SWE-agent trajectory files: one case per file."""

    description = "mini-swe-agent / SWE-agent trajectories (.traj.json, .traj)"

    def sniff(self, path: Path) -> bool:
        """A JSON object with the keys of one of the two trajectory layouts."""
        head = read_head(path)
        if not head.lstrip().startswith("{") or '"resourceSpans"' in head:
            return False
        mini = '"messages"' in head and (
            '"mini_version"' in head or '"submission"' in head or '"trajectory_format"' in head
        )
        swe = '"trajectory"' in head and ('"observation"' in head or '"history"' in head)
        return mini or swe

    def load(self, path: Path) -> ImportResult:
        """The run of ``path`` as one case, or the errors that prevent it."""
        out = ImportResult()
        data = read_json(path)
        if isinstance(data, InputError):
            out.errors.append(data)
        elif not isinstance(data, dict):
            out.errors.append(InputError("a trajectory file holds one JSON object", file=str(path)))
        elif "trajectory" in data:
            _load_swe_agent(out, path, data)
        else:
            _load_mini(out, path, data)
        return out


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".traj.json", ".traj", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _dig(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...`` through dicts, or None."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _load_mini(out: ImportResult, path: Path, data: dict[str, Any]) -> None:
    file = str(path)
    run = validate(_Mini, data, out.errors, file)
    if run is None:
        return
    builder = TraceBuilder()
    converter = _MiniConverter(builder, out.errors, file)
    converter.add_all(run.messages, "messages")
    # A bad info block is reported, and the trace is still imported.
    info = validate(_MiniInfo, run.info, out.errors, file, where="info") or _MiniInfo()
    submitted = "submit" in (info.exit_status or "").lower()
    builder.finish(last_assistant_is_final=submitted)
    model = _dig(info.config, "model", "model_name")
    meta: dict[str, Any] = {
        "exit_status": info.exit_status,
        "model_stats": info.model_stats,
        "mini_version": info.mini_version,
        "trajectory_format": run.trajectory_format,
    }
    _add(
        out,
        path,
        run.instance_id or _stem(path),
        converter,
        diff=info.submission,
        model=model if isinstance(model, str) else None,
        agent="mini-swe-agent",
        meta=meta,
    )


def _load_swe_agent(out: ImportResult, path: Path, data: dict[str, Any]) -> None:
    file = str(path)
    run = validate(_Swe, data, out.errors, file)
    if run is None:
        return
    config: Any = run.replay_config
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except (json.JSONDecodeError, RecursionError):
            out.errors.append(InputError("not valid JSON", file=file, field="replay_config"))
            config = None
    builder = TraceBuilder()
    converter = ChatConverter(builder, out.errors, file)
    if run.trajectory:
        _history_preamble(converter, run.history)
        for index, raw in enumerate(run.trajectory):
            step = validate(_Step, raw, out.errors, file, where=f"trajectory[{index}]")
            if step is None:
                continue
            call_id = f"step-{index}"
            text = step.response or "\n\n".join(p for p in (step.thought, step.action) if p)
            builder.call(
                call_id,
                "swe-agent",
                {"command": step.action},
                f"trajectory[{index}]",
                index + 1,
                content=text,
            )
            builder.result(call_id, step.observation, f"trajectory[{index}].observation")
    else:
        for index, raw in enumerate(run.history):
            if not (isinstance(raw, dict) and raw.get("is_demo")):
                converter.add(raw, f"history[{index}]")
    statement = _dig(config, "problem_statement", "text")
    if isinstance(statement, str) and statement:
        converter.task = statement
    elif converter.task is not None:
        converter.task = _task_of(converter.task)
    info = validate(_SweInfo, run.info, out.errors, file, where="info") or _SweInfo()
    submitted = "submit" in (info.exit_status or "").lower()
    builder.finish(last_assistant_is_final=submitted)
    model = _dig(config, "agent", "model", "name")
    problem_id = _dig(config, "problem_statement", "id")
    meta: dict[str, Any] = {
        "exit_status": info.exit_status,
        "model_stats": info.model_stats,
        "swe_agent_version": info.swe_agent_version,
    }
    diff = info.submission if isinstance(info.submission, str) else None
    if isinstance(info.submission, dict):
        meta["submission"] = info.submission
    _add(
        out,
        path,
        problem_id if isinstance(problem_id, str) else _stem(path),
        converter,
        diff=diff,
        model=model if isinstance(model, str) else None,
        agent="swe-agent",
        meta=meta,
    )


def _history_preamble(converter: ChatConverter, history: list[Any]) -> None:
    """The system prompt and the task message of a SWE-agent history (demos skipped)."""
    for index, raw in enumerate(history):
        if not isinstance(raw, dict) or raw.get("is_demo"):
            continue
        if raw.get("role") == "system" or (raw.get("role") == "user" and converter.task is None):
            converter.add(raw, f"history[{index}]")
        if converter.task is not None:
            return


def _add(
    out: ImportResult,
    path: Path,
    case_id: str,
    converter: ChatConverter,
    *,
    diff: str | None,
    model: str | None,
    agent: str,
    meta: dict[str, Any],
) -> None:
    out.notes.extend(converter.role_notes(str(path)))
    meta = {k: v for k, v in meta.items() if v is not None}
    slices = {"agent": agent, "exit_status": meta.get("exit_status")}
    out.cases.append(
        converter.case(case_id, diff=diff or None, model=model, meta=meta, slices=slices)
    )
