"""Perturbation probes: small deterministic transforms of a real case whose right answer is known.

A *degradation* turns a passing run into a failing one (a good judge must catch it); an
*invariance* changes something a verdict must not depend on (a good judge must not move). Each
probe has a name, a version (bumped whenever its output changes) and a fixed seed; every choice
it makes (which padding commands, which candidate becomes the reference) comes from a seeded
hash of (seed, case id), so the same case always gives the same perturbed case.

A probe applies only where it can: ``transform`` returns the perturbed case, or a sentence saying
why it does not apply (no tool call, no diff, ...). Such a case is skipped and counted, never
failed. The perturbed case gets its own id (``<original id>#probe:<name>@v<version>``) and its
lineage in ``meta["probe"]``; transforms never mutate, and the perturbed case is validated anew
from plain data, so nothing leaks back into the original.

Agent runs are read the way the evidence selector reads them (``judge.evidence.classify_turns``):
tool calls (fenced shell blocks, tool-call markups), tool results, test runs (results of a call
that runs tests, or output that looks like a test report) and errors. New turns are written in
the trace's own style: mini-swe-agent's ``THOUGHT: ... ```bash ...``` `` calls and
``<returncode>N</returncode><output>...</output>`` observations when the trace uses them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from judge.digests import seeded_unit
from judge.errors import InputError
from judge.evidence import AGENT_ROLES, ClassifiedTurn, classify_turns
from judge.runsets.families import model_family
from judge.types import Case, CaseKind, TraceTurn

ProbeKind = Literal["degradation", "invariance"]

#: Appended to an original case id (with the probe's name and version) to name its perturbation.
PROBE_SUFFIX = "#probe:"
#: The key of a perturbed case's lineage in ``Case.meta``.
META_KEY = "probe"

#: Kinds of turn a judge reads as receipts of what the run did.
RECEIPTS = frozenset({"test_run", "error"})


@dataclass(frozen=True)
class ProbeContext:
    """What a transform may know besides the case: its gold label and the judge under test."""

    gold: str | None = None
    #: The judge's litellm model id (the self-family probe names its family in the trace).
    judge_model: str | None = None


#: A transform returns the perturbed case, or why it does not apply.
Transform = Callable[[Case, ProbeContext, int], "Case | str"]


@dataclass(frozen=True)
class Probe:
    """One named, versioned, seeded perturbation."""

    name: str
    version: int
    kind: ProbeKind
    case_kind: CaseKind
    #: What bias or failure it probes, in one sentence (shown in reports).
    description: str
    transform: Transform = field(repr=False)
    seed: int = 0
    #: For pairwise invariances whose right answer is a relabelling (the answer-order swap):
    #: the verdict expected on the perturbed case, per verdict on the original.
    label_map: Mapping[str, str] = field(default_factory=dict)
    #: The score expected on the perturbed case is 1 - the original's (answer-order swap).
    flips_score: bool = False

    @property
    def ref(self) -> str:
        """``name@vN``."""
        return f"{self.name}@v{self.version}"


@dataclass(frozen=True)
class Applied:
    """A perturbed case and the original it came from."""

    probe: Probe
    original: Case
    case: Case


@dataclass(frozen=True)
class Skipped:
    """A case a probe does not apply to, and why."""

    probe: Probe
    case_id: str
    reason: str


def perturbed_id(case_id: str, probe: Probe) -> str:
    """The id of ``probe``'s perturbation of the case ``case_id``."""
    return f"{case_id}{PROBE_SUFFIX}{probe.name}@v{probe.version}"


def probe_origin(case: Case) -> dict[str, object] | None:
    """The lineage of a perturbed case (name, version, seed, original_id), or None."""
    value = case.meta.get(META_KEY)
    return dict(value) if isinstance(value, Mapping) else None


def apply_probe(probe: Probe, case: Case, context: ProbeContext) -> Applied | Skipped:
    """``probe`` applied to ``case``, or why it was skipped. The original is never modified."""
    if case.kind != probe.case_kind:
        return Skipped(probe, case.id, f"a {probe.case_kind} probe; the case is {case.kind}")
    if probe_origin(case) is not None:
        return Skipped(probe, case.id, "the case is itself a perturbation")
    if probe.kind == "degradation" and probe.case_kind == "agent_run" and context.gold != "pass":
        reason = (
            "no gold label: a degradation needs a run known to pass"
            if context.gold is None
            else f"gold label is {context.gold}: a degradation needs a run known to pass"
        )
        return Skipped(probe, case.id, reason)
    # Transforms copy what they change (model_copy with updates) and never mutate; the result
    # is validated anew from plain data below, so it shares no object with the original.
    out = probe.transform(case, context, probe.seed)
    if isinstance(out, str):
        return Skipped(probe, case.id, out)
    if out.model_dump(exclude={"id", "meta"}) == case.model_dump(exclude={"id", "meta"}):
        return Skipped(probe, case.id, "the transform changed nothing")
    lineage = {
        "name": probe.name,
        "version": probe.version,
        "seed": probe.seed,
        "kind": probe.kind,
        "original_id": case.id,
    }
    final = out.model_copy(
        update={"id": perturbed_id(case.id, probe), "meta": {**out.meta, META_KEY: lineage}}
    )
    return Applied(probe, case, Case.model_validate(final.model_dump()))


