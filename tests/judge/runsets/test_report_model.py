"""The typed run-set report: report.json is the model's dump and reads back strictly, the HTML
template escapes what the runs name, judging cost comes from the judgments' recorded usage, and
the pass^k chart keeps curves at 0 and at 1 inside its frame."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration.plots import pyplot
from judge.cli import cli
from judge.errors import InputError
from judge.runsets import (
    ReportContext,
    RunSetReport,
    ScoredRun,
    build_report,
    judging_cost,
    load_report,
    pass_k_curves_svg,
    pass_k_figure,
    render_html,
    render_markdown,
)
from judge.runsets.report import cost_section
from tests.conftest import DATA

SMALL = DATA / "runsets" / "small.jsonl"


def _run(treatment: str, task: int, rep: int, outcome: str) -> ScoredRun:
    return ScoredRun(
        run_id=f"{treatment}-{task}-{rep}",
        task_id=f"t{task}",
        treatment=treatment,
        benchmark="b",
        repetition=rep,
        agent_model=None,
        status="completed",
        outcome=outcome,
        source="gold",
        route="gold",
    )


def _report(runs: Sequence[ScoredRun], mode: str = "gold") -> RunSetReport:
    ctx = ReportContext(runset="runs.jsonl", mode="gold" if mode == "gold" else "judge", n_boot=50)
    return build_report(runs, ctx)


@pytest.fixture(scope="module")
def gold_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gold")
    result = CliRunner().invoke(
        cli,
        [
            "score",
            str(SMALL),
            "--gold-labels",
            "--out-dir",
            str(out),
            "--n-boot",
            "50",
            "--no-charts",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return out / "report.json"


def test_report_json_is_the_model_dump_and_reads_back(gold_json: Path) -> None:
    data = json.loads(gold_json.read_text())
    report = load_report(gold_json)
    assert report.model_dump(mode="json") == data
    # Keys that are no Python names stay what they were in the JSON.
    assert {"pass@k", "pass^k"} <= set(data["per_treatment"]["base"]["macro"])
    assert "1" in data["per_treatment"]["base"]["tasks"][0]["pass^k"]
    # No correction asked for: no "corrected" key at all (as before the typed report).
    assert "corrected" not in data["per_treatment"]["base"]
    # Scored from gold labels (no store): no first bad decisions either.
    assert "first_bad_decisions" not in data


def test_a_report_with_an_unknown_field_is_refused_naming_it(
    gold_json: Path, tmp_path: Path
) -> None:
    data = json.loads(gold_json.read_text())
    data["per_treatment"]["base"]["counts"]["bogus"] = 1
    bad = tmp_path / "report.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match="not a run-set report") as info:
        load_report(bad)
    assert info.value.field == "per_treatment.base.counts.bogus"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="cannot read the report"):
        load_report(bad)


def test_html_escapes_what_the_runs_name_and_markdown_keeps_it() -> None:
    name = "<b>A</b> & co"
    report = _report([_run(name, 0, 0, "pass"), _run(name, 0, 1, "fail")])
    page = render_html(report, charts=False)
    assert "&lt;b&gt;A&lt;/b&gt; &amp; co" in page and "<b>A</b>" not in page
    assert "| <b>A</b> & co | all |" in render_markdown(report)


# --- judging cost ------------------------------------------------------------------------------


def _judged(cost: float | None, tokens: int, judgments: int = 1) -> ScoredRun:
    return ScoredRun(
        run_id=f"r{tokens}",
        task_id="t",
        treatment="A",
        benchmark="b",
        repetition=tokens,
        agent_model=None,
        status="completed",
        outcome="pass",
        source="judge:m",
        judge_cost_usd=cost,
        judge_tokens=tokens,
        judgment_ids=[f"j{tokens}-{i}" for i in range(judgments)],
        judge_priced=judgments if cost is not None else 0,
    )


def test_judging_cost_says_what_the_judgments_recorded() -> None:
    def text(*runs: ScoredRun) -> str:
        return judging_cost(cost_section(runs, 1.0), "judge")

    # both priced: $0.01 + $0.02, 100 + 200 tokens
    assert text(_judged(0.01, 100), _judged(0.02, 200)) == "$0.03 (300 tokens)"
    # one priced, one not: the sum of the known cost, and how many it covers
    assert text(_judged(0.01, 100), _judged(None, 200)) == (
        "$0.01 for 1 of 2 judgments (300 tokens)"
    )
    # tokens returned, no price (a self-hosted or unknown model): the tokens, never "—"
    assert text(_judged(None, 1200, 2), _judged(None, 34)) == "1,234 tokens (not priced)"
    # an embedded model costs nothing, and says so
    assert text(_judged(0.0, 500)) == "$0 (500 tokens)"
    # judgments without any recorded usage: only then "unknown"
    assert text(_judged(None, 0)) == "unknown"
    assert judging_cost(cost_section([_judged(None, 0)], 1.0), "gold") == "—"


# --- the pass^k chart ----------------------------------------------------------------------------


def test_curves_at_one_and_at_zero_are_drawn_inside_the_frame() -> None:
    # "all" passes every run of 3 tasks x 3 repetitions: pass@k = pass^k = 1 for k = 1..3;
    # "none" fails them all: 0 for every k. Both used to lie on the frame and vanish.
    runs = [_run("all", t, r, "pass") for t in range(3) for r in range(3)]
    runs += [_run("none", t, r, "fail") for t in range(3) for r in range(3)]
    report = _report(runs)
    fig = pass_k_figure(report)
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    curves = [c.lines[0] for c in ax.containers]  # the data line of each errorbar
    assert len(curves) == 4  # 2 treatments x (pass@k, pass^k)
    values = set()
    for line in curves:
        ys = list(line.get_ydata())
        values.update(ys)
        assert all(low < y < high for y in ys), (low, high, ys)
        assert line.get_marker() not in (None, "", " ", "None") and line.get_markersize() > 0
    assert values == {0.0, 1.0}
    # pass@k and pass^k coincide here: different markers keep both visible
    assert len({line.get_marker() for line in curves}) == 2
    pyplot().close(fig)
    assert pass_k_curves_svg(report).startswith("<svg")
