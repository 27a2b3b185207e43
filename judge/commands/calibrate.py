"""``judge calibrate``: measure a judge against gold, write its calibration card and report.

The options are parsed into ``calibration.workflow.CalibrationOptions``; the work is
``judge.calibrate``. numpy, scipy, sklearn and matplotlib are imported only
when the command runs, so ``judge calibrate --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

import judge
from judge.commands.options import env_db
from judge.defaults import DEFAULT_GRID
from judge.errors import InputError


def parse_costs(costs: Sequence[str]) -> dict[str, float]:
    """``NAME=COST`` pairs (a name may itself hold "=": the last one splits)."""
    out = {}
    for text in costs:
        name, sep, value = text.rpartition("=")
        try:
            out[name] = float(value)
        except ValueError:
            name = ""
        if not sep or not name:
            raise InputError(f"--cost wants NAME=VALUE, got {text!r}", field="cost")
    return out


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--gold",
    "gold_path",
    type=click.Path(dir_okay=False),
    help="Gold JSONL; default: the gold labels the verdict rows carry.",
)
@click.option(
    "--db",
    help="Judge store to read judgments from: a SQLite file or a postgresql:// URL "
    "(default $JUDGE_DB when neither --judgments nor --recorded is given).",
)
@click.option(
    "--judgments",
    type=click.Path(dir_okay=False),
    help="JSONL of judgments (or of recorded verdicts).",
)
@click.option(
    "--recorded",
    type=click.Path(dir_okay=False),
    help="JSONL of recorded verdicts (../shared/judgments format).",
)
@click.option(
    "--judge",
    "judges",
    multiple=True,
    help="Judge (model) name; repeat for --cascade (cheapest first) or --panel.",
)
@click.option("--rubric", help="Only judgments of this rubric (ID or ID@VERSION).")
@click.option("--selector", help="Only judgments made with this evidence selector version.")
@click.option(
    "--kind",
    type=click.Choice(["binary", "pairwise"]),
    help="Rubric kind; default: from the labels.",
)
@click.option(
    "--alpha-accept",
    type=float,
    default=0.15,
    show_default=True,
    help="Max P(gold=fail | auto-accepted); pairwise: max P(wrong | decided).",
)
@click.option(
    "--alpha-reject",
    type=float,
    default=None,
    help="Max P(gold=pass | auto-rejected) (binary; default: --alpha-accept).",
)
@click.option(
    "--delta",
    type=float,
    default=0.1,
    show_default=True,
    help="The guarantee holds with probability >= 1 - delta.",
)
@click.option(
    "--grid",
    default=DEFAULT_GRID,
    show_default=True,
    help="Thresholds fixed before labels: levels:N | coverage:STEP | items | fixed:T1,T2,...",
)
@click.option(
    "--start",
    "starts",
    type=int,
    multiple=True,
    help="Starting point(s) in items (each raised to max(30, n0)); several split delta.",
)
@click.option("--slice", "slice_key", help="Certify each value of this slice key on its own gold.")
@click.option(
    "--correction", type=click.Choice(["holm", "bonferroni"]), default="holm", show_default=True
)
@click.option(
    "--calibrator",
    type=click.Choice(["none", "platt", "isotonic"]),
    default="none",
    show_default=True,
    help="Fit on a cluster split kept apart from threshold picking.",
)
@click.option(
    "--calibration-split",
    type=float,
    default=0.5,
    show_default=True,
    help="Share of task clusters the calibrator is fitted on.",
)
@click.option(
    "--cascade", is_flag=True, help="Treat the --judge list as a cascade, cheapest first."
)
@click.option(
    "--cascade-mode",
    type=click.Choice(["split", "shared"]),
    default="split",
    show_default=True,
    help="split: exact guarantee (disjoint gold per stage); shared: published, approximate.",
)
@click.option(
    "--cost",
    "costs",
    multiple=True,
    help="NAME=COST per item for cascades (default: recorded cost).",
)
@click.option(
    "--panel",
    is_flag=True,
    help="Pool the --judge list into one panel score (vote share or mean prob).",
)
@click.option(
    "--split-study",
    type=int,
    default=0,
    help="Also run N random half splits (calibrate on one, test on the other).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--n-boot",
    type=int,
    default=1000,
    show_default=True,
    help="Bootstrap replicates for metric intervals.",
)
@click.option(
    "--valid-days", type=int, default=90, show_default=True, help="Days until the card expires."
)
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Card path (default: <judge>.card.yaml)."
)
@click.option(
    "--report", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here."
)
def calibrate(
    gold_path: str | None,
    db: str | None,
    judgments: str | None,
    recorded: str | None,
    rubric: str | None,
    selector: str | None,
    costs: tuple[str, ...],
    out: str | None,
    report: str | None,
    **options: object,
) -> None:
    """Measure a judge against gold and write a calibration card and report."""
    opts = judge.CalibrationOptions.model_validate({**options, "costs": parse_costs(costs)})
    run = judge.calibrate(
        db=db or (None if judgments or recorded else env_db()),
        judgments=judgments,
        recorded=recorded,
        rubric=rubric,
        selector=selector,
        options=opts,
        gold=gold_path,
        out=out,
        report=report,
    )
    for line in run.result.lines():
        click.echo(line)
    click.echo(f"card: {run.card_path} ({run.card_digest})")
    if report:
        click.echo(f"report: {report}")
