"""``judge probe`` from the command line: a dry run, and a run against a loopback judge that
writes the reports and the card's probes section."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calibration.card import load_card, write_card
from judge.cli import cli
from judge.errors import InputError
from judge.testing.biased import JUDGES, responder
from judge.testing.loopback import LoopbackServer
from tests.judge.probes.test_workflow import BUDGET, gold_file, runs
from tests.review_fixtures import make_card


def test_dry_run_lists_where_each_probe_applies(tmp_path: Path) -> None:
    cases, labels = runs()
    gold = gold_file(tmp_path / "g.jsonl", cases, labels)
    out = CliRunner().invoke(
        cli,
        [
            "probe",
            str(gold),
            "--rubric",
            "agent-run-success@2",
            "--model",
            "openai/x",
            "--out",
            str(tmp_path / "o"),
            "--dry-run",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "8 cases, 4 passing" in out.output
    assert "test-run-removed         degradation applies to 4/4 passing = 1.00" in out.output
    assert (
        "order-swap" in out.output and "a pairwise probe; the case is agent_run (8)" in out.output
    )
    listed = CliRunner().invoke(
        cli, ["probe", str(gold), "--rubric", "x", "--model", "y", "--out", "o", "--list"]
    )
    assert "length-padding@v1" in listed.output


def test_a_probe_run_writes_reports_and_the_card_section(tmp_path: Path) -> None:
    cases, labels = runs()
    gold = gold_file(tmp_path / "g.jsonl", cases, labels)
    card_path = tmp_path / "card.yaml"
    write_card(make_card(model="openai/final-message"), card_path)
    with LoopbackServer(responder(JUDGES)) as server:
        out = CliRunner().invoke(
            cli,
            [
                "probe",
                str(gold),
                "--rubric",
                "agent-run-success@2",
                "--model",
                "openai/final-message",
                "--out",
                str(tmp_path / "o"),
                "--api-base",
                server.api_base,
                "--variants",
                "1",
                "--token-budget",
                str(BUDGET),
                "--card",
                str(card_path),
                "--quiet",
                "--probe",
                "evidence-neglect",
                "--probe",
                "self-family",
            ],
        )
    assert out.exit_code == 4, out.output  # a probe failed
    assert "fails: evidence-neglect" in out.output
    entries = json.loads((tmp_path / "o" / "probes.json").read_text())
    assert [e["name"] for e in entries] == ["evidence-neglect", "self-family"]
    assert (tmp_path / "o" / "probes.db").exists()
    card = load_card(tmp_path / "o" / "card.yaml")
    assert card.probes is not None and card.probes.failed == ["evidence-neglect"]
    # A card for another judge is refused.
    refused = CliRunner().invoke(
        cli,
        [
            "probe",
            str(gold),
            "--rubric",
            "agent-run-success@2",
            "--model",
            "openai/fair",
            "--out",
            str(tmp_path / "p"),
            "--card",
            str(card_path),
        ],
    )
    assert isinstance(refused.exception, InputError)  # `judge` exits 2 on it
    assert "the card is for 'openai/final-message'" in str(refused.exception)
