"""Each judging command, run as a user runs it: a fresh process with an empty scan cache, on
both scan backends, with a deadline.

A fresh process builds its safety scanners on first use (judge/safety/scan.py), in whatever
order its inputs make it ask for them, and with an empty cache it compiles them too. `judge
score` once hung for ever there: when the first text the injection flagger folded was not ASCII
(a typographic apostrophe in an agent's message), folding did not ask for its scanner, the
injection scanner was the first one built, and its spec (which folds its words) asked for the
fold scanner while holding the lock that scanner waited on. In-process tests never see this
(some earlier test has built the scanners already), so each command runs here in its own
process, on inputs whose every trace turn ends in such an apostrophe, and a hang fails the test
at the deadline instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judge.safety.scan import BACKEND_ENV, CACHE_ENV
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for
from tests.conftest import DATA, REPO

#: Seconds a command may take (about 10 s of CPU each; a deadlock never ends).
DEADLINE_S = 180
#: A few cases of the demo gold set (agent runs, each with its gold label).
N_CASES = 3
#: Ends every trace turn: it stays outside ASCII when folded, as in real agents' messages.
NOT_ASCII = " That\u2019s all."

#: The arguments of one command (without the leading "judge"), given the temporary folder
#: (which holds the inputs, ``gold.jsonl`` and ``runs.jsonl``) and the loopback server's URL.
Arguments = Callable[[Path, str], list[str]]


def _run(tmp: Path, api_base: str) -> list[str]:
    return [
        "run", "--rubric", "agent-run-success", "--model", "openai/loopback",
        "--api-base", api_base, "--variants", "1", "--db", str(tmp / "j.db"),
        str(tmp / "gold.jsonl"),
    ]  # fmt: skip


def _score(tmp: Path, api_base: str) -> list[str]:
    return [
        "score", str(tmp / "runs.jsonl"), "--rubric", "agent-run-success",
        "--model", "openai/loopback", "--api-base", api_base, "--variants", "1",
        "--db", str(tmp / "j.db"), "--out-dir", str(tmp / "report"), "--quiet",
        "--n-boot", "200", "--no-charts",
    ]  # fmt: skip


def _diagnose(tmp: Path, api_base: str) -> list[str]:
    return [
        "diagnose", str(tmp / "gold.jsonl"), "--model", "openai/loopback", "--api-base",
        api_base, "--db", str(tmp / "j.db"), "--format", "jsonl", "--quiet",
    ]  # fmt: skip


def _probe(tmp: Path, api_base: str) -> list[str]:
    return [
        "probe", str(tmp / "gold.jsonl"), "--rubric", "agent-run-success",
        "--model", "openai/loopback", "--api-base", api_base, "--variants", "1",
        "--orders", "one", "--probe", "evidence-neglect", "--out", str(tmp / "probes"), "--quiet",
    ]  # fmt: skip


def _check(tmp: Path, api_base: str) -> list[str]:
    return ["check", str(tmp / "gold.jsonl"), "--format", "jsonl"]


def _failures(tmp: Path, api_base: str) -> list[str]:
    # Without --name: the recorded runs are clustered with no model.
    return ["failures", str(tmp / "who-and-when"), "--db", str(tmp / "j.db"), "--format", "jsonl"]


@dataclass(frozen=True)
class Command:
    """A judging command as the test runs it."""

    name: str
    arguments: Arguments
    #: The exit codes that mean it finished.
    finished: frozenset[int] = frozenset({0})
    #: It calls the judge (the loopback server must have been asked).
    calls_model: bool = True
    #: It builds a safety scanner (so Hyperscan compiles and caches a database).
    scans: bool = True


#: Every judging command. Add a new judging command here and it is run the same way.
COMMANDS: list[Command] = [
    Command("run", _run),
    Command("score", _score),
    # 4: the judge failed a probe (the reports are written either way).
    Command("probe", _probe, frozenset({0, 4})),
    Command("diagnose", _diagnose),
    # The deterministic checks: no model, but the cases they read are scanned.
    Command("check", _check, calls_model=False),
    # Clustering recorded runs asks no model and builds no scanner.
    Command("failures", _failures, calls_model=False, scans=False),
]


def _write_inputs(tmp: Path) -> None:
    """``gold.jsonl`` (the first cases of the demo gold set), ``runs.jsonl`` (the small run
    set) and ``who-and-when/`` (two recorded failed runs in the Who&When format), every trace
    turn ending in :data:`NOT_ASCII`."""

    def mark(case: dict[str, Any]) -> dict[str, Any]:
        for turn in case["trace"]:
            turn["content"] += NOT_ASCII
        return case

    gold = (REPO / "gold" / "demo.jsonl").read_text("utf-8").splitlines()[:N_CASES]
    runs = (DATA / "runsets" / "small.jsonl").read_text("utf-8").splitlines()
    marked_runs = []
    for line in runs:
        record = json.loads(line)
        if record.get("case"):  # (a run that ended in an infrastructure error has none)
            mark(record["case"])
        marked_runs.append(record)
    for name, records in (
        ("gold.jsonl", [mark(json.loads(line)) for line in gold]),
        ("runs.jsonl", marked_runs),
    ):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        (tmp / name).write_text(text, "utf-8")
    recorded = json.loads((DATA / "traces" / "who-and-when" / "1.json").read_text("utf-8"))
    for turn in recorded["history"]:
        turn["content"] += NOT_ASCII
    (tmp / "who-and-when").mkdir()
    for i in (1, 2):
        recorded["question_ID"] = f"synthetic-{i}"
        text = json.dumps(recorded, ensure_ascii=False)
        (tmp / "who-and-when" / f"{i}.json").write_text(text, "utf-8")


def _backend(name: str) -> Any:
    marks = []
    if name == "hyperscan":
        try:
            import hyperscan  # noqa: F401
        except ImportError:
            marks.append(pytest.mark.skip(reason="the fast extra (Hyperscan) is not installed"))
    return pytest.param(name, marks=marks, id=name)


def _answer(request: dict[str, Any]) -> Reply:
    """A judge that decides from the prompt: pass when a test run passed and none failed; a
    diagnosing prompt gets the first step as the first bad decision."""
    prompt = json.dumps(request.get("messages", []))
    if "first bad decision" in prompt:
        report = {"verdict": "located", "critical_step": "E1", "evidence": ["E1"],
                  "rationale": "E1 went wrong"}  # fmt: skip
        return Reply(content=json.dumps(report))
    label = "pass" if " passed" in prompt and " failed" not in prompt else "fail"
    text = json.dumps({"verdict": label, "evidence": ["E1"], "rationale": "from the test run"})
    p_pass = 0.8 if label == "pass" else 0.2
    return Reply(content=text, logprobs=logprobs_for(text, {"pass": p_pass, "fail": 1 - p_pass}))


@pytest.mark.slow
@pytest.mark.parametrize("backend", [_backend("hyperscan"), _backend("python")])
@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_a_judging_command_finishes_in_a_fresh_process_with_an_empty_scan_cache(
    tmp_path: Path, backend: str, command: Command
) -> None:
    _write_inputs(tmp_path)
    cache = tmp_path / "scan-cache"
    cache.mkdir()
    env = {
        **os.environ,
        BACKEND_ENV: backend,
        CACHE_ENV: str(cache),
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("JUDGE_DB", None)
    with LoopbackServer(_answer) as server:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "judge", *command.arguments(tmp_path, server.api_base)],
                capture_output=True,
                text=True,
                timeout=DEADLINE_S,
                env=env,
                cwd=tmp_path,
            )
        except subprocess.TimeoutExpired as expired:
            pytest.fail(
                f"`judge {command.name}` ({backend} scan) did not finish in {DEADLINE_S} s "
                f"(a deadlock?); its stderr:\n{expired.stderr!r}"
            )
        called = bool(server.requests)
    assert called == command.calls_model, f"`judge {command.name}`: model called: {called}"
    assert proc.returncode in command.finished, (proc.returncode, proc.stdout, proc.stderr)
    # The scanners were compiled in this process: Hyperscan cached its databases where told.
    compiled = sorted(cache.glob("scan-*.hsdb"))
    assert bool(compiled) == (backend == "hyperscan" and command.scans), compiled
