"""``judge diagnose``, ``judge calibrate --kind fbd`` and ``judge route`` on a first-bad-decision
card, as a user runs them: recorded step scores, imported Who&When-format runs, a loopback judge."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import cli
from judge.commands.calibrate import FBD_RUBRIC
from judge.diagnosis import DEFAULT_FBD_RUBRIC
from judge.testing.loopback import LoopbackServer, Reply


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _recorded(path: Path, n: int = 60, seed: int = 0) -> Path:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        steps = rng.randint(4, 12)
        gold = rng.randrange(steps)
        scores = {str(j): round(rng.random() * 0.5, 3) for j in range(steps)}
        scores[str(gold)] = round(min(1.0, float(scores[str(gold)]) + 0.5), 3)
        lines.append(
            json.dumps(
                {
                    "item_id": f"run-{i}",
                    "judge": "j",
                    "n_steps": steps,
                    "step_scores": scores,
                    "gold_step": gold,
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_default_rubric_is_declared_once() -> None:
    assert FBD_RUBRIC == DEFAULT_FBD_RUBRIC


def test_calibrate_and_route_recorded_step_scores(tmp_path: Path) -> None:
    scores = _recorded(tmp_path / "steps.jsonl")
    card = tmp_path / "fbd.yaml"
    result = _invoke(
        [
            "calibrate",
            "--recorded",
            str(scores),
            "--kind",
            "fbd",
            "--alpha-accept",
            "0.2",
            "--out",
            str(card),
        ]
    )
    assert result.exit_code == 0, result.output
    assert "within 1" in result.output and "split conformal" in result.output
    routed = _invoke(["route", "--card", str(card), "--recorded", str(scores), "--format", "jsonl"])
    assert routed.exit_code == 0, routed.output
    lines = [json.loads(line) for line in routed.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 60
    assert {tuple(sorted(x)) for x in lines} == {("decision", "item_id", "step_set")}
    assert all(x["decision"] in ("located", "review") for x in lines)
    assert all((x["decision"] == "located") == (len(x["step_set"]) == 1) for x in lines)


def test_calibrate_refuses_a_gold_step_out_of_range(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"item_id": "a", "judge": "j", "n_steps": 3, "step_scores": {}, "gold_step": 7})
        + "\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        cli, ["calibrate", "--recorded", str(bad), "--kind", "fbd", "--out", str(tmp_path / "c")]
    )
    assert result.exit_code != 0
    said = str(result.exception)
    assert "bad.jsonl:1" in said and "gold_step" in said and "out of range" in said


def _who(folder: Path, n: int = 3) -> Path:
    folder.mkdir()
    for i in range(1, n + 1):
        run = {
            "is_correct": False,
            "question": f"Question {i}?",
            "history": [
                {"content": "Plan the search.", "role": "assistant", "name": "Planner"},
                {"content": "exitcode: 0\nresults", "role": "user", "name": "Computer_terminal"},
                {"content": "The answer is 3.", "role": "user", "name": "Verifier"},
            ],
            "mistake_agent": "Verifier",
            "mistake_step": "2",
        }
        (folder / f"{i}.json").write_text(json.dumps(run), encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_import_diagnose_calibrate_route(tmp_path: Path) -> None:
    runs = _who(tmp_path / "ww")
    cases = tmp_path / "cases.jsonl"
    imported = _invoke(["import", str(runs), "--format", "who-and-when", "--out", str(cases)])
    assert imported.exit_code == 0, imported.output
    records = [json.loads(line) for line in cases.read_text().splitlines()]
    assert [(r["gold"], r["critical_step"], r["critical_agent"]) for r in records] == [
        ("fail", 2, "Verifier")
    ] * 3
    answer = json.dumps(
        {
            "verdict": "located",
            "critical_step": "E3",
            "evidence": ["E3"],
            "violated_invariant": "verify-before-claiming-success",
            "owner": "model",
            "rationale": "E3 answers without checking.",
        }
    )
    db = tmp_path / "d.db"
    with LoopbackServer(lambda r: Reply(content=answer)) as server:
        base = ["--model", "openai/diag", "--api-base", server.api_base, "--db", str(db)]
        out = _invoke(["diagnose", str(cases), *base, "--format", "jsonl", "--quiet"])
        assert out.exit_code == 0, out.output
        lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
        assert [
            (x["status"], x["critical_step"], x["step_index"], x["fbd_status"]) for x in lines
        ] == [("ok", "E3", 2, "tentative")] * 3
        card = tmp_path / "fbd.yaml"
        cal = _invoke(
            [
                "calibrate",
                "--kind",
                "fbd",
                "--db",
                str(db),
                "--gold",
                str(cases),
                "--judge",
                "openai/diag",
                "--alpha-accept",
                "0.3",
                "--out",
                str(card),
            ]
        )
        assert cal.exit_code == 0, cal.output
        assert "exact 1.000" in cal.output
        routed = _invoke(["route", "--card", str(card), "--db", str(db), "--format", "jsonl"])
        assert routed.exit_code == 0, routed.output
        decisions = [json.loads(x) for x in routed.stdout.splitlines() if x.startswith("{")]
        assert len(decisions) == 3
        yaml_out = _invoke(["diagnose", str(cases), *base, "--format", "yaml", "--card", str(card)])
        assert "failure_id: who-and-when/1" in yaml_out.stdout
        assert "fbd_status: tentative" in yaml_out.stdout


def test_a_passed_run_is_skipped_with_its_reason(tmp_path: Path) -> None:
    cases = tmp_path / "c.jsonl"
    case = {
        "id": "ok-run",
        "kind": "agent_run",
        "task": "t",
        "gold": "pass",
        "trace": [{"id": "a", "role": "assistant", "content": "done"}],
    }
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    with LoopbackServer(lambda r: Reply(content="{}")) as server:
        out = CliRunner().invoke(
            cli,
            [
                "diagnose",
                str(cases),
                "--model",
                "openai/diag",
                "--api-base",
                server.api_base,
                "--db",
                str(tmp_path / "d.db"),
                "--format",
                "jsonl",
            ],
        )
        assert server.requests == []
    assert out.exit_code == 0
    assert "skipped ok-run: the run passed" in out.output
