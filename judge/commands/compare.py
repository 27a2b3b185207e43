"""``judge compare``: judges on the same items, with paired differences, McNemar and agreement.

The options are parsed into ``calibration.options.CompareOptions``, whose fields give their
defaults, help and choices; the work is ``judge.carding.compare_judges``.
"""

from __future__ import annotations

import click

import judge.carding
from calibration.options import CompareOptions
from judge.commands.options import compare_option, env_db, file_option, gold_option


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@file_option("--recorded", help="JSONL of recorded verdicts.")
@file_option("--judgments", help="JSONL of judgments.")
@click.option(
    "--db",
    help="Judge store: a SQLite file or a postgresql:// URL (default $JUDGE_DB "
    "when neither --judgments nor --recorded is given).",
)
@gold_option("Gold JSONL (default: gold carried by the rows).")
@click.option("--rubric", help="Only judgments of this rubric (ID or ID@VERSION).")
@compare_option(
    "judges", "--judge", multiple=True, help="Judges to compare (repeat; default: all)."
)
@compare_option("all_pairs", is_flag=True)
@compare_option("failures")
@compare_option("n_boot", type=int)
@compare_option("seed", type=int)
@file_option("--html", "html_out", help="Write a self-contained HTML report.")
@file_option("--json", "json_out", help="Write the full study as JSON.")
def compare(
    recorded: str | None,
    judgments: str | None,
    db: str | None,
    gold_path: str | None,
    rubric: str | None,
    html_out: str | None,
    json_out: str | None,
    **options: object,
) -> None:
    """Compare judges on the same items: paired differences, McNemar, agreement."""
    study = judge.carding.compare_judges(
        db=db or (None if judgments or recorded else env_db()),
        judgments=judgments,
        recorded=recorded,
        rubric=rubric,
        options=CompareOptions.model_validate(options),
        gold=gold_path,
        html=html_out,
        json_out=json_out,
    )
    click.echo(study.to_table(), nl=False)
    if html_out:
        click.echo(f"report: {html_out}")
    if json_out:
        click.echo(f"json: {json_out}")
