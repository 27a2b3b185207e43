"""The Phoenix loop of docs/platforms.md, run as it is written: traces in a real Phoenix ->
judge import -> judge run (the loopback server stands in for the judge model) -> judge export
(verdicts next to the traces) -> people annotate in Phoenix (posted as HUMAN annotations through
its REST API, standing in for the UI) -> judge gold import -> judge calibrate -> judge route ->
judge export again (each verdict carries its route; review marks what people should look at)."""

from __future__ import annotations

import json
import re
import secrets
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from judge.testing.phoenix import agent_trace, annotate, seed, span_annotations

pytestmark = [pytest.mark.phoenix, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
GUIDE = (REPO / "docs" / "platforms.md").read_text(encoding="utf-8")
#: What the guide writes for the Phoenix project and the judge's server.
GUIDE_TARGET = "phoenix+http://127.0.0.1:6006/projects/agents"
GUIDE_BASE = "http://127.0.0.1:8080/v1"


def _block() -> list[str]:
    """The commands of the guide's Phoenix block (comments and blank lines left out)."""
    found = re.search(r"<!-- phoenix loop -->\s*```sh\n(.*?)```", GUIDE, re.DOTALL)
    assert found, "docs/platforms.md has no '<!-- phoenix loop -->' block"
    commands: list[str] = []
    for line in found.group(1).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if commands and commands[-1].endswith("\\"):
            commands[-1] = commands[-1][:-1] + " " + line
        else:
            commands.append(line)
    return commands


def _responder(request: dict[str, Any]) -> Reply:
    """A small judge: fail when the run hit an error, else pass, never quite sure."""
    prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
    ok = "timed out" not in prompt and "not found" not in prompt
    p_pass = 0.7 if ok else 0.35
    label = "pass" if ok else "fail"
    text = json.dumps({"verdict": label, "evidence": ["E1"], "rationale": "from the run"})
    return Reply(content=text, logprobs=logprobs_for(text, {"pass": p_pass, "fail": 1 - p_pass}))


def _runs() -> list[list[dict[str, Any]]]:
    """Eight support-agent runs, three of them hitting a failing tool."""
    runs = []
    for i in range(8):
        failing = i % 3 == 1
        runs.append(
            agent_trace(
                f"Where is my order #A{1000 + i}?",
                "I could not look it up." if failing else f"Order A{1000 + i} has shipped.",
                tool="get_order_status",
                arguments={"order_id": f"A{1000 + i}"},
                result=None if failing else '{"status": "shipped"}',
                error="order service timed out" if failing else None,
            )
        )
    return runs


def test_the_phoenix_loop_runs_as_written(
    phoenix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "JUDGE_DB", "PHOENIX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    project = "agents-" + secrets.token_hex(3)
    runs = _runs()
    seed(phoenix.url, project, runs)
    target = phoenix.target(project)
    roots = [r[0]["context"]["span_id"] for r in runs]
    commands = _block()
    assert [c.split()[1] for c in commands] == [
        "import",
        "run",
        "export",
        "gold",
        "calibrate",
        "route",
        "export",
    ]
    with LoopbackServer(_responder) as model:
        for command in commands:
            args = shlex.split(
                command.replace(GUIDE_TARGET, target).replace(GUIDE_BASE, model.api_base)
            )
            if args[1:3] == ["gold", "import"]:
                # People annotate every run in Phoenix (the UI would post the same rows).
                annotate(
                    phoenix.url,
                    [
                        {
                            "span_id": root,
                            "name": "correctness",
                            "result": {"label": "incorrect" if i % 3 == 1 else "correct"},
                        }
                        for i, root in enumerate(roots)
                    ],
                )
            done = CliRunner().invoke(cli, args[1:])
            assert done.exit_code == 0, (command, done.output)
        assert model.requests, "nothing reached the judge"
    rows = [
        r
        for r in span_annotations(phoenix.url, project, roots, names=["agent-run-success"])
        if r["annotator_kind"] == "LLM"
    ]
    assert len(rows) == 8  # one verdict per run, updated in place by the second export
    labels = {r["span_id"]: r["result"]["label"] for r in rows}
    assert [labels[root] for root in roots] == ["fail" if i % 3 == 1 else "pass" for i in range(8)]
    # Eight labels certify no automatic band: the card sends every verdict to people.
    assert {r["metadata"]["route"] for r in rows} == {"review"}
    assert all(r["metadata"]["card"].startswith("sha256:") for r in rows)
    gold = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert len(gold) == 8 and gold[0]["lineage"]["source"].startswith("phoenix annotation")
