"""The README's "First steps" block, run as it is written, as a new user would from a fresh
clone: import a Claude Code stream with --task, judge it on a keyless OpenAI-compatible server
(the loopback server stands in for llama.cpp server: no OPENAI_API_KEY anywhere), calibrate on
the demo gold set, score the run set through the card, then review the queued item with the key
the block creates, through the HTTP API of the app `judge serve` runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from tests.review_fixtures import running_service

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
#: Where the README says the keyless server listens.
README_BASE = "http://127.0.0.1:8080/v1"


def _block() -> list[str]:
    """The commands of the README's first-steps block (comments and blank lines left out)."""
    found = re.search(r"<!-- walkthrough -->\s*```sh\n(.*?)```", README, re.DOTALL)
    assert found, "README.md has no '<!-- walkthrough -->' block"
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
    """A small judge: pass when the run's last test run passed, else fail."""
    prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
    ok = " passed" in prompt and " failed" not in prompt
    p_pass = 0.7 if ok else 0.3
    label = "pass" if ok else "fail"
    text = json.dumps({"verdict": label, "evidence": ["E1"], "rationale": "from the tests"})
    return Reply(content=text, logprobs=logprobs_for(text, {"pass": p_pass, "fail": 1 - p_pass}))


def test_readme_walkthrough(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "JUDGE_DB"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "clone"
    work.mkdir()
    # A fresh clone: the files the block reads, at the same relative paths.
    for relative in ("gold/demo.jsonl", "tests/data/traces/claude-code/max_turns.jsonl"):
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_bytes((REPO / relative).read_bytes())
    monkeypatch.chdir(work)
    commands = _block()
    # The block first makes out/, the folder it writes to.
    mkdir = commands.pop(0).split("#", 1)[0].split()
    assert mkdir[:2] == ["mkdir", "-p"], mkdir
    for folder in mkdir[2:]:
        (work / folder).mkdir(parents=True, exist_ok=True)
    assert commands[0].startswith("judge import") and "--task" in commands[0]
    assert commands[-1].startswith("judge serve")
    key = ""
    with LoopbackServer(_responder) as server:
        for command in commands[:-1]:
            args = shlex.split(command.replace(README_BASE, server.api_base))
            assert args[0] == "judge"
            result = CliRunner().invoke(cli, args[1:], catch_exceptions=False)
            assert result.exit_code == 0, (command, result.output)
            if args[1:3] == ["keys", "create"]:
                key = result.stdout.strip().splitlines()[0]
        assert server.requests, "nothing reached the keyless server"
        assert set(server.authorizations) == {"Bearer no-key"}
    out = work / "out"  # the block writes its files under out/ (ignored by git)
    assert (out / "report" / "report.html").is_file() and (out / "card.yaml").is_file()

    # `judge serve --model openai/local ...` runs this app on this store; review one item.
    serve = shlex.split(commands[-1])
    model = serve[serve.index("--model") + 1]
    with running_service(work / "judge.db", keys=(), models=(model,)) as svc:
        auth = {"X-API-Key": key}
        queue = httpx.get(svc.url + "/v1/review/queue", headers=auth).json()["items"]
        assert [i["case_id"] for i in queue] == ["1c7e9a02-5d3f-4b8e-8f21-6a4b3c2d1e0f"]
        view = httpx.get(f"{svc.url}/v1/review/items/{queue[0]['id']}", headers=auth).json()
        assert view["task"] == "Make the test suite pass." and view["verdicts"]
        done = httpx.post(
            f"{svc.url}/v1/review/items/{queue[0]['id']}/labels",
            headers=auth,
            json={"label": "fail", "note": "ran out of turns"},
        )
        assert done.status_code == 201, done.text
        assert done.json()["item"]["status"] == "done"
        page = httpx.get(svc.url + "/review", headers=auth)
        assert page.status_code == 200 and "Nothing waiting for you" in page.text
