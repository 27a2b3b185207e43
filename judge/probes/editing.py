"""Reading and writing an agent run's trace in its own style, for the probes' transforms.

Turns are read the way the evidence selector reads them (``judge.evidence.classify_turns``);
new turns are written as the trace writes its own (mini-swe-agent's ``THOUGHT:`` calls and
``<returncode>`` observations when it uses them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from judge.evidence import AGENT_ROLES, ClassifiedTurn, classify_turns
from judge.types import Case, TraceTurn

#: Kinds of turn a judge reads as receipts of what the run did.
RECEIPTS = frozenset({"test_run", "error"})


@lru_cache(maxsize=256)
def _classify_key(key: tuple[tuple[str, str, str, str | None], ...]) -> tuple[ClassifiedTurn, ...]:
    trace = [TraceTurn(id=i, role=r, content=c, kind=k) for i, r, c, k in key]  # type: ignore[arg-type]
    return tuple(classify_turns(trace, trace))


def classified(trace: Sequence[TraceTurn]) -> tuple[ClassifiedTurn, ...]:
    """The trace's turns as the evidence selector classifies them (cached: every probe reads
    the same original trace). Read ``index``, ``kind`` and ``runs_tests``; the turns inside
    are rebuilt copies: take a turn's text from the trace itself."""
    return _classify_key(tuple((t.id, t.role, t.content, t.kind) for t in trace))


_FENCE = re.compile(r"```(?:bash|sh|shell|console)\s*\n(.*?)```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>-?\d+</returncode>")


@dataclass(frozen=True)
class Style:
    """How a trace writes tool calls and their results."""

    agent_role: str
    result_role: str
    #: mini-swe-agent's ``<returncode>`` / ``<output>`` observations.
    returncode: bool
    #: Calls are fenced shell blocks after a ``THOUGHT:`` line.
    thought: bool

    def call(self, thought: str, command: str) -> str:
        """An agent turn that runs ``command``."""
        head = f"THOUGHT: {thought}" if self.thought else thought
        return f"{head}\n\n```bash\n{command}\n```"

    def result(self, code: int, output: str) -> str:
        """A tool result with exit status ``code``."""
        if self.returncode:
            return f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"
        return output if code == 0 else f"{output}\n(exit code {code})"


def trace_style(case: Case) -> Style | None:
    """The trace's style, from its first tool call and the turn after it; None when the trace
    has no tool call."""
    turns = classified(case.trace)
    for i, t in enumerate(turns):
        if t.kind == "tool_call":
            nxt = case.trace[i + 1] if i + 1 < len(case.trace) else None
            result_role = nxt.role if nxt is not None else "tool"
            returncode = any(_RETURNCODE.search(x.content) for x in case.trace)
            return Style(
                agent_role=case.trace[i].role,
                result_role=result_role,
                returncode=returncode,
                thought=case.trace[i].content.lstrip().startswith("THOUGHT:"),
            )
    return None


def agent_role(case: Case) -> str:
    """The role the trace's agent turns carry (``assistant`` when it has none)."""
    for t in case.trace:
        if t.role.lower() in AGENT_ROLES:
            return t.role
    return "assistant"


def new_turn(
    case: Case, probe: str, n: int, role: str, content: str, step: int | None
) -> TraceTurn:
    """A turn the probe ``probe`` writes (its ``n``-th), with its own id."""
    return TraceTurn(id=f"{probe}-{n}", role=role, content=content, step=step)


def step_at(case: Case, index: int) -> int | None:
    """The step of the turn at ``index``, or of the last turn before it that has one."""
    for t in reversed(case.trace[: index + 1]):
        if t.step is not None:
            return t.step
    return None


def fenced_command(text: str) -> str | None:
    """The shell command of a fenced block in ``text``, or None."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else None


def run_tests_command(case: Case) -> str:
    """The command the run used for its last test run (a plausible one when it ran none)."""
    turns = classified(case.trace)
    for t in reversed(turns):
        if t.runs_tests:
            command = fenced_command(case.trace[t.index].content)
            if command:
                return command
    return "python -m pytest -q"


def last_test_run(case: Case) -> int | None:
    """Index of the last test-run turn (None when the run has none)."""
    turns = classified(case.trace)
    found = [t.index for t in turns if t.kind == "test_run"]
    return found[-1] if found else None


def calling_turn(case: Case, result: int) -> int | None:
    """Index of the tool call whose result is the turn ``result``."""
    turns = classified(case.trace)
    for t in reversed(turns[:result]):
        if t.kind == "tool_call":
            return t.index
        if t.kind != "note":
            return None
    return None


def final_agent_index(case: Case) -> int | None:
    """Index of the run's last agent turn."""
    found = [i for i, t in enumerate(case.trace) if t.role.lower() in AGENT_ROLES]
    return found[-1] if found else None


def with_content(case: Case, index: int, content: str) -> list[TraceTurn]:
    """The trace with the turn at ``index`` holding ``content`` (a copy; the case is kept)."""
    trace = list(case.trace)
    trace[index] = trace[index].model_copy(update={"content": content})
    return trace


def failing_tests(command: str) -> str:
    """A test report in which the change's tests fail."""
    return (
        f"$ {command}\n"
        "F.F\n"
        "=================================== FAILURES ===================================\n"
        "AssertionError: the behaviour the task asks for is still missing\n"
        "=========================== short test summary info ============================\n"
        "FAILED test_change.py::test_task_behaviour - AssertionError\n"
        "FAILED test_change.py::test_task_edge_case - AssertionError\n"
        "========================= 2 failed, 1 passed in 0.42s =========================="
    )
