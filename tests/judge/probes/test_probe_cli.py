"""``judge probe`` from the command line: a dry run, and a run against a loopback judge that
writes the reports and the card's probes section."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration.card import load_card, write_card
from judge.cli import cli
from judge.errors import InputError
from judge.probes.report import _error_bar
from judge.testing.biased import JUDGES, Decision, PromptView, responder
from judge.testing.loopback import LoopbackServer
from judge.types import Case
from tests.judge.probes.runs import run
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


def probe_command(
    gold: Path, model: str, out: Path, server: LoopbackServer, card: Path
) -> list[str]:
    """``judge probe`` of agent-run-success@2 against a loopback judge, writing the reports
    into ``out`` and the probes section into a copy of ``card``."""
    return [
        "probe",
        str(gold),
        "--rubric",
        "agent-run-success@2",
        "--model",
        model,
        "--out",
        str(out),
        "--api-base",
        server.api_base,
        "--variants",
        "1",
        "--token-budget",
        str(BUDGET),
        "--card",
        str(card),
        "--quiet",
    ]


def test_a_probe_run_writes_reports_and_the_card_section(tmp_path: Path) -> None:
    cases, labels = runs()
    gold = gold_file(tmp_path / "g.jsonl", cases, labels)
    card_path = tmp_path / "card.yaml"
    write_card(make_card(model="openai/final-message"), card_path)
    with LoopbackServer(responder(JUDGES)) as server:
        out = CliRunner().invoke(
            cli,
            probe_command(gold, "openai/final-message", tmp_path / "o", server, card_path)
            + ["--probe", "evidence-neglect", "--probe", "self-family"],
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


#: Judges that give one verdict to everything: the degenerate judges probes exist to catch.
#: Their rates sit at 0 or 1, where a Wilson interval's end once missed the rate by a rounding
#: error (at a rate of 1 on 28 cases its upper end was 0.9999999999999998, at 0 on 14 its lower
#: end 1.4e-17) and the plot's error bars came out negative; the ends are now exact.
CONSTANT: dict[str, Callable[[PromptView], Decision]] = {
    "always-pass": lambda view: ("pass", "looks done"),
    "always-fail": lambda view: ("fail", "not shown to work"),
}
N_DEGENERATE = 28


def constant_runs() -> tuple[list[Case], dict[str, str]]:
    """28 runs, each its own task: 14 passing (what degradations apply to), 14 failing."""
    cases, labels = [], {}
    for i in range(N_DEGENERATE):
        case = run(i, passing=i % 2 == 0, reads=1 + i % 3, task_id=f"t{i}")
        cases.append(case)
        labels[case.id] = "pass" if i % 2 == 0 else "fail"
    return cases, labels


def test_error_bars_are_never_negative() -> None:
    # An interval that misses its value by a rounding error (as Wilson's ends at 0 and 1 once
    # did; a mean can also fall outside its percentile interval): that distance is 0.
    assert _error_bar(1.0, (0.75, 0.9999999999999998)) == [[0.25], [0.0]]
    assert _error_bar(0.0, (1.4e-17, 0.5)) == [[0.0], [0.5]]


@pytest.mark.parametrize("name", sorted(CONSTANT))
def test_a_judge_with_one_verdict_gets_its_reports_plot_and_card_section(
    name: str, tmp_path: Path
) -> None:
    cases, labels = constant_runs()
    gold = gold_file(tmp_path / "g.jsonl", cases, labels)
    card_path = tmp_path / "card.yaml"
    write_card(make_card(model=f"openai/{name}"), card_path)
    with LoopbackServer(responder(CONSTANT)) as server:
        out = CliRunner().invoke(
            cli, probe_command(gold, f"openai/{name}", tmp_path / "o", server, card_path)
        )
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    entries = json.loads((tmp_path / "o" / "probes.json").read_text())
    rates = [e["as_expected"] for e in entries if e["as_expected"]["rate"] is not None]
    # The case the plot used to crash on: rates at 0 or 1; each now ends its own interval.
    assert any(r["rate"] in (0.0, 1.0) for r in rates)
    assert all(r["ci95"][0] <= r["rate"] <= r["ci95"][1] for r in rates)
    assert all(r["ci95"][0] == 0.0 for r in rates if r["rate"] == 0.0)
    assert all(r["ci95"][1] == 1.0 for r in rates if r["rate"] == 1.0)
    if name == "always-pass":
        # It passes every original and every perturbation: each degradation fails.
        degradations = [e for e in entries if e["kind"] == "degradation"]
        assert degradations and all(e["as_expected"]["rate"] == 0.0 for e in degradations)
        assert all(e["status"] == "fail" for e in degradations)
        assert out.exit_code == 4, out.output
    else:
        # It passes nothing: no degradation has an original to degrade, and no probe fails.
        assert all(e["status"] == "no data" for e in entries if e["kind"] == "degradation")
        assert out.exit_code == 0, out.output
    invariances = [e for e in entries if e["kind"] == "invariance" and e["as_expected"]["n"]]
    assert invariances and all(e["as_expected"]["rate"] == 1.0 for e in invariances)
    folder = tmp_path / "o"
    for report in ("probes.md", "probes.html", "probes.png"):
        assert (folder / report).stat().st_size > 0
    assert (folder / "probes.png").read_bytes().startswith(b"\x89PNG")
    card = load_card(folder / "card.yaml")
    assert card.probes is not None
    assert [p.name for p in card.probes.probes] == [e["name"] for e in entries]
