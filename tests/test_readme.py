"""The README's "From Python" example runs as written, against the loopback model server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from judge.testing.loopback import LoopbackServer, Reply, logprobs_for

REPO = Path(__file__).resolve().parents[1]
ANSWER = '{"verdict": "pass", "evidence": ["E1"], "rationale": "The tests pass."}'


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
    reply = Reply(
        content=ANSWER,
        logprobs=logprobs_for(ANSWER, {"pass": 0.7, "fail": 0.25, "cannot_determine": 0.05}),
    )
    out = io.StringIO()
    with LoopbackServer(lambda request: reply) as server:
        code = readme_example().replace("http://127.0.0.1:8000/v1", server.api_base)
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the README's own code
    printed = out.getvalue().splitlines()
    # 14 demo runs x 3 prompt variants, all answered; the card certifies no band on 14 runs, so
    # every run goes to a person.
    assert printed[0] == "{'ok': 42} 42 calls"
    assert len(server.requests) == 42
    assert "nothing certifies: every item goes to human review" in printed
    assert printed[-1] == "{'review': 14}"
    assert (tmp_path / "card.yaml").is_file() and (tmp_path / "judge.db").is_file()
