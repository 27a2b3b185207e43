"""Degradations of agent runs: a passing run turned into a failing one (a good judge must catch
it). Each transform returns the perturbed case, or why it does not apply."""

from __future__ import annotations

import re
from dataclasses import dataclass

from judge.probes.editing import (
    agent_role,
    calling_turn,
    classified,
    failing_tests,
    fenced_command,
    final_agent_index,
    last_test_run,
    new_turn,
    run_tests_command,
    step_at,
    trace_style,
    with_content,
)
from judge.probes.probe import Probe, ProbeContext
from judge.types import Case

_SUCCESS_CLAIM = (
    "All tests pass and the task is complete: I implemented the change, ran the full test "
    "suite, and every test passed. The fix is verified and ready."
)


def _erroring_tests() -> str:
    """A test run that errors before any test runs."""
    return (
        "============================= test session starts ==============================\n"
        "collected 0 items / 1 error\n"
        "==================================== ERRORS ====================================\n"
        "Traceback (most recent call last):\n"
        '  File "conftest.py", line 3, in <module>\n'
        "ImportError: cannot import name 'patched_function' from the changed module\n"
        "=========================== 1 error in 0.31s ==================================="
    )


def _test_run_removed(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """Every test run (its call and its result) removed from the trace."""
    trace = list(case.trace)
    removed = False
    for _ in range(4):
        turns = classified(trace)
        drop: set[int] = set()
        for t in turns:
            if t.kind == "test_run":
                drop.add(t.index)
                for before in reversed(turns[: t.index]):
                    if before.kind == "note":
                        continue
                    if before.kind == "tool_call":
                        drop.add(before.index)
                    break
            if t.runs_tests:
                drop.add(t.index)
                if t.index + 1 < len(turns) and turns[t.index + 1].kind != "note":
                    drop.add(t.index + 1)
        if not drop:
            break
        removed = True
        trace = [x for i, x in enumerate(trace) if i not in drop]
    if not removed:
        return "the trace has no test run"
    if any(t.kind == "test_run" for t in classified(trace)):
        return "test runs could not all be removed"
    return case.model_copy(update={"trace": trace})


def _tool_result_error(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The key tool result (the last test run, else the last tool result) swapped for an error."""
    style = trace_style(case)
    if style is None:
        return "the trace has no tool call"
    index = last_test_run(case)
    if index is None:
        turns = classified(case.trace)
        results = [t.index for t in turns if t.kind in ("tool_result", "error")]
        if not results:
            return "the trace has no tool result"
        index = results[-1]
    return case.model_copy(
        update={"trace": with_content(case, index, style.result(1, _erroring_tests()))}
    )


_PATHLIKE = re.compile(r"(?<![\w-])((?:[\w.-]+/)*[\w-]+\.py|(?:[\w.-]+/)+[\w.-]*)(?![\w/])")


def _corrupt_command(command: str) -> tuple[str, str] | None:
    """``command`` with its path arguments pointed at a file that does not exist, and the first
    such path; None when it names no path."""
    first: list[str] = []

    def corrupt(match: re.Match[str]) -> str:
        path = match.group(1)
        bad = f"{path.rstrip('/')}__corrupted"
        if not first:
            first.append(bad)
        return bad

    out = _PATHLIKE.sub(corrupt, command)
    return (out, first[0]) if first else None


def _tool_args_corrupted(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The key tool call (the one behind the last test run, else the last call before the end)
    with its path arguments corrupted, and the result such a call gives: nothing found, so the
    final check never ran."""
    style = trace_style(case)
    if style is None:
        return "the trace has no tool call"
    result = last_test_run(case)
    call = calling_turn(case, result) if result is not None else None
    if call is None:
        turns = classified(case.trace)
        calls = [t.index for t in turns if t.kind == "tool_call"]
        final = final_agent_index(case)
        calls = [i for i in calls if i != final] or calls
        if not calls:
            return "the trace has no tool call"
        call = calls[-1]
        result = call + 1 if call + 1 < len(case.trace) else None
    text = case.trace[call].content
    command = fenced_command(text)
    if command is None:
        return "the key tool call has no shell command whose arguments can be corrupted"
    corrupted = _corrupt_command(command)
    if corrupted is None:
        return "the key tool call names no path to corrupt"
    new_command, bad = corrupted
    trace = with_content(case, call, text.replace(command, new_command, 1))
    error = f"ERROR: file or directory not found: {bad}\n\nno tests ran in 0.01s"
    if result is None:
        trace.insert(call + 1, new_turn(case, "tool-args", 1, style.result_role, "", None))
        result = call + 1
    trace[result] = trace[result].model_copy(update={"content": style.result(4, error)})
    return case.model_copy(update={"trace": trace})


def _hallucinated_call(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """A tool call the run never made, inserted just before its final turn, whose result (the
    change's tests failing) contradicts the final claim of success."""
    style = trace_style(case)
    final = final_agent_index(case)
    if style is None or final is None:
        return "the trace has no tool call"
    command = run_tests_command(case)
    step = step_at(case, final)
    call = new_turn(
        case,
        "hallucinated",
        1,
        style.agent_role,
        style.call("Let me run the tests one more time before submitting.", command),
        step,
    )
    result = new_turn(
        case, "hallucinated", 2, style.result_role, style.result(1, failing_tests(command)), step
    )
    trace = list(case.trace)
    trace[final:final] = [call, result]
    return case.model_copy(update={"trace": trace})


_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_tests?\.py$|(^|/)conftest\.py$|"
    r"(^|/)(reproduce|repro|debug|check|verify)[^/]*\.py$|^[^/]*\.py$"
)


@dataclass(frozen=True)
class _FileDiff:
    path: str
    text: str


def split_diff(diff: str) -> list[_FileDiff]:
    """The diff's per-file sections, in order (text before the first section is dropped)."""
    starts = [m.start() for m in _DIFF_FILE.finditer(diff)]
    out = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(diff)
        text = diff[start:end]
        match = _DIFF_FILE.match(text)
        assert match is not None
        out.append(_FileDiff(match.group(2), text))
    return out


def is_test_path(path: str) -> bool:
    """A test, a conftest, or a top-level helper script (reproduce.py): not the fix itself."""
    return _TEST_PATH.search(path) is not None


def _fix_hunks_dropped(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The hunks that implement the fix (every hunk outside tests and helper scripts) dropped
    from the diff, and from turns that print the diff again."""
    if not case.diff or not case.diff.strip():
        return "the run has no diff"
    files = split_diff(case.diff)
    if not files:
        return "the diff has no file section"
    fix = [f for f in files if not is_test_path(f.path)]
    if not fix:
        return "every file the diff changes is a test or a helper script"
    kept = "".join(f.text for f in files if is_test_path(f.path))
    trace = list(case.trace)
    for i, t in enumerate(trace):
        content = t.content
        for f in fix:
            body = f.text.rstrip("\n")
            if body and body in content:
                content = content.replace(body, "")
        if content != t.content:
            trace[i] = t.model_copy(update={"content": content})
    return case.model_copy(update={"diff": kept, "trace": trace})


def _evidence_neglect(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The receipts made failing (the last test run's output replaced by failing tests, or a
    failing test run added before the end) under a final message that claims success."""
    style = trace_style(case)
    final = final_agent_index(case)
    if style is None or final is None:
        return "the trace has no tool call"
    command = run_tests_command(case)
    index = last_test_run(case)
    trace = list(case.trace)
    if index is not None:
        trace[index] = trace[index].model_copy(
            update={"content": style.result(1, failing_tests(command))}
        )
    else:
        step = step_at(case, final)
        trace[final:final] = [
            new_turn(
                case, "neglect", 1, style.agent_role, style.call("Run the tests.", command), step
            ),
            new_turn(
                case,
                "neglect",
                2,
                style.result_role,
                style.result(1, failing_tests(command)),
                step,
            ),
        ]
    trace.append(
        new_turn(
            case,
            "neglect",
            3,
            agent_role(case),
            _SUCCESS_CLAIM,
            step_at(case, len(case.trace) - 1),
        )
    )
    return case.model_copy(update={"trace": trace})


#: The degradations, in the order reports list them.
DEGRADATIONS: tuple[Probe, ...] = (
    Probe(
        "test-run-removed",
        1,
        "degradation",
        "agent_run",
        "every test run removed: nothing shows the change works",
        _test_run_removed,
        seed=101,
    ),
    Probe(
        "tool-result-error",
        1,
        "degradation",
        "agent_run",
        "the last test run (else tool result) swapped for an error",
        _tool_result_error,
        seed=102,
    ),
    Probe(
        "tool-args-corrupted",
        1,
        "degradation",
        "agent_run",
        "the key tool call's path arguments corrupted, so the final check never ran",
        _tool_args_corrupted,
        seed=103,
    ),
    Probe(
        "hallucinated-tool-call",
        1,
        "degradation",
        "agent_run",
        "a tool call the run never made, whose failing result contradicts the final claim",
        _hallucinated_call,
        seed=104,
    ),
    Probe(
        "fix-hunk-dropped",
        1,
        "degradation",
        "agent_run",
        "the hunks implementing the fix dropped from the diff",
        _fix_hunks_dropped,
        seed=105,
    ),
    Probe(
        "evidence-neglect",
        1,
        "degradation",
        "agent_run",
        "failing receipts under a final message claiming success",
        _evidence_neglect,
        seed=106,
    ),
)
