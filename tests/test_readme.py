"""The README's "From Python" example runs as written, against the loopback model server."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from judge.testing.loopback import LoopbackServer, Reply, logprobs_for

REPO = Path(__file__).resolve().parents[1]
ANSWER = '{"verdict": "pass", "evidence": ["E1"], "rationale": "The tests pass."}'
FAIL = '{"verdict": "fail", "evidence": ["E1"], "rationale": "The tests fail."}'


def readme_example() -> str:
    """The first python block under the "From Python" heading of the README."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the README has no python block under 'From Python'"
    return match.group(1)


def test_the_from_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "demo.jsonl").write_bytes((REPO / "gold" / "demo.jsonl").read_bytes())
    passed = Reply(
        content=ANSWER,
        logprobs=logprobs_for(ANSWER, {"pass": 0.7, "fail": 0.25, "cannot_determine": 0.05}),
    )
    failed = Reply(
        content=FAIL,
        logprobs=logprobs_for(FAIL, {"pass": 0.25, "fail": 0.7, "cannot_determine": 0.05}),
    )

    def answer(request: dict[str, object]) -> Reply:
        # A fixed share of prompts (by a stable hash of the messages) is answered "fail", so
        # that the prompt variants of some runs disagree: routing then gives "review" for more
        # than one reason, and the example must sum the reasons of a decision.
        digest = hashlib.sha256(json.dumps(request.get("messages"), sort_keys=True).encode())
        return failed if digest.digest()[0] % 5 == 0 else passed

    out = io.StringIO()
    with LoopbackServer(answer) as server:
        code = readme_example().replace("http://127.0.0.1:8000/v1", server.api_base)
        with contextlib.redirect_stdout(out):
            scope: dict[str, Any] = {}
            exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the README's own code
    printed = out.getvalue().splitlines()
    # 14 demo runs x 3 prompt variants, all answered; the card certifies no band on 14 runs, so
    # every run goes to a person.
    assert printed[0] == "{'ok': 42} 42 calls"
    assert len(server.requests) == 42
    assert "nothing certifies: every item goes to human review" in printed
    reasons = {reason for (decision, reason) in scope["routed"].counts if decision == "review"}
    assert len(reasons) >= 2, reasons  # the case a per-decision dict comprehension gets wrong
    assert printed[-1] == "{'review': 14}"
    assert (tmp_path / "card.yaml").is_file() and (tmp_path / "judge.db").is_file()
