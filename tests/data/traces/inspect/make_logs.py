"""Generate small, REAL Inspect AI logs with the offline `mockllm/model` provider.

Usage (from the repository, with the judge[inspect] extra, i.e. inspect-ai 0.3.285):

    .venv/bin/python tests/data/traces/inspect/make_logs.py
    # writes calc.eval, calc.json, calc_chunked.eval, calc_error.eval and patch.eval
    # beside this script (about 20 s). CLI equivalent for one format (the task carries its
    # own mock model):
    .venv/bin/inspect eval tests/data/traces/inspect/make_logs.py@calc --log-format json

What the task `calc` contains (epochs=2, so 2 samples x 2 epochs = 4 sample records):

- "add" (str id, str input): model calls calculator("2+3") -> "5", then answers
            with ContentReasoning + ContentText "The answer is 5."   -> includes: C
- 2 (int id, input is a LIST of messages: system + user with ContentText and a
            tiny PNG ContentImage, which becomes `attachment://<hash>`):
            model calls calculator("1/0"); the tool raises ToolError("division
            by zero") -> ChatMessageTool.error = {type: "unknown", message};
            model answers "I could not compute it."                  -> includes: I
  Second scorer `tool_calls_used` returns a float value + answer + explanation
  + metadata.

Separate task `calc_error` (logs/calc_error.eval, epochs=1, one sample):
- "crash" : the model calls the `explode` tool, which raises RuntimeError;
            fail_on_error=False so the eval still succeeds (status=success),
            the sample has `error` set and no `scores`. (Kept out of the main
            log because the traceback makes each such sample ~70 KB of JSON.)

Separate task `patch` (patch.eval, epochs=1, two samples, zstd):
- "fix"  : the model calls `bash` with {"cmd": "git diff"} (a unified diff comes back),
            then says it fixed the bug; scorer `patch_applied` returns the number 1 with
            metadata {"model_patch": <the diff>} (as inspect_evals' SWE-bench scorers do).
- "skip" : the model answers without a tool; the scorer returns
            Score.unscored(reason="no_response") (value NaN in the log).

Every mock ModelOutput carries `usage` (ModelUsage) - otherwise mockllm counts
tokens with a tokenizer that may be downloaded.

Written for the research notes of judge's Inspect importer (Dec 2026), then moved here with
the `patch` task added; the logs beside it are its output (SOURCE.md).
"""

from __future__ import annotations

import builtins
import os
import shutil
import sys
import tempfile
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai._util.content import ContentImage, ContentReasoning, ContentText
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.model._model_output import ChatCompletionChoice
from inspect_ai.model._chat_message import ChatMessageAssistant
from inspect_ai.scorer import Score, Target, includes, mean, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import ToolError, tool

HERE = Path(__file__).resolve().parent
LOGS = HERE

DIFF = (
    "diff --git a/calc.py b/calc.py\n"
    "--- a/calc.py\n"
    "+++ b/calc.py\n"
    "@@ -1,2 +1,2 @@\n"
    " def add(a, b):\n"
    "-    return a - b\n"
    "+    return a + b\n"
)

# 1x1 transparent PNG
PNG_1X1 = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)

USAGE = dict(input_tokens=12, output_tokens=7, total_tokens=19)


@tool
def calculator():
    async def execute(expression: str) -> str:
        """Evaluate a simple arithmetic expression.

        Args:
            expression: Arithmetic expression such as "2+3".
        """
        allowed = set("0123456789+-*/(). ")
        if not set(expression) <= allowed:
            raise ToolError(f"unsupported characters in {expression!r}")
        try:
            return str(builtins.eval(expression, {"__builtins__": {}}, {}))  # noqa: S307
        except ZeroDivisionError:
            raise ToolError("division by zero")

    return execute


@tool
def explode():
    async def execute() -> str:
        """A tool that always crashes (non-ToolError -> sample error)."""
        raise RuntimeError("kaboom: the explode tool crashed")

    return execute


@tool
def bash():
    async def execute(cmd: str) -> str:
        """Run a shell command (a fixed `git diff` output here).

        Args:
            cmd: The command to run.
        """
        return DIFF if "git diff" in cmd else ""

    return execute


def _usage() -> ModelUsage:
    return ModelUsage(**USAGE)


def _text_of(msg) -> str:
    return msg.text if hasattr(msg, "text") else str(msg.content)


