"""Failed runs labelled step by step: the Who&When benchmark and AgentRx's tau-bench retail runs.

Both label a run's critical step as an index into its list of messages, so these importers keep
**one turn per message**, with the message's 0-based index as the turn's ``step``: step ``i`` of
the case is message ``i`` of the file, whatever its role (an assistant message that calls tools
is one ``tool_call`` turn holding its text and every call). The label goes to
:attr:`ImportResult.gold` (``fail``: every run here failed, or the reward for AgentRx's full set)
and the critical step to :attr:`ImportResult.critical`.

* ``who-and-when``: a folder of Who&When files (``1.json`` ... ``126.json``) or one file
  ``{"question", "history": [{"content", "role", "name"}], "mistake_step" (a string holding a
  0-based index into history), "mistake_agent", "mistake_reason", "ground_truth", "level",
  "question_ID", "system_prompt"}``. The speaker of a message is its ``name``; the code runner
  (``Computer_terminal``) speaks tool results. The right answer (``ground_truth``) and the
  mistake's reason stay in ``meta``: a judge never sees them.
* ``agentrx-tau``: AgentRx's ``tau_dataset_failed.json`` or ``tau_dataset_full.json`` (tau-bench
  results) with ``tau_ground_truth.json`` beside it; a run's ``task_id`` is the ground truth's
  ``trajectory_id``, whose ``step_number`` is **1-based** over the messages (the system prompt is
  step 1): stored 0-based. The critical step is the root cause's failure; its category and the
  failed agent go to ``slices``; a root cause in the simulated user's turn is marked
  ``slices.critical_owner = "user"`` (not a decision the agent controlled).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.traces import BaseImporter, CriticalStep, ImportResult
from judge.traces._chat import ChatMessage, content_text
from judge.traces._common import (
    AGENTRX_GROUND_TRUTH,
    Loose,
    read_head,
    read_json,
    render_call,
    to_text,
    validate,
)
from judge.traces.tau_bench import ResultsImporter, looks_like_results, skip_duplicate
from judge.types import Case, TraceTurn

WHO_AND_WHEN_SOURCE = "Who&When (ag2ai/Agents_Failure_Attribution), Algorithm-Generated, MIT"
AGENTRX_SOURCE = "AgentRx (microsoft/AgentRx) tau-bench retail, MIT"
#: The code runner of AG2's multi-agent systems: its messages are tool output.
_TERMINAL = "computer_terminal"
_EXIT = re.compile(r"exitcode:\s*(-?\d+)")


def _turn(index: int, role: str, content: str, kind: Any, source: str) -> TraceTurn:
    return TraceTurn(
        id=f"turn-{index + 1}", role=role, content=content, step=index, kind=kind, source=source
    )


# --- Who&When ---------------------------------------------------------------------------------


class _WhoMessage(Loose):
    content: Any = ""
    role: str = ""
    name: str | None = None


class _WhoRun(Loose):
    question: str
    history: list[_WhoMessage]
    mistake_step: int | str | None = None
    mistake_agent: str | None = None
    mistake_reason: str | None = None
    ground_truth: Any = None
    level: int | str | None = None
    question_ID: str | None = None  # noqa: N815 (the file's own spelling)
    is_correct: bool | None = None


def _who_kind(name: str, text: str) -> str:
    if name.lower() != _TERMINAL:
        return "message"
    match = _EXIT.search(text)
    return "error" if match and match.group(1) != "0" else "tool_result"


def _who_case(path: Path, out: ImportResult) -> None:
    data = read_json(path)
    if isinstance(data, InputError):
        out.errors.append(data)
        return
    run = validate(_WhoRun, data, out.errors, str(path))
    if run is None:
        return
    if not run.history:
        out.errors.append(
            InputError(
                "the run has no messages (no steps to diagnose)", file=str(path), field="history"
            )
        )
        return
    turns = []
    for i, message in enumerate(run.history):
        text = to_text(message.content)
        speaker = message.name or message.role or "unknown"
        turns.append(_turn(i, speaker, text, _who_kind(speaker, text), f"history[{i}]"))
    case_id = f"who-and-when/{path.stem}"
    slices: dict[str, Any] = {"benchmark": "who-and-when", "level": run.level}
    meta: dict[str, Any] = {
        "question_id": run.question_ID,
        "ground_truth": to_text(run.ground_truth),
        "mistake_reason": run.mistake_reason,
        "source_file": path.name,
    }
    out.cases.append(
        Case(id=case_id, kind="agent_run", task=run.question, trace=turns, slices=slices, meta=meta)
    )
    if run.is_correct is not False:
        return
    out.gold[case_id] = "fail"
    step = _index(run.mistake_step, len(turns), path, "mistake_step", out)
    if step is not None:
        out.critical[case_id] = CriticalStep(step=step, agent=run.mistake_agent)


def _index(
    value: Any, n: int, path: Path, field: str, out: ImportResult, base: int = 0
) -> int | None:
    """A step index from the file (a string or an int, ``base``-based) as a 0-based index."""
    try:
        step = int(str(value).strip()) - base
    except ValueError:
        out.errors.append(InputError(f"not a step index: {value!r}", file=str(path), field=field))
        return None
    if not 0 <= step < n:
        out.errors.append(
            InputError(
                f"step {step + base} is out of range: the run has {n} messages",
                file=str(path),
                field=field,
            )
        )
        return None
    return step


class WhoAndWhenImporter(BaseImporter):
    """Who&When failed multi-agent runs (a folder of N.json files, or one of them)."""

    description = "Who&When failure-attribution runs (a folder of N.json, or one file)"

    def sniff(self, path: Path) -> bool:
        """A JSON object with ``history`` and ``mistake_step``, or a folder of them."""
        if path.is_dir():
            first = next(iter(sorted(path.glob("*.json"))), None)
            return first is not None and self.sniff(first)
        head = read_head(path)
        return (
            head.lstrip().startswith("{")
            and '"history"' in head
            and ('"mistake_step"' in head or '"mistake_agent"' in head)
        )

    def load(self, path: Path) -> ImportResult:
        out = ImportResult()
        files = sorted(path.glob("*.json"), key=_numeric) if path.is_dir() else [path]
        if not files:
            out.errors.append(InputError("the folder holds no .json run", file=str(path)))
        for file in files:
            _who_case(file, out)
        return out


def _numeric(path: Path) -> tuple[int, str]:
    return (int(path.stem), "") if path.stem.isdigit() else (1 << 30, path.stem)


# --- AgentRx tau-bench retail -----------------------------------------------------------------


class _Failure(Loose):
    failure_id: int
    step_number: int
    failure_category: str | None = None
    failed_agent: str | None = None
    step_reason: str | None = None


class _RootCause(Loose):
    failure_id: int
    reason_for_root_cause: str | None = None


class _GroundTruth(Loose):
    trajectory_id: int | str
    failures: list[_Failure] = []
    root_cause: _RootCause | None = None
    failure_summary: str | None = None


class _TauRun(Loose):
    task_id: int | str
    reward: float | None = None
    traj: list[Any] = []
    trial: int | None = None
    info: dict[str, Any] = {}


def normalise_category(text: str) -> str:
    """ "Instruction/Plan Adherence Failure" and "instruction adherence failure" alike:
    lower case, words only."""
    return " ".join(re.findall(r"[a-z]+", text.lower()))


def _message_text(message: ChatMessage) -> tuple[str, str]:
    """A chat message as one turn's (text, kind): its text and every tool call it makes."""
    text = content_text(message.content)
    calls = [render_call(c.function.name, c.function.arguments) for c in message.tool_calls or []]
    if message.role in ("system", "developer"):
        return text, "system"
    if message.role == "tool":
        return text, "tool_result"
    if calls:
        return "\n".join([t for t in (text.strip(),) if t] + calls), "tool_call"
    return text, "message"


