"""``tau-bench``: tau-bench result files (sierra-research/tau-bench ``run.py`` checkpoints and
``historical_trajectories/*.json``).

The file is a JSON list of results ``{"task_id", "reward", "info": {"task": {"user_id",
"instruction", "actions", ...}, "reward_info", "user_cost", "source"}, "traj": [messages],
"trial"}``; ``traj`` holds litellm / OpenAI chat messages: the policy as ``system``, the
simulated user as ``user``, the agent as ``assistant`` (with ``tool_calls``) and tool outputs
as ``tool`` (with ``tool_call_id`` and ``name``).

Mapping: one Case per (task_id, trial), id ``<file stem>/task<task_id>/trial<trial>`` (trial
counted per task in file order when absent). The simulated user's turns get the role
``user(simulated)``. The task is written like the project's tau-bench gold set: the domain,
then the simulated user's goal from ``info.task.instruction`` (which the agent never saw);
without an instruction it is the first user message. The ground-truth ``actions`` and the
``reward`` are never put in the task or the trace: the reward goes to ``slices.reward`` and
``meta.reward``, and to :attr:`ImportResult.gold` as ``pass`` (reward 1) / ``fail``. A
result whose ``info`` has an ``error`` (tau-bench records a crashed run that way, with an
empty ``traj`` and reward 0) is an infrastructure failure: ``slices.infra_error`` is true, the
message is in ``meta.error``, and it gets no gold label.

Heuristics, stated: the domain comes from the policy's title (``# Airline Agent Policy`` /
``# Retail agent policy``) or the file name; the agent model is not in the results, so it is
read from the file name when it has tau-bench's checkpoint form
(``<strategy>-<model>-<temperature>_range_...``) or the historical form (``<model>-<domain>.json``)
and recorded as ``meta.agent_model_source = "file name"``.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from judge.errors import InputError
from judge.traces import BaseImporter, ImportResult
from judge.traces._chat import ChatConverter
from judge.traces._common import (
    AGENTRX_GROUND_TRUTH,
    Loose,
    TraceBuilder,
    agent_run,
    read_head,
    read_json,
    validate,
)

_DOMAINS = ("airline", "retail")
_CHECKPOINT_NAME = re.compile(
    r"^(?:tool-calling|act|react|few-shot)-(?P<model>.+?)-\d+(?:\.\d+)?_range_"
)
_HISTORICAL_NAME = re.compile(r"^(?P<model>.+)-(?:airline|retail)$")


class _Result(Loose):
    task_id: int | str
    reward: float | None = None
    info: dict[str, Any] = {}
    traj: list[Any] = []
    trial: int | None = None


class _SimulatedUser(ChatConverter):
    """tau-bench's user is a simulator: its turns say so."""

    user_role = "user(simulated)"


def looks_like_results(path: Path) -> bool:
    """A JSON list whose records have ``task_id`` and ``traj`` (tau-bench's result files)."""
    head = read_head(path)
    return head.lstrip().startswith("[") and '"traj"' in head and '"task_id"' in head


def skip_duplicate(out: ImportResult, path: Path, index: int, what: str) -> None:
    """Record that result ``index`` of ``path`` repeats one already read (``what`` says how)
    and is skipped."""
    out.errors.append(InputError(f"{what}; skipped", file=str(path), field=f"[{index}]"))


def read_results(path: Path, out: ImportResult) -> list[Any] | None:
    """The results of a tau-bench file, or None with the reason in ``out.errors``."""
    data = read_json(path)
    if isinstance(data, InputError):
        out.errors.append(data)
        return None
    if not isinstance(data, list):
        out.errors.append(InputError("a tau-bench result file holds a JSON list", file=str(path)))
        return None
    return data


