"""Invariances of agent runs: something a verdict must not depend on changed (a good judge must
not move). Each transform returns the perturbed case, or why it does not apply."""

from __future__ import annotations

from judge.digests import seeded_unit
from judge.probes.editing import (
    RECEIPTS,
    agent_role,
    calling_turn,
    classified,
    failing_tests,
    final_agent_index,
    new_turn,
    run_tests_command,
    step_at,
    trace_style,
    with_content,
)
from judge.probes.probe import Probe, ProbeContext
from judge.runsets.families import model_family
from judge.types import Case, TraceTurn

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
    turns = classified(case.trace)
    # Between a result and the next call, near the middle.
    calls = [t.index for t in turns if t.kind == "tool_call" and t.index > 0]
    middle = len(case.trace) // 2
    at = min(calls, key=lambda i: (abs(i - middle), i)) if calls else middle
    step = step_at(case, at)
    start = int(seeded_unit(seed, case.id) * len(_NEUTRAL))
    pad: list[TraceTurn] = []
    for k in range(n_pairs):
        thought, command, output = _NEUTRAL[(start + k) % len(_NEUTRAL)]
        pad.append(
            new_turn(case, "pad", 2 * k, style.agent_role, style.call(thought, command), step)
        )
        pad.append(
            new_turn(case, "pad", 2 * k + 1, style.result_role, style.result(0, output), step)
        )
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
    final = final_agent_index(case)
    if final is None:
        return "the trace has no agent turn"
    turns = classified(case.trace)
    text = case.trace[final].content
    if turns[final].kind == "final_answer":
        restated = f"{text}\n\n" + _VERBOSE.format(
            claim="In short, as said above: " + text.strip()[:400]
        )
        return case.model_copy(update={"trace": with_content(case, final, restated)})
    claim = "The work is submitted as the final diff."
    message = new_turn(
        case, "verbose", 1, agent_role(case), _VERBOSE.format(claim=claim), step_at(case, final)
    )
    return case.model_copy(update={"trace": [*case.trace, message]})


def _early_failure_fixed(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """An early failed attempt (a test run that fails) inserted before the run's first
    receipt: the run's own later work stands as it was, so its outcome does not change."""
    style = trace_style(case)
    if style is None:
        return "the trace has no tool call"
    turns = classified(case.trace)
    receipts = [t.index for t in turns if t.kind in RECEIPTS]
    calls = [t.index for t in turns if t.kind == "tool_call"]
    if receipts:
        call = calling_turn(case, receipts[0])
        at = call if call is not None else receipts[0]
    else:
        at = calls[1] if len(calls) > 1 else calls[0]
    command = run_tests_command(case)
    step = step_at(case, at)
    attempt = [
        new_turn(
            case,
            "early",
            1,
            style.agent_role,
            style.call("Let me try a first quick fix and run the tests.", command),
            step,
        ),
        new_turn(
            case, "early", 2, style.result_role, style.result(1, failing_tests(command)), step
        ),
        new_turn(
            case,
            "early",
            3,
            style.agent_role,
            style.call(
                "That first attempt failed; I will revert it and look closer.", "git checkout -- ."
            ),
            step,
        ),
        new_turn(case, "early", 4, style.result_role, style.result(0, ""), step),
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


#: The invariances of agent runs, in the order reports list them.
INVARIANCES: tuple[Probe, ...] = (
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
)
