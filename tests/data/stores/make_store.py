"""Make the store fixture of tests/test_store_compat.py with the code checked out now.

    .venv/bin/python tests/data/stores/make_store.py tests/data/stores/store-bf6082d.db

It judges demo.jsonl (the demo cases as they were when the fixture was made, before their
hunk headers were recounted on 5 Dec; agent-run-success@2, three prompt variants) and pairs.jsonl
(pairwise-preference@2, both orders, three variants) with ``openai/loopback`` against the
loopback server, then compacts the file. The fixture in the repository was made by the code of
main at bf6082d (before the one-way-house refactor); a store written by that code must be
reused by today's code with no model call.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

from click.testing import CliRunner

from judge.cli import cli
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for

HERE = Path(__file__).resolve().parent
RUNS = [
    ("agent-run-success@2", HERE / "demo.jsonl"),
    ("pairwise-preference@2", HERE / "pairs.jsonl"),
]


def responder(request: dict[str, object]) -> Reply:
    """A pass verdict for agent runs, A for pairs, with verdict-token probabilities."""
    text = str(request.get("messages"))
    if '"A"' in text or "candidate" in text.lower():
        answer = '{"verdict": "A", "evidence": ["E1"], "rationale": "A answers the task."}'
        probs = {"A": 0.7, "B": 0.2, "tie": 0.05, "cannot_determine": 0.05}
    else:
        answer = '{"verdict": "pass", "evidence": ["E1"], "rationale": "The tests pass."}'
        probs = {"pass": 0.8, "fail": 0.15, "cannot_determine": 0.05}
    return Reply(content=answer, logprobs=logprobs_for(answer, probs))


def main(out: str) -> None:
    """Write the fixture store to ``out``."""
    target = Path(out)
    if target.exists():
        sys.exit(f"{target} exists; remove it first")
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key")
    with LoopbackServer(responder) as server:
        for rubric, cases in RUNS:
            result = CliRunner().invoke(
                cli,
                [
                    "run",
                    "--rubric",
                    rubric,
                    "--model",
                    "openai/loopback",
                    "--api-base",
                    server.api_base,
                    "--db",
                    str(target),
                    "--quiet",
                    str(cases),
                ],
            )
            if result.exit_code != 0:
                sys.exit(result.output)
        print(f"{len(server.requests)} model calls")
    conn = sqlite3.connect(target)
    conn.execute("PRAGMA journal_mode=delete")
    conn.execute("VACUUM")
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1])