class ResultsImporter(BaseImporter):
    """An importer of a tau-bench result list: :meth:`read` makes the cases of its results."""

    def load(self, path: Path) -> ImportResult:
        """Every result of ``path`` as a case; an error for each bad result or message."""
        out = ImportResult()
        data = read_results(path, out)
        if data is not None:
            self.read(path, data, out)
        return out

    def read(self, path: Path, data: list[Any], out: ImportResult) -> None:
        """Add the cases (and errors) of the results ``data`` of ``path`` to ``out``."""
        raise NotImplementedError


class TauBenchImporter(ResultsImporter):
    """tau-bench results: one case per (task, trial)."""

    description = "tau-bench results / historical trajectories (JSON list with traj)"

    def sniff(self, path: Path) -> bool:
        """A JSON list whose records have ``task_id`` and ``traj``."""
        if (path.parent / AGENTRX_GROUND_TRUTH).is_file():
            return False  # AgentRx's runs, with their critical steps: the agentrx-tau importer
        return looks_like_results(path)

    def read(self, path: Path, data: list[Any], out: ImportResult) -> None:
        model = _model_from_name(path.stem)
        trials: Counter[str] = Counter()
        for index, raw in enumerate(data):
            result = validate(_Result, raw, out.errors, str(path), where=f"[{index}]")
            if result is None:
                continue
            trial = result.trial if result.trial is not None else trials[str(result.task_id)]
            trials[str(result.task_id)] += 1
            case_id = f"{path.stem}/task{result.task_id}/trial{trial}"
            if any(c.id == case_id for c in out.cases):
                skip_duplicate(
                    out, path, index, f"duplicate (task_id, trial) = ({result.task_id}, {trial})"
                )
                continue
            _add_case(out, path, index, result, case_id, trial, model)


def _model_from_name(stem: str) -> str | None:
    for pattern in (_CHECKPOINT_NAME, _HISTORICAL_NAME):
        match = pattern.match(stem)
        if match:
            return match.group("model")
    return None


def _domain(builder: TraceBuilder, stem: str) -> str | None:
    for turn in builder.turns:
        if turn.kind == "system":
            title = turn.content.lstrip().split("\n", 1)[0].lower()
            for domain in _DOMAINS:
                if domain in title:
                    return domain
    return next((d for d in _DOMAINS if d in stem.lower()), None)


def _add_case(
    out: ImportResult,
    path: Path,
    index: int,
    result: _Result,
    case_id: str,
    trial: int,
    model: str | None,
) -> None:
    builder = TraceBuilder()
    converter = _SimulatedUser(builder, out.errors, str(path))
    converter.add_all(result.traj, f"[{index}].traj")
    builder.finish()
    domain = _domain(builder, path.stem)
    task_info = result.info.get("task")
    instruction = task_info.get("instruction") if isinstance(task_info, dict) else None
    if isinstance(instruction, str) and instruction.strip():
        where = f"the tau-bench {domain} domain" if domain else "a tau-bench domain"
        task = (
            f"Customer-service agent conversation in {where}. The agent must follow the "
            "policy (the system turn) and correctly serve the simulated user.\n"
            f"Simulated user's goal (hidden from the agent): {instruction}"
        )
    else:
        task = converter.task or ""
    error = result.info.get("error")
    infra = error is not None
    slices: dict[str, Any] = {
        "agent": "tau-bench",
        "task_id": result.task_id,
        "trial": trial,
        "domain": domain,
        "reward": result.reward,
        "infra_error": infra,
    }
    meta: dict[str, Any] = {"reward": result.reward, "index": index}
    for key in ("user_cost", "source"):
        if key in result.info:
            meta[key] = result.info[key]
    if infra:
        meta["error"] = str(error)
        out.notes.append(
            f"{path}: [{index}] ({case_id}) ended in an infrastructure error: {str(error)[:200]}"
        )
    if model is not None:
        meta["agent_model_source"] = "file name"
    out.cases.append(
        agent_run(
            case_id,
            builder.turns,
            task=task or None,
            diff=None,
            agent_model=model,
            meta=meta,
            slices=slices,
        )
    )
    if not infra and result.reward is not None:
        out.gold[case_id] = "pass" if result.reward >= 1 - 1e-9 else "fail"