def mock_outputs(input, tools, tool_choice, config) -> ModelOutput:
    """Deterministic mock model: decides from the conversation so far."""
    user = next(m for m in input if isinstance(m, ChatMessageUser))
    question = _text_of(user)
    tool_msgs = [m for m in input if isinstance(m, ChatMessageTool)]

    def call(fn: str, args: dict, call_id: str) -> ModelOutput:
        out = ModelOutput.for_tool_call(
            model="mockllm/model",
            tool_name=fn,
            tool_arguments=args,
            tool_call_id=call_id,
            content=f"I will use the {fn} tool.",
        )
        out.usage = _usage()
        return out

    def answer(text: str, reasoning: str | None = None) -> ModelOutput:
        content: list = []
        if reasoning:
            content.append(ContentReasoning(reasoning=reasoning, signature="sig-mock"))
        content.append(ContentText(text=text))
        out = ModelOutput(
            model="mockllm/model",
            choices=[
                ChatCompletionChoice(
                    message=ChatMessageAssistant(
                        content=content, model="mockllm/model", source="generate"
                    ),
                    stop_reason="stop",
                )
            ],
        )
        out.usage = _usage()
        return out

    if "2+3" in question:
        if not tool_msgs:
            return call("calculator", {"expression": "2+3"}, "call_add_1")
        return answer(
            f"The answer is {tool_msgs[-1].text}.",
            reasoning="The calculator returned 5, so the sum is 5.",
        )
    if "1/0" in question:
        if not tool_msgs:
            return call("calculator", {"expression": "1/0"}, "call_div_1")
        return answer("I could not compute it.", reasoning="The tool reported an error.")
    if "explode" in question:
        return call("explode", {}, "call_boom_1")
    if "Fix the add" in question:
        if not tool_msgs:
            return call("bash", {"cmd": "git diff"}, "call_diff_1")
        return answer("I fixed add(): it subtracted instead of adding.")
    return answer("I don't know.")


def dataset() -> MemoryDataset:
    return MemoryDataset(
        [
            Sample(
                id="add",
                input="What is 2+3? Use the calculator.",
                target="5",
                metadata={"difficulty": "easy", "tags": ["arith", "tool"]},
            ),
            Sample(
                id=2,
                input=[
                    ChatMessageSystem(content="You are a terse arithmetic assistant."),
                    ChatMessageUser(
                        content=[
                            ContentText(text="What is 1/0? Use the calculator."),
                            ContentImage(image=PNG_1X1),
                        ]
                    ),
                ],
                target=["undefined", "infinity"],
            ),
        ],
        name="calc_mini",
    )


def patch_dataset() -> MemoryDataset:
    return MemoryDataset(
        [
            Sample(id="fix", input="Fix the add() function in calc.py.", target="patched"),
            Sample(id="skip", input="Say nothing useful.", target="patched"),
        ],
        name="patch_mini",
    )


def crash_dataset() -> MemoryDataset:
    return MemoryDataset(
        [Sample(id="crash", input="Please explode.", target="anything")],
        name="calc_crash",
    )


@scorer(metrics=[mean()])
def tool_calls_used():
    """Custom scorer: float value, explanation and metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        n = sum(len(m.tool_calls or []) for m in state.messages if m.role == "assistant")
        return Score(
            value=float(n),
            answer=state.output.completion,
            explanation=f"{n} tool call(s) made",
            metadata={"tool_call_count": n},
        )

    return score


@scorer(metrics=[mean()])
def patch_applied():
    """Numeric 1 with the agent's patch in metadata, or unscored when there is no patch."""

    async def score(state: TaskState, target: Target) -> Score:
        used = any(m.role == "tool" and "diff --git" in m.text for m in state.messages)
        if not used:
            return Score.unscored(reason="no_response", explanation="no patch was made")
        return Score(value=1, explanation="the patch applies", metadata={"model_patch": DIFF})

    return score


@task
def patch() -> Task:
    return Task(
        dataset=patch_dataset(),
        solver=[use_tools([bash()]), generate()],
        scorer=patch_applied(),
        model=get_model("mockllm/model", custom_outputs=mock_outputs),
        epochs=1,
        name="patch",
    )


@task
def calc() -> Task:
    return Task(
        dataset=dataset(),
        solver=[use_tools([calculator()]), generate()],
        scorer=[includes(), tool_calls_used()],
        model=get_model("mockllm/model", custom_outputs=mock_outputs),
        epochs=2,
        name="calc",
    )


@task
def calc_error() -> Task:
    """One sample whose tool crashes; fail_on_error=False keeps status=success."""
    return Task(
        dataset=crash_dataset(),
        solver=[use_tools([explode()]), generate()],
        scorer=[includes()],
        model=get_model("mockllm/model", custom_outputs=mock_outputs),
        epochs=1,
        fail_on_error=False,
        name="calc_error",
    )


def _run(t: Task, log_format: str, dest: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        [log] = eval(
            t,
            log_dir=tmp,
            log_format=log_format,
            display="none",
            max_samples=1,  # deterministic order in the zip
        )
        assert log.status == "success", log.status
        src = Path(log.location)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    return dest


def main() -> None:
    LOGS.mkdir(exist_ok=True)
    eval_path = _run(calc(), "eval", LOGS / "calc.eval")
    _run(calc(), "json", LOGS / "calc.json")
    _run(calc_error(), "eval", LOGS / "calc_error.eval")
    _run(patch(), "eval", LOGS / "patch.eval")

    # chunked sample layout: hidden CLI `inspect log convert-chunked PATH --output-dir DIR`
    from inspect_ai.log._recorders.chunked import convert_eval_logs_to_chunked

    with tempfile.TemporaryDirectory() as tmp:
        convert_eval_logs_to_chunked(str(eval_path), tmp, overwrite=True)
        shutil.copyfile(Path(tmp) / "calc.eval", LOGS / "calc_chunked.eval")

    for p in sorted(LOGS.glob("*.eval")) + sorted(LOGS.glob("calc.json")):
        print(f"{p.name}: {p.stat().st_size} bytes")


if __name__ == "__main__":
    sys.exit(main())
