"""Hand-made agent runs in mini-swe-agent's style, and pairs, for the probe tests."""

from __future__ import annotations

from judge.types import Case, TraceTurn

DIFF = (
    "diff --git a/src/pkg/module.py b/src/pkg/module.py\n"
    "--- a/src/pkg/module.py\n+++ b/src/pkg/module.py\n"
    "@@ -1,2 +1,2 @@\n-def f(x):\n-    return x\n+def f(x):\n+    return x + 1\n"
    "diff --git a/tests/test_module.py b/tests/test_module.py\n"
    "--- a/tests/test_module.py\n+++ b/tests/test_module.py\n"
    "@@ -1 +1,2 @@\n def test_f():\n+    assert f(1) == 2\n"
)
PASSED = (
    "<returncode>0</returncode>\n<output>\n..\n============ 2 passed in 0.05s ============\n"
    "</output>"
)
FAILED = (
    "<returncode>1</returncode>\n<output>\nF.\nFAILED tests/test_module.py::test_f - "
    "AssertionError\n============ 1 failed, 1 passed in 0.05s ============\n</output>"
)


def call(command: str, thought: str = "Next step.") -> str:
    return f"THOUGHT: {thought}\n\n```bash\n{command}\n```"


def run(i: int, *, passing: bool, reads: int = 1, task_id: str | None = None) -> Case:
    """A run that reads ``reads`` files, edits, runs the tests (passing or failing) and
    submits: 2 * reads + 6 turns."""
    turns: list[tuple[str, str]] = []
    for k in range(reads):
        turns += [
            ("agent", call(f"cat src/pkg/file{k}.py", "Read the code.")),
            ("observation", f"<returncode>0</returncode>\n<output>\nline {k}\n</output>"),
        ]
    turns += [
        ("agent", call("sed -i 's/return x/return x + 1/' src/pkg/module.py", "Fix it.")),
        ("observation", "<returncode>0</returncode>\n<output>\n</output>"),
        ("agent", call("python -m pytest tests/test_module.py", "Run the tests.")),
        ("observation", PASSED if passing else FAILED),
        ("agent", call("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff", "Submit.")),
        ("observation", DIFF),
    ]
    trace = [
        TraceTurn(id=f"msg-{n}", role=role, content=content, step=n // 2 + 1)
        for n, (role, content) in enumerate(turns)
    ]
    return Case(
        id=f"run-{i}",
        kind="agent_run",
        task="Make f return x + 1.",
        diff=DIFF,
        trace=trace,
        slices={"task_id": task_id} if task_id else {},
        meta={"origin": "tests"},
    )


def pair(i: int, *, good: str) -> Case:
    """A pair whose ``good`` answer contains CORRECT."""
    texts = {
        good: f"Answer {i}: CORRECT and complete.",
        ("B" if good == "A" else "A"): f"Answer {i}: wrong.",
    }
    return Case(id=f"pair-{i}", kind="pairwise", task=f"Question {i}?", candidates=texts)