def _ground_truth(path: Path, out: ImportResult) -> dict[str, _GroundTruth]:
    file = path.parent / AGENTRX_GROUND_TRUTH
    if not file.is_file():
        out.notes.append(f"{path}: no {AGENTRX_GROUND_TRUTH} beside it: runs have no critical step")
        return {}
    data = read_json(file)
    if isinstance(data, InputError):
        out.errors.append(data)
        return {}
    if not isinstance(data, list):
        out.errors.append(InputError("ground truth must be a JSON list", file=str(file)))
        return {}
    found: dict[str, _GroundTruth] = {}
    for i, raw in enumerate(data):
        truth = validate(_GroundTruth, raw, out.errors, str(file), where=f"[{i}]")
        if truth is not None:
            found[str(truth.trajectory_id)] = truth
    return found


def _agentrx_case(
    path: Path, index: int, run: _TauRun, truths: dict[str, _GroundTruth], out: ImportResult
) -> None:
    turns = []
    for i, raw in enumerate(run.traj):
        message = validate(ChatMessage, raw, out.errors, str(path), where=f"[{index}].traj[{i}]")
        if message is None:
            return
        text, kind = _message_text(message)
        role = "user(simulated)" if message.role == "user" else message.role
        turns.append(_turn(i, role, text, kind, f"[{index}].traj[{i}]"))
    if not turns:
        out.errors.append(
            InputError(
                "the run has no messages (no steps to diagnose)",
                file=str(path),
                field=f"[{index}].traj",
            )
        )
        return
    case_id = f"agentrx-tau-retail/task{run.task_id}"
    task_info = run.info.get("task")
    instruction = task_info.get("instruction") if isinstance(task_info, dict) else None
    if not isinstance(instruction, str) or not instruction.strip():
        instruction = None
    task = (
        "Customer-service agent conversation in the tau-bench retail domain. The agent must "
        "follow the policy (the system turn) and correctly serve the simulated user."
        + (f"\nSimulated user's goal (hidden from the agent): {instruction}" if instruction else "")
    )
    slices: dict[str, Any] = {"benchmark": "agentrx-tau-retail", "reward": run.reward}
    meta: dict[str, Any] = {"task_id": run.task_id, "trial": run.trial, "index": index}
    truth = truths.get(str(run.task_id))
    label = None if run.reward is None else ("pass" if run.reward >= 1 - 1e-9 else "fail")
    critical: CriticalStep | None = None
    if truth is not None and truth.root_cause is not None:
        root = next(
            (f for f in truth.failures if f.failure_id == truth.root_cause.failure_id), None
        )
        if root is None:
            out.errors.append(
                InputError(
                    f"root cause {truth.root_cause.failure_id} is none of its failures",
                    file=str(path.parent / AGENTRX_GROUND_TRUTH),
                    field=f"trajectory {truth.trajectory_id}.root_cause",
                )
            )
        else:
            step = _index(root.step_number, len(turns), path, f"[{index}] step_number", out, base=1)
            if step is not None:
                agent = root.failed_agent
                critical = CriticalStep(step=step, agent=agent)
                category = normalise_category(root.failure_category or "")
                slices["root_cause_category"] = category or None
                slices["critical_owner"] = "user" if (agent or "").lower() == "user" else "agent"
                meta["root_cause"] = {
                    "reason": truth.root_cause.reason_for_root_cause,
                    "step_reason": root.step_reason,
                    "summary": truth.failure_summary,
                }
    out.cases.append(
        Case(id=case_id, kind="agent_run", task=task, trace=turns, slices=slices, meta=meta)
    )
    if label is not None:
        out.gold[case_id] = label
    if critical is not None and label == "fail":
        out.critical[case_id] = critical


class AgentRxTauImporter(ResultsImporter):
    """AgentRx's tau-bench retail runs, with the critical steps of its ground truth."""

    description = "AgentRx tau-bench retail runs (tau_dataset_*.json + tau_ground_truth.json)"

    def sniff(self, path: Path) -> bool:
        """A tau-bench result list with AgentRx's ground truth beside it."""
        if path.is_dir() or not (path.parent / AGENTRX_GROUND_TRUTH).is_file():
            return False
        return looks_like_results(path)

    def read(self, path: Path, data: list[Any], out: ImportResult) -> None:
        truths = _ground_truth(path, out)
        seen: set[str] = set()
        for index, raw in enumerate(data):
            run = validate(_TauRun, raw, out.errors, str(path), where=f"[{index}]")
            if run is None:
                continue
            if str(run.task_id) in seen:
                skip_duplicate(out, path, index, f"task {run.task_id} appears twice")
                continue
            seen.add(str(run.task_id))
            _agentrx_case(path, index, run, truths, out)