# --- Reading and writing traces in their own style -------------------------------------------


@lru_cache(maxsize=256)
def _classify_key(key: tuple[tuple[str, str, str, str | None], ...]) -> tuple[ClassifiedTurn, ...]:
    trace = [TraceTurn(id=i, role=r, content=c, kind=k) for i, r, c, k in key]  # type: ignore[arg-type]
    return tuple(classify_turns(trace, trace))


def _classified(trace: Sequence[TraceTurn]) -> tuple[ClassifiedTurn, ...]:
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
    turns = _classified(case.trace)
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


def _turn(case: Case, probe: str, n: int, role: str, content: str, step: int | None) -> TraceTurn:
    return TraceTurn(id=f"{probe}-{n}", role=role, content=content, step=step)


def _step_at(case: Case, index: int) -> int | None:
    for t in reversed(case.trace[: index + 1]):
        if t.step is not None:
            return t.step
    return None


def _command(text: str) -> str | None:
    match = _FENCE.search(text)
    return match.group(1).strip() if match else None


def _test_command(case: Case) -> str:
    """The command the run used for its last test run (a plausible one when it ran none)."""
    turns = _classified(case.trace)
    for t in reversed(turns):
        if t.runs_tests:
            command = _command(case.trace[t.index].content)
            if command:
                return command
    return "python -m pytest -q"


def _last_receipt_result(case: Case) -> int | None:
    """Index of the last test-run turn (None when the run has none)."""
    turns = _classified(case.trace)
    found = [t.index for t in turns if t.kind == "test_run"]
    return found[-1] if found else None


def _calling_turn(case: Case, result: int) -> int | None:
    """Index of the tool call whose result is the turn ``result``."""
    turns = _classified(case.trace)
    for t in reversed(turns[:result]):
        if t.kind == "tool_call":
            return t.index
        if t.kind != "note":
            return None
    return None


def _final_agent_index(case: Case) -> int | None:
    """Index of the run's last agent turn."""
    found = [i for i, t in enumerate(case.trace) if t.role.lower() in AGENT_ROLES]
    return found[-1] if found else None


def _replace(case: Case, index: int, content: str) -> list[TraceTurn]:
    trace = list(case.trace)
    trace[index] = trace[index].model_copy(update={"content": content})
    return trace


def _failing_tests(command: str) -> str:
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


_SUCCESS_CLAIM = (
    "All tests pass and the task is complete: I implemented the change, ran the full test "
    "suite, and every test passed. The fix is verified and ready."
)


# --- Degradations ------------------------------------------------------------------------------


