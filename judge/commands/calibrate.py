"""``judge calibrate``: measure a judge against gold, write its calibration card and report.

The options are parsed into ``calibration.options.CalibrationOptions``, whose fields give
their defaults, most of their help and their choices (so ``judge calibrate --help`` imports
that module); the work is ``judge.carding.calibrate``, reached through the public API's
lazy map (``judge.calibrate``) so that the help loads none of the workflow: numpy, scipy,
sklearn and matplotlib are imported only when the command runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import get_args

import click

import judge
import judge.store
from calibration.options import CalibrationOptions, Kind
from judge.commands.options import calibration_option, env_db, file_option, gold_option
from judge.errors import InputError

#: ``--calibrator``: none, or a calibrator of ``calibration.confidence.CALIBRATORS`` (a registry,
#: not a Literal, and loading it would slow ``judge calibrate --help``: the choices of the other
#: options come from their Literals; tests/judge/commands/test_options.py holds these equal).
CALIBRATORS = ("none", "platt", "isotonic")
#: ``--kind fbd`` without --rubric: judge.diagnosis.DEFAULT_FBD_RUBRIC (held equal by a test).
FBD_RUBRIC = "first-bad-decision@1"
#: ``--kind`` choices beyond the verdict kinds of CalibrationOptions: step scores (a
#: first-bad-decision card, judge.diagnosis.calibrate_steps).
STEP_KINDS = ("fbd",)


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
@gold_option("Gold JSONL; default: the gold labels the verdict rows carry.")
@click.option(
    "--db",
    help="Judge store to read judgments from: a SQLite file or a postgresql:// URL "
    "(default $JUDGE_DB when neither --judgments nor --recorded is given).",
)
@file_option("--judgments", help="JSONL of judgments (or of recorded verdicts).")
@file_option("--recorded", help="JSONL of recorded verdicts (../shared/judgments format).")
@calibration_option(
    "judges",
    "--judge",
    multiple=True,
    help="Judge (model) name; repeat for --cascade (cheapest first) or --panel.",
)
@click.option("--rubric", help="Only judgments of this rubric (ID or ID@VERSION).")
@click.option("--selector", help="Only judgments made with this evidence selector version.")
@calibration_option(
    "kind",
    type=click.Choice([*get_args(Kind), *STEP_KINDS]),
    help="Rubric kind; default: from the labels. fbd: a first-bad-decision card from step "
    "scores (--recorded, or --db with --gold and --judge); its step set misses people's "
    "critical step with probability at most --alpha-accept.",
)
@calibration_option("alpha_accept", type=float)
@calibration_option(
    "alpha_reject",
    type=float,
    help="Max P(gold=pass | auto-rejected) (binary; default: --alpha-accept).",
)
@calibration_option("delta", type=float)
@calibration_option("grid")
@calibration_option("starts", "--start", type=int, multiple=True)
@calibration_option("start_shares", "--start-share", type=float, multiple=True)
@calibration_option("test")
@calibration_option("slice_key", "--slice")
@calibration_option("correction")
@calibration_option("calibrator", type=click.Choice(CALIBRATORS))
@calibration_option("calibration_split", type=float)
@calibration_option(
    "cascade", is_flag=True, help="Treat the --judge list as a cascade, cheapest first."
)
@calibration_option("cascade_mode")
@click.option(
    "--cost",
    "costs",
    multiple=True,
    help="NAME=COST per item for cascades (default: recorded cost).",
)
@calibration_option(
    "panel",
    is_flag=True,
    help="Combine the --judge list (default: every judge present) into one panel score, "
    "by --panel-rule.",
)
@calibration_option("panel_rule")
@calibration_option("split_study", type=int)
@calibration_option("seed", type=int)
@calibration_option("n_boot", type=int)
@calibration_option("valid_days", type=int)
@file_option("--out", help="Card path (default: <judge>.card.yaml).")
@file_option("--report", help="Write a self-contained HTML report here.")
@file_option(
    "--plan",
    help="The label plan the gold was drawn by (`judge review plan --for-card --out`): bands "
    "certified on its labels, with its scan, covering a share of its pool (the verdicts).",
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
    plan: str | None,
    **options: object,
) -> None:
    """Measure a judge against gold and write a calibration card and report."""
    if options.get("kind") == "fbd":
        _calibrate_steps(gold_path, db, recorded, rubric, out, options)
        return
    opts = CalibrationOptions.model_validate({**options, "costs": parse_costs(costs)})
    # judge.carding.calibrate, loaded on first use (see the module's docstring).
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
        plan=plan,
    )
    for line in run.result.lines():
        click.echo(line)
    click.echo(f"card: {run.card_path} ({run.card_digest})")
    if report:
        click.echo(f"report: {report}")


def _calibrate_steps(
    gold: str | None,
    db: str | None,
    recorded: str | None,
    rubric: str | None,
    out: str | None,
    options: dict[str, object],
) -> None:
    """``--kind fbd``: a first-bad-decision card (judge.diagnosis.calibrate_steps)."""
    judges = options.get("judges") or ()
    assert isinstance(judges, tuple)
    alpha = options.get("alpha_accept")
    valid_days = options.get("valid_days")
    with contextlib.ExitStack() as stack:
        store = (
            stack.enter_context(judge.store.open_store(db or env_db() or ""))
            if recorded is None and (db or env_db())
            else None
        )
        # judge.diagnosis.calibrate_steps, loaded on first use like judge.calibrate.
        run = judge.calibrate_steps(
            alpha=float(alpha) if isinstance(alpha, int | float) else 0.1,
            recorded=recorded,
            store=store,
            gold=gold,
            judge=str(judges[0]) if judges else None,
            rubric=rubric or FBD_RUBRIC,
            out=out,
            valid_days=int(valid_days) if isinstance(valid_days, int) else None,
        )
    for line in run.lines():
        click.echo(line)
    click.echo(f"card: {run.path} ({run.card.card_digest})")