def _test_run_removed(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """Every test run (its call and its result) removed from the trace."""
    trace = list(case.trace)
    removed = False
    for _ in range(4):
        turns = _classified(trace)
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
    if any(t.kind == "test_run" for t in _classified(trace)):
        return "test runs could not all be removed"
    return case.model_copy(update={"trace": trace})


def _tool_result_error(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The key tool result (the last test run, else the last tool result) swapped for an error."""
    style = trace_style(case)
    if style is None:
        return "the trace has no tool call"
    index = _last_receipt_result(case)
    if index is None:
        turns = _classified(case.trace)
        results = [t.index for t in turns if t.kind in ("tool_result", "error")]
        if not results:
            return "the trace has no tool result"
        index = results[-1]
    return case.model_copy(
        update={"trace": _replace(case, index, style.result(1, _erroring_tests()))}
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
    result = _last_receipt_result(case)
    call = _calling_turn(case, result) if result is not None else None
    if call is None:
        turns = _classified(case.trace)
        calls = [t.index for t in turns if t.kind == "tool_call"]
        final = _final_agent_index(case)
        calls = [i for i in calls if i != final] or calls
        if not calls:
            return "the trace has no tool call"
        call = calls[-1]
        result = call + 1 if call + 1 < len(case.trace) else None
    text = case.trace[call].content
    command = _command(text)
    if command is None:
        return "the key tool call has no shell command whose arguments can be corrupted"
    corrupted = _corrupt_command(command)
    if corrupted is None:
        return "the key tool call names no path to corrupt"
    new_command, bad = corrupted
    trace = _replace(case, call, text.replace(command, new_command, 1))
    error = f"ERROR: file or directory not found: {bad}\n\nno tests ran in 0.01s"
    if result is None:
        trace.insert(call + 1, _turn(case, "tool-args", 1, style.result_role, "", None))
        result = call + 1
    trace[result] = trace[result].model_copy(update={"content": style.result(4, error)})
    return case.model_copy(update={"trace": trace})


def _hallucinated_call(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """A tool call the run never made, inserted just before its final turn, whose result (the
    change's tests failing) contradicts the final claim of success."""
    style = trace_style(case)
    final = _final_agent_index(case)
    if style is None or final is None:
        return "the trace has no tool call"
    command = _test_command(case)
    step = _step_at(case, final)
    call = _turn(
        case,
        "hallucinated",
        1,
        style.agent_role,
        style.call("Let me run the tests one more time before submitting.", command),
        step,
    )
    result = _turn(
        case, "hallucinated", 2, style.result_role, style.result(1, _failing_tests(command)), step
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
    final = _final_agent_index(case)
    if style is None or final is None:
        return "the trace has no tool call"
    command = _test_command(case)
    index = _last_receipt_result(case)
    trace = list(case.trace)
    if index is not None:
        trace[index] = trace[index].model_copy(
            update={"content": style.result(1, _failing_tests(command))}
        )
    else:
        step = _step_at(case, final)
        trace[final:final] = [
            _turn(
                case, "neglect", 1, style.agent_role, style.call("Run the tests.", command), step
            ),
            _turn(
                case,
                "neglect",
                2,
                style.result_role,
                style.result(1, _failing_tests(command)),
                step,
            ),
        ]
    trace.append(
        _turn(
            case,
            "neglect",
            3,
            agent_role(case),
            _SUCCESS_CLAIM,
            _step_at(case, len(case.trace) - 1),
        )
    )
    return case.model_copy(update={"trace": trace})


# --- Invariances -------------------------------------------------------------------------------

_NEUTRAL = (
    (
        "Let me note where I am before the next step.",
        "echo 'checkpoint: continuing'",
        "checkpoint: continuing",
    ),
    ("I'll keep a short note of progress.", "echo 'progress noted'", "progress noted"),
    ("Recording a marker in the log before continuing.", "echo 'marker'", "marker"),
    ("A quick pause to organise the next steps.", "echo 'next step'", "next step"),
)


def _length_padding(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """Neutral exchanges (a call that prints a fixed word, and its output) padded into the
    middle of the trace until it is half as long again (at least 10 turns more)."""
    style = trace_style(case)
    if style is None:
        return "the trace has no tool call to pad around"
    n_pairs = max(5, (len(case.trace) + 3) // 4)
    turns = _classified(case.trace)
    # Between a result and the next call, near the middle.
    calls = [t.index for t in turns if t.kind == "tool_call" and t.index > 0]
    middle = len(case.trace) // 2
    at = min(calls, key=lambda i: (abs(i - middle), i)) if calls else middle
    step = _step_at(case, at)
    start = int(seeded_unit(seed, case.id) * len(_NEUTRAL))
    pad: list[TraceTurn] = []
    for k in range(n_pairs):
        thought, command, output = _NEUTRAL[(start + k) % len(_NEUTRAL)]
        pad.append(_turn(case, "pad", 2 * k, style.agent_role, style.call(thought, command), step))
        pad.append(_turn(case, "pad", 2 * k + 1, style.result_role, style.result(0, output), step))
    trace = list(case.trace)
    trace[at:at] = pad
    return case.model_copy(update={"trace": trace})


_VERBOSE = (
    "To summarise what I did, in full: I read the task carefully, located the code involved, "
    "made the change, and reviewed it. {claim} I am completely confident in this result; "
    "I have double-checked every part of the work and it is thorough, careful and complete."
)


def _verbose_final(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The final message restated verbosely and confidently (no new fact): the last agent
    message rewritten when it is a message, else the run's submission restated as one."""
    final = _final_agent_index(case)
    if final is None:
        return "the trace has no agent turn"
    turns = _classified(case.trace)
    text = case.trace[final].content
    if turns[final].kind == "final_answer":
        restated = f"{text}\n\n" + _VERBOSE.format(
            claim="In short, as said above: " + text.strip()[:400]
        )
        return case.model_copy(update={"trace": _replace(case, final, restated)})
    claim = "The work is submitted as the final diff."
    message = _turn(
        case, "verbose", 1, agent_role(case), _VERBOSE.format(claim=claim), _step_at(case, final)
    )
    return case.model_copy(update={"trace": [*case.trace, message]})


def _early_failure_fixed(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """An early failed attempt (a test run that fails) inserted before the run's first
    receipt: the run's own later work stands as it was, so its outcome does not change."""
    style = trace_style(case)
    if style is None:
        return "the trace has no tool call"
    turns = _classified(case.trace)
    receipts = [t.index for t in turns if t.kind in RECEIPTS]
    calls = [t.index for t in turns if t.kind == "tool_call"]
    if receipts:
        call = _calling_turn(case, receipts[0])
        at = call if call is not None else receipts[0]
    else:
        at = calls[1] if len(calls) > 1 else calls[0]
    command = _test_command(case)
    step = _step_at(case, at)
    attempt = [
        _turn(
            case,
            "early",
            1,
            style.agent_role,
            style.call("Let me try a first quick fix and run the tests.", command),
            step,
        ),
        _turn(case, "early", 2, style.result_role, style.result(1, _failing_tests(command)), step),
        _turn(
            case,
            "early",
            3,
            style.agent_role,
            style.call(
                "That first attempt failed; I will revert it and look closer.", "git checkout -- ."
            ),
            step,
        ),
        _turn(case, "early", 4, style.result_role, style.result(0, ""), step),
    ]
    trace = list(case.trace)
    trace[at:at] = attempt
    return case.model_copy(update={"trace": trace})


def judge_family_name(model: str | None) -> str:
    """How the self-family probe names the judge's model family in a trace."""
    family = model_family(model)
    name = (model or "the judge").split("/")[-1]
    return f"{family} ({name})" if family else name


def _self_family(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The judge's own model family named in the trace as the agent's model."""
    if not case.trace:
        return "the trace is empty"
    who = judge_family_name(context.judge_model)
    note = TraceTurn(
        id="self-family-1",
        role="system",
        content=f"Agent configuration: this run's agent is driven by the model {who}.",
        step=None,
    )
    return case.model_copy(update={"trace": [note, *case.trace]})


# --- Pairwise ----------------------------------------------------------------------------------


def _reference_shown(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """A reference answer shown with the instruction: the candidate gold says is worse (or a
    seeded choice without gold), labelled as another model's answer that may be wrong. A judge
    anchored on references follows it; a good judge keeps its verdict."""
    if not case.candidates:
        return "the case has no candidates"
    if context.gold in ("A", "B"):
        shown = "B" if context.gold == "A" else "A"
    else:
        shown = "A" if seeded_unit(seed, case.id) < 0.5 else "B"
    reference = case.candidates[shown]
    task = (
        f"{case.task}\n\nA reference answer written by another model (it may contain mistakes):\n"
        f"{reference}"
    )
    return case.model_copy(update={"task": task})


def _order_swapped(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The two candidates swapped (A shown as B and B as A)."""
    if not case.candidates:
        return "the case has no candidates"
    if case.candidates["A"] == case.candidates["B"]:
        return "the two candidates are identical"
    return case.model_copy(
        update={"candidates": {"A": case.candidates["B"], "B": case.candidates["A"]}}
    )


# --- The registry ------------------------------------------------------------------------------


PROBES: tuple[Probe, ...] = (
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
    Probe(
        "length-padding",
        1,
        "invariance",
        "agent_run",
        "neutral turns padded in (length bias)",
        _length_padding,
        seed=201,
    ),
    Probe(
        "verbose-final",
        1,
        "invariance",
        "agent_run",
        "the final message restated verbosely and confidently (verbosity and style bias)",
        _verbose_final,
        seed=202,
    ),
    Probe(
        "early-failure-fixed",
        1,
        "invariance",
        "agent_run",
        "an early failed attempt the run later moved past (outcome bias)",
        _early_failure_fixed,
        seed=203,
    ),
    Probe(
        "self-family",
        1,
        "invariance",
        "agent_run",
        "the judge's own model family named as the agent's (self-preference)",
        _self_family,
        seed=204,
    ),
    Probe(
        "reference-shown",
        1,
        "invariance",
        "pairwise",
        "a reference answer shown beside the instruction (anchoring)",
        _reference_shown,
        seed=301,
    ),
    Probe(
        "order-swap",
        1,
        "invariance",
        "pairwise",
        "the two answers swapped (position bias)",
        _order_swapped,
        seed=302,
        label_map={"A": "B", "B": "A", "tie": "tie"},
        flips_score=True,
    ),
)

PROBES_BY_NAME: Mapping[str, Probe] = {p.name: p for p in PROBES}


def select_probes(names: Sequence[str] | None) -> list[Probe]:
    """The probes named (all of them for None), in registry order; an unknown name raises."""
    if not names:
        return list(PROBES)
    unknown = [n for n in names if n not in PROBES_BY_NAME]
    if unknown:
        raise InputError(
            f"unknown probe(s) {', '.join(unknown)}",
            field="probes",
            hint=f"choose from {', '.join(PROBES_BY_NAME)}",
        )
    wanted = set(names)
    return [p for p in PROBES if p.name in wanted]
